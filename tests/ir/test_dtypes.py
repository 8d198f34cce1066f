import numpy as np
import pytest
import torch

from tilelang.ir.dtypes import as_dtype, promote, numpy_dtype
import tilelang.language as T


@pytest.mark.parametrize("spec,name", [("float", "float32"), ("half", "float16"), (torch.bfloat16, "bfloat16"),
                                       (np.float32, "float32"), (T.float8_e4m3fn, "float8_e4m3fn"),
                                       ("float8_e5m2", "float8_e5m2"), (torch.int8, "int8")])
def test_normalise(spec, name):
    assert as_dtype(spec).name == name


def test_promotion():
    assert promote(T.float16, T.float32) is T.float32
    assert promote(T.int32, T.float16) is T.float16
    assert promote(T.int32, T.int64) is T.int64
    assert promote(T.float16, T.bfloat16) is T.float32


def test_numpy_mapping_of_narrow_types():
    assert numpy_dtype(T.bfloat16).itemsize == 2
    assert numpy_dtype(T.float8_e4m3fn).itemsize == 1


def test_unknown_dtype():
    with pytest.raises(ValueError):
        as_dtype("float13")


def test_dtype_call_builds_constants():
    c = T.float32(1.5)
    assert c.dtype is T.float32 and c.value == 1.5
