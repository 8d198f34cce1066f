"""A TMA box's innermost coordinate must address a 16-byte boundary (the hardware raises
an illegal instruction otherwise): ops/tma.py `offset_aligned16` keeps copies whose first
column is not provably aligned off TMA (pipelined loads here; stores and bulk reductions
in test_tma_store.py / test_tma_reduce.py)."""
import pytest
import torch

import tilelang
import tilelang.language as T


def _gemm(off):
    """A GEMM whose A tiles start `off` columns into each K block."""
    @T.prim_func
    def k(A: T.Tensor((128, 264), "float16"), B: T.Tensor((256, 128), "float16"), C: T.Tensor((128, 128), "float32")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            As = T.alloc_shared((64, 64), "float16")
            Bs = T.alloc_shared((64, 64), "float16")
            Cl = T.alloc_fragment((64, 64), "float32")
            T.clear(Cl)
            for ko in T.Pipelined(4, num_stages=2):
                T.copy(A[by * 64, ko * 64 + off], As)
                T.copy(B[ko * 64, bx * 64], Bs)
                T.gemm(As, Bs, Cl)
            T.copy(Cl, C[by * 64, bx * 64])
    return k


@pytest.mark.parametrize("off,tma_loads", [(0, 2), (8, 2), (4, 0)])
def test_pipelined_loads_use_tma_only_at_aligned_columns(off, tma_loads):
    src = tilelang.lower(_gemm(off), target={"kind": "cuda", "arch": "sm_90a"}).kernel_source
    # multicast or not (pairs of warp-specialized blocks share A tiles: TILELANG_CUDA_WS_MULTICAST)
    assert src.count("tl::tma_load_2d(") + src.count("tl::tma_load_2d_multicast(") == tma_loads


@pytest.mark.gpu
@pytest.mark.parametrize("off", [4, 8])
def test_unaligned_pipelined_gemm_on_gpu(off):
    kern = tilelang.compile(_gemm(off), target="cuda")
    a = torch.randn(128, 264, device="cuda").half()
    b = torch.randn(256, 128, device="cuda").half()
    c = torch.zeros(128, 128, device="cuda")
    kern(a, b, c)
    want = torch.zeros_like(c)
    for ko in range(4):
        want += a[:, ko * 64 + off:ko * 64 + off + 64].float() @ b[ko * 64:ko * 64 + 64].float()
    torch.testing.assert_close(c, want, rtol=1e-2, atol=1e-2)
