"""`@T.macro` parameters annotated `T.Ref` are passed by reference."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T


@T.macro
def set_one(x: T.Ref):
    x = 1


@T.macro
def bump(x: T.Ref, by):
    x = x + by


def test_ref_parameters_write_back():
    @T.prim_func
    def k(A: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=1):
            v = T.alloc_var(T.int32)
            v = 5
            set_one(v)
            A[0] = v
            bump(A[1], 3)
            set_one(A[2])
    a = np.array([0, 10, 0, 0], "int32")
    tilelang.compile(k, target="cpu")(a)
    np.testing.assert_array_equal(a, [1, 13, 1, 0])


def test_a_value_given_to_a_ref_parameter_is_an_error():
    with pytest.raises(ValueError, match="argument `x` of macro `set_one` is a T.Ref"):
        @T.prim_func
        def k(A: T.Tensor((4,), "int32")):
            with T.Kernel(1, threads=1):
                x = 1
                set_one(x)


def test_strided_slice_is_a_located_error():
    with pytest.raises(RuntimeError, match="sliced with step 2") as e:
        @T.prim_func
        def k(A: T.Tensor((10,), "int32"), B: T.Tensor((5,), "int32")):
            with T.Kernel(1):
                B[0:5:2] = A[0:10:2]
    assert isinstance(e.value, ValueError) and str(e.value).startswith(__file__)
