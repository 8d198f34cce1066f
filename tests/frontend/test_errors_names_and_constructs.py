import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.errors import (DTypeMismatchError, UnknownNameError, UnsupportedConstructError,
                                TileLangError)


def _where(err):
    first = str(err).splitlines()[0]
    assert first.startswith(__file__ + ":")
    assert "^" in str(err)
    return int(first.split(":")[1])


def test_unknown_name():
    with pytest.raises(UnknownNameError, match="unknown name `undefined_tile`") as e:
        @T.prim_func
        def k(A: T.Tensor((64,), "float")):
            with T.Kernel(1) as bx:
                T.copy(undefined_tile, A)  # noqa: F821
    assert "check the spelling" in str(e.value)
    _where(e.value)


def test_unknown_T_attribute():
    with pytest.raises(TileLangError, match="alloc_sharde") as e:
        @T.prim_func
        def k(A: T.Tensor((64,), "float")):
            with T.Kernel(1) as bx:
                s = T.alloc_sharde((64,), "float")  # noqa: F841
    _where(e.value)


def test_try_is_unsupported():
    with pytest.raises(UnsupportedConstructError, match="try/except is not supported") as e:
        @T.prim_func
        def k(A: T.Tensor((64,), "float")):
            with T.Kernel(1) as bx:
                try:
                    A[0] = 1.0
                except ValueError:
                    pass
    _where(e.value)


def test_runtime_value_as_python_bool_in_helper():
    def helper(x):
        return 1 if x else 0  # not rewritten: plain Python helper

    with pytest.raises(TileLangError, match="compile-time bool"):
        @T.prim_func
        def k(A: T.Tensor((64,), "float")):
            with T.Kernel(2) as bx:
                A[helper(bx > 0)] = 1.0


def test_gemm_dtype_mismatch():
    with pytest.raises(DTypeMismatchError, match="A is float16, B is float32") as e:
        @T.prim_func
        def k(A: T.Tensor((16, 16), "float16")):
            with T.Kernel(1) as bx:
                a = T.alloc_shared((16, 16), "float16")
                b = T.alloc_shared((16, 16), "float32")
                c = T.alloc_fragment((16, 16), "float")
                T.gemm(a, b, c)
    _where(e.value)


def test_unknown_dtype():
    with pytest.raises(TileLangError, match="unknown dtype 'float17'") as e:
        @T.prim_func
        def k(A: T.Tensor((16,), "float16")):
            with T.Kernel(1) as bx:
                a = T.alloc_shared((16,), "float17")  # noqa: F841
    _where(e.value)


def test_missing_annotation():
    with pytest.raises(TileLangError, match="has no annotation"):
        @T.prim_func
        def k(A):
            pass


def test_alloc_outside_kernel_of_shared_is_fine_but_global_inside_is_not():
    with pytest.raises(TileLangError, match="outside `with T.Kernel") as e:
        @T.prim_func
        def k(A: T.Tensor((16,), "float16")):
            with T.Kernel(1) as bx:
                w = T.alloc_global((16,), "float")  # noqa: F841
    _where(e.value)


def test_jit_factory_error_is_clean():
    @tilelang.jit(out_idx=[-1], target="cpu")
    def make(n):
        @T.prim_func
        def k(A: T.Tensor((n,), "float"), B: T.Tensor((n,), "float")):
            with T.Kernel(1) as bx:
                s = T.alloc_shared((n + 1,), "float")
                T.copy(A, s)
        return k
    with pytest.raises(TileLangError) as e:
        make(8)
    assert str(e.value).splitlines()[0].startswith(__file__)
