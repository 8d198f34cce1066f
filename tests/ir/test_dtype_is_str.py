"""A dtype is a `str` whose value is its canonical name (as the published dtype is),
so user code may pass `T.bfloat16` where a name is expected."""
import pickle

import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.ir.dtypes import DataType


def test_dtype_is_its_name():
    assert isinstance(T.bfloat16, str)
    assert str.__str__(T.bfloat16) == "bfloat16"
    assert getattr(torch, T.bfloat16) is torch.bfloat16
    assert getattr(torch, T.float8_e4m3fn) is torch.float8_e4m3fn
    assert f"{T.float16}" == "float16"


def test_equality_and_hashing_agree_with_names():
    assert T.float32 == "float32" and "float32" == T.float32
    assert T.float32 == "float" and T.float16 == "half"   # aliases still compare equal
    assert not (T.float16 != "half") and T.float16 != "float32"
    assert T.float16 != T.bfloat16
    d = {"float16": 1}
    assert d[T.float16] == 1
    assert {T.int32: 2}["int32"] == 2


def test_interned_through_pickle():
    assert pickle.loads(pickle.dumps(T.bfloat16)) is T.bfloat16
    assert DataType(T.float16) is T.float16


def test_dtype_annotation_of_a_scalar_parameter():
    # a DataType annotation is a str: it must not be evaluated as annotation source text
    @T.prim_func
    def f(A: T.Tensor((4,), "float32"), s: T.float32):
        with T.Kernel(1) as bx:
            for i in T.Parallel(4):
                A[i] = s

    k = tilelang.compile(f, target="cpu")
    a = np.zeros(4, np.float32)
    k(a, 3.0)
    np.testing.assert_array_equal(a, 3.0)


def test_unknown_name_still_rejected():
    with pytest.raises(ValueError):
        DataType("float7")
