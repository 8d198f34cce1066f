"""`T.Persistent(domain, wave_size, index, group_size=8)`: a persistent kernel's blocks walk
the tiles of `domain` wave by wave (the published `examples/gemm/example_gemm_persistent.py`).
Each tile is visited exactly once, by the block and in the wave the published grouping gives
(the last dimension in groups of `group_size`); a persistent GEMM computes the product."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.errors import TileLangError


def _visits(D0, D1, waves_of, group_size):
    @T.prim_func
    def k(V: T.Tensor((D0, D1), "int32"), B: T.Tensor((D0, D1), "int32")):
        with T.Kernel(waves_of, threads=1) as bid:
            for x, y in T.Persistent([D0, D1], waves_of, bid, group_size):
                V[x, y] = V[x, y] + 1
                B[x, y] = bid
    return k


def _expected_owner(D0, D1, wave, g):
    """Tile number t -> (group, x, position in group) as the published package numbers them."""
    g = max(1, min(g, D1))
    owner = np.full((D0, D1), -1)
    groups = -(-D1 // g)
    for t in range(groups * D0 * g):
        q, r = divmod(t, D0 * g)
        x, p = divmod(r, g)
        y = q * g + p
        if y < D1:
            owner[x, y] = t % wave
    return owner


@pytest.mark.parametrize("D0,D1,wave,group", [(5, 7, 4, 3), (3, 8, 6, 8), (4, 4, 16, 2), (2, 9, 5, 1)])
def test_every_tile_is_visited_once_by_the_published_owner(D0, D1, wave, group):
    kern = tilelang.compile(_visits(D0, D1, wave, group), target="cpu")
    v, b = np.zeros((D0, D1), np.int32), np.full((D0, D1), -1, np.int32)
    kern(v, b)
    assert (v == 1).all(), v
    np.testing.assert_array_equal(b, _expected_owner(D0, D1, wave, group))


def test_a_persistent_gemm_computes_the_product():
    M, N, K, bM, bN, bK, sms = 96, 80, 64, 32, 16, 32, 5

    @T.prim_func
    def gemm(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(sms, threads=32) as bid:
            As = T.alloc_shared((bM, bK), "float32")
            Bs = T.alloc_shared((bK, bN), "float32")
            Cl = T.alloc_fragment((bM, bN), "float32")
            for bx, by in T.Persistent([T.ceildiv(M, bM), T.ceildiv(N, bN)], sms, bid):
                T.clear(Cl)
                for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                    T.copy(A[bx * bM, k * bK], As)
                    T.copy(B[k * bK, by * bN], Bs)
                    T.gemm(As, Bs, Cl)
                T.copy(Cl, C[bx * bM, by * bN])
    kern = tilelang.compile(gemm, out_idx=[2], target="cpu")
    a, b = np.random.randn(M, K).astype(np.float32), np.random.randn(K, N).astype(np.float32)
    # float32 T.gemm multiplies as the tensor cores do (TF32): the tolerance of that rounding
    np.testing.assert_allclose(kern(a, b), a @ b, rtol=1e-2, atol=5e-2)


def test_an_empty_domain_is_refused_with_the_call_named():
    with pytest.raises(TileLangError, match="T.Persistent"):
        @T.prim_func
        def k(V: T.Tensor((4,), "int32")):
            with T.Kernel(2, threads=1) as bid:
                for x in T.Persistent([], 2, bid):
                    V[x] = 1


@pytest.mark.gpu
def test_a_persistent_gemm_on_the_gpu():
    torch = pytest.importorskip("torch")
    M = N = K = 1024
    bM, bN, bK, sms = 128, 128, 64, 7   # 64 tiles over 7 blocks: a partial last wave

    @T.prim_func
    def gemm(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(sms, threads=256) as bid:
            As = T.alloc_shared((bM, bK), "float16")
            Bs = T.alloc_shared((bK, bN), "float16")
            Cl = T.alloc_fragment((bM, bN), "float32")
            Cs = T.alloc_shared((bM, bN), "float16")
            for bx, by in T.Persistent([T.ceildiv(M, bM), T.ceildiv(N, bN)], sms, bid):
                T.clear(Cl)
                for k in T.Pipelined(T.ceildiv(K, bK), num_stages=3):
                    T.copy(A[bx * bM, k * bK], As)
                    T.copy(B[k * bK, by * bN], Bs)
                    T.gemm(As, Bs, Cl)
                T.copy(Cl, Cs)
                T.copy(Cs, C[bx * bM, by * bN])
    kern = tilelang.compile(gemm, out_idx=[2], target="cuda")
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(kern(a, b), a @ b, rtol=1e-2, atol=1e-2)
