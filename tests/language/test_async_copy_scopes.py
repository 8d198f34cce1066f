"""`T.async_copy` copies global -> shared (like T.copy here); other scopes are a
located error when the kernel compiles, as in the published package."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.errors import LoweringError


def _kernel(bad):
    @T.prim_func
    def k(A: T.Tensor((4,), "float16"), B: T.Tensor((4,), "float16")):
        with T.Kernel(1, threads=1):
            S0 = T.alloc_shared((4,), "float16")
            S1 = T.alloc_shared((4,), "float16")
            if bad:
                T.copy(A[0:4], S0)
                T.async_copy(S0, S1)
            else:
                T.async_copy(A[0:4], S1)
            T.copy(S1, B[0:4])
    return k


def test_shared_to_shared_is_rejected_at_compile_time():
    k = _kernel(True)   # defining the kernel is fine
    with pytest.raises(LoweringError, match=r"T\.async_copy only supports global->shared/shared\.dyn copies") as e:
        tilelang.compile(k, target="cpu")
    assert e.value.span is not None


def test_global_to_shared_copies():
    a = np.arange(4, dtype=np.float16)
    b = np.zeros_like(a)
    tilelang.compile(_kernel(False), target="cpu")(a, b)
    np.testing.assert_array_equal(a, b)
