"""`T.ptx_cp_async(dst, src, n)`: one thread copies n elements (4/8/16 bytes) from
global to shared memory; a false predicate zero-fills the destination."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.backend.cuda.host.nvrtc import nvrtc_available


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


def _lanes_kernel(lanes, dtype="float16", n=64):
    """One element per lane of a T.vectorized loop: the lanes are one cp.async
    (transform/fold_vectorized_cp_async.py)."""
    @T.prim_func
    def k(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((n,), dtype)
            for i in T.vectorized(lanes):
                T.ptx_cp_async(T.access_ptr(S[i], "w", 1), T.access_ptr(A[i], "r", 1), 1)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            for i in T.serial(lanes):
                B[i] = S[i]
    return k


@pytest.mark.parametrize("lanes", [2, 4, 8])
def test_vectorized_lanes_fold_on_the_cpu(lanes):
    a = np.random.rand(64).astype(np.float16)
    b = np.zeros_like(a)
    tilelang.compile(_lanes_kernel(lanes), target="cpu")(a, b)
    np.testing.assert_array_equal(b[:lanes], a[:lanes])


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC not installed")
def test_vectorized_lanes_are_one_cp_async():
    src = tilelang.compile(_lanes_kernel(4), target="cuda -arch=sm_90a").get_kernel_source()
    assert "tl::cp_async_gs<8>((&S[0]), (&A[0]));" in src and "cp_async_gs<2>" not in src


def test_lanes_that_do_not_make_a_cp_async_are_an_error():
    from tilelang.ir.errors import LoweringError
    with pytest.raises(LoweringError, match="4, 8 or 16 bytes; this one moves 16 bits"):
        tilelang.compile(_lanes_kernel(3), target="cpu")


def test_packed_and_unpacked_4bit_buffers_are_refused():
    from tilelang.ir.errors import TileLangError
    with pytest.raises(TileLangError, match="raw bytes"):
        _lanes_kernel(32, "int4", 128)


@pytest.mark.gpu
def test_vectorized_lanes_on_the_gpu():
    import torch
    a = torch.randn(64, device="cuda", dtype=torch.float16)
    b = torch.zeros_like(a)
    tilelang.compile(_lanes_kernel(8), target="cuda")(a, b)
    torch.testing.assert_close(b[:8], a[:8], atol=0, rtol=0)
