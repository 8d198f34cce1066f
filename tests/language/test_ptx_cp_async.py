"""`T.ptx_cp_async(dst, src, n)`: one thread copies n elements (4/8/16 bytes) from
global to shared memory; a false predicate zero-fills the destination."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.backend.cuda.compiler import nvrtc_available


def _kernel(use_pred=True, n=8):
    @T.prim_func
    def k(A: T.Tensor((64, 16), "float16"), B: T.Tensor((64, 16), "float16"), P: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((64, 16), "float16")
            for i, j in T.Parallel(64, 16 // n):
                if use_pred:
                    T.ptx_cp_async(T.access_ptr(s[i, j * n], "w", n), T.access_ptr(A[i, j * n], "r", n), n,
                                   predicate=P[i] > 0)
                else:
                    T.ptx_cp_async(T.access_ptr(s[i, j * n], "w", n), T.access_ptr(A[i, j * n], "r", n), n)
            T.copy(s, B)
    return k


@pytest.mark.parametrize("n", [2, 4, 8])
def test_cpu_reference_semantics(n):
    kern = tilelang.compile(_kernel(True, n), target="cpu")
    a = np.random.rand(64, 16).astype(np.float16)
    b = np.full_like(a, 9)
    p = (np.arange(64) % 3).astype(np.int32)
    kern(a, b, p)
    np.testing.assert_array_equal(b, a * (p[:, None] > 0))


def test_without_predicate():
    kern = tilelang.compile(_kernel(False), target="cpu")
    a = np.random.rand(64, 16).astype(np.float16)
    b = np.zeros_like(a)
    kern(a, b, np.zeros(64, np.int32))
    np.testing.assert_array_equal(b, a)


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC not installed")
def test_cuda_issues_cp_async_and_waits():
    src = tilelang.compile(_kernel(True), target="cuda -arch=sm_90a").get_kernel_source()
    # the published spelling; waited for at once
    assert "tl::cp_async_gs_conditional<16>((&s[" in src and "(P[i] > 0)" in src
    assert "tl::cp_async_commit(), tl::cp_async_wait<0>())" in src
    # the copied tile is read by other threads: a barrier separates the two
    assert src.index("cp_async_gs") < src.index("__syncthreads()")


def test_bad_width_is_a_typed_error():
    from tilelang.ir.errors import TileLangError
    with pytest.raises(TileLangError, match="4, 8 or 16 bytes"):
        _kernel(False, n=1)


def test_destination_must_be_shared():
    from tilelang.ir.errors import TileLangError
    with pytest.raises(TileLangError, match="writes shared memory"):
        @T.prim_func
        def k(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                T.ptx_cp_async(T.access_ptr(B[0], "w", 4), T.access_ptr(A[0], "r", 4), 4)
