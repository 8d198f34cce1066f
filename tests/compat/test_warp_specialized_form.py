"""Kernels written in the warp-specialized style (explicit barriers, `T.ws` scopes,
`T.tma_copy`) run with program-order semantics: the compiler owns synchronisation."""
import numpy as np

import tilelang
import tilelang.language as T


def test_producer_consumer_gemm_runs_in_program_order():
    M = N = 128
    K = 96
    bm = bn = 64
    bk = 32
    stages = 2

    @T.prim_func
    def mm(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(N // bn, M // bm, threads=256) as (bx, by):
            a = T.alloc_shared((stages, bm, bk), "float32")
            b = T.alloc_shared((stages, bk, bn), "float32")
            c = T.alloc_fragment((bm, bn), "float32")
            bars = T.alloc_barrier([128] * (2 * stages))
            with T.ws(0):
                T.clear(c)
            for k in range(K // bk):
                with T.ws(1):
                    T.mbarrier_wait_parity(bars[k % stages + stages], (k // stages) % 2 ^ 1)
                    T.tma_copy(A[by * bm:(by + 1) * bm, k * bk:(k + 1) * bk], a[k % stages, :, :],
                               barrier=bars[k % stages])
                    T.tma_copy(B[k * bk:(k + 1) * bk, bx * bn:(bx + 1) * bn], b[k % stages, :, :],
                               barrier=bars[k % stages])
                    T.mbarrier_arrive(bars[k % stages])
                with T.ws(0):
                    T.mbarrier_wait_parity(bars[k % stages], (k // stages) % 2)
                    T.gemm(a[k % stages, :, :], b[k % stages, :, :], c)
                    T.mbarrier_arrive(bars[k % stages + stages])
            with T.ws(0):
                T.copy(c, C[by * bm, bx * bn])
    kern = tilelang.compile(mm, out_idx=[-1], target="cpu")
    x = np.random.rand(M, K).astype(np.float32)
    y = np.random.rand(K, N).astype(np.float32)
    from tests.tf32 import tf32   # a float32 gemm is a TF32 gemm
    np.testing.assert_allclose(kern(x, y), tf32(x).astype(np.float64) @ tf32(y), rtol=1e-4)
