"""The implicit-kernel form: a prim_func with no T.Kernel whose top-level
T.Parallel(..., "SSR") maps S loops to the grid and runs R loops inside each block."""
import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T


def implicit_gemm(M, N, K, bm, bn, bk, explicit_slice=False, dtype="float16"):
    @T.prim_func
    def k(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")):
        A_s = T.alloc_shared((bm, bk), dtype)
        B_s = T.alloc_shared((bk, bn), dtype)
        C_f = T.alloc_fragment((bm, bn), "float32")
        for i, j, kk in T.Parallel(T.ceildiv(M, bm), T.ceildiv(N, bn), T.ceildiv(K, bk), "SSR"):
            T.copy(A[i * bm, kk * bk], A_s)
            T.copy(B[kk * bk, j * bn], B_s)
            T.gemm(A_s, B_s, C_f)
        if explicit_slice:
            T.copy(C_f, C[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn])
        else:
            T.copy(C_f, C)
    return k


@pytest.mark.parametrize("M,N,K,bm,bn,bk", [(64, 64, 64, 32, 32, 16), (96, 32, 48, 32, 16, 16)])
def test_implicit_gemm(M, N, K, bm, bn, bk):
    kern = tilelang.compile(implicit_gemm(M, N, K, bm, bn, bk), out_idx=[2], target="cpu")
    a = torch.randn(M, K).half()
    b = torch.randn(K, N).half()
    # more than one block and more than one K step: accumulators must restart at zero per block
    torch.testing.assert_close(kern(a, b), a.float() @ b.float(), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("M,N,K", [(70, 40, 33), (20, 50, 16)])
def test_implicit_gemm_ragged_with_explicit_slice(M, N, K):
    kern = tilelang.compile(implicit_gemm(M, N, K, 32, 32, 16, explicit_slice=True, dtype="float32"),
                            out_idx=[2], target="cpu")
    a = np.random.randn(M, K).astype(np.float32)
    b = np.random.randn(K, N).astype(np.float32)
    from tests.tf32 import tf32   # a float32 gemm is a TF32 gemm
    np.testing.assert_allclose(kern(a, b), tf32(a).astype(np.float64) @ tf32(b), rtol=1e-4, atol=1e-4)


def test_implicit_not_multiple_of_tile_is_clear_error():
    with pytest.raises(tilelang.TileLangError, match="not a multiple of the tile") as ei:
        tilelang.compile(implicit_gemm(70, 64, 64, 32, 32, 16), out_idx=[2], target="cpu")
    msg = str(ei.value)
    assert "C" in msg and "70" in msg and "32" in msg
    assert "T.copy(C_f, C[" in msg  # the hint shows how to write the slice


def implicit_rowsum(M, N, bm, bn, style):
    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), S: T.Tensor((M,), "float32")):
        tile = T.alloc_fragment((bm, bn), "float32")
        part = T.alloc_fragment((bm,), "float32")
        acc = T.alloc_fragment((bm,), "float32")
        if style == "clear_first":
            T.clear(acc)
        for i, kk in T.Parallel(T.ceildiv(M, bm), T.ceildiv(N, bn), "SR"):
            T.copy(A[i * bm, kk * bn], tile)
            if style == "reduce_accumulate":
                T.reduce_sum(tile, acc, dim=1, clear=False)
            else:
                T.reduce_sum(tile, part, dim=1)
                for r in T.Parallel(bm):
                    acc[r] += part[r]
        T.copy(acc, S)
    return k


@pytest.mark.parametrize("style", ["clear_first", "parallel_accumulate", "reduce_accumulate"])
def test_implicit_rowsum(style):
    M, N, bm, bn = 64, 96, 16, 32
    kern = tilelang.compile(implicit_rowsum(M, N, bm, bn, style), out_idx=[1], target="cpu")
    a = np.random.randn(M, N).astype(np.float32)
    np.testing.assert_allclose(kern(a), a.sum(1), rtol=1e-4, atol=1e-4)
    # run twice: no state leaks between calls
    np.testing.assert_allclose(kern(a + 1), (a + 1).sum(1), rtol=1e-4, atol=1e-4)


def test_implicit_structure_must_match_extents():
    with pytest.raises(tilelang.TileLangError, match="structure"):
        @T.prim_func
        def k(A: T.Tensor((8, 8), "float32")):
            for i, j in T.Parallel(2, 2, "SSR"):
                A[i, j] = 0.0
        tilelang.compile(k, target="cpu")


def test_implicit_running_max_keeps_pre_loop_fill():
    # a fragment initialised before the loop (here to -inf) is not reset to zero
    M, N, bm, bn = 32, 64, 16, 16

    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), O: T.Tensor((M,), "float32")):
        tile = T.alloc_fragment((bm, bn), "float32")
        m = T.alloc_fragment((bm,), "float32")
        T.fill(m, -T.infinity("float32"))
        for i, kk in T.Parallel(M // bm, N // bn, "SR"):
            T.copy(A[i * bm, kk * bn], tile)
            T.reduce_max(tile, m, dim=1, clear=False)
        T.copy(m, O)
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = -np.random.rand(M, N).astype(np.float32) - 1  # all negative: a zero start would give 0
    np.testing.assert_array_equal(kern(a), a.max(1))
