"""Dynamic shapes (T.dynamic / T.symbolic / T.dyn['K']) bound from the arguments at call
time, and scalar parameters (`n: T.int32`, `alpha: T.float32`)."""
import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T
from tests.tf32 import tf32


def _gemm_dyn(make_dim, bm=32, bn=32, bk=16):
    M = make_dim("M")
    N, K = 64, 48

    @T.prim_func
    def k(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_f = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_f)
            for kk in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, kk * bk], A_s)
                T.copy(B[kk * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * bm, bx * bn])
    return k


@pytest.mark.parametrize("make_dim", [lambda n: T.dynamic(n), lambda n: T.symbolic(n), lambda n: T.dyn[n]],
                         ids=["dynamic", "symbolic", "dyn"])
def test_dynamic_M_two_sizes(make_dim):
    kern = tilelang.compile(_gemm_dyn(make_dim), out_idx=[2], target="cpu")
    b = torch.randn(48, 64).half()
    for M in (64, 75, 7):  # same compiled kernel, different sizes (incl. ragged)
        a = torch.randn(M, 48).half()
        c = kern(a, b)
        assert c.shape == (M, 64)
        torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)


def test_dynamic_multiple_dims_and_dyn_tuple():
    M, N = T.dynamic("M, N")
    (K,) = (T.dyn["K"],)
    blk = 16

    @T.prim_func
    def k(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, blk), T.ceildiv(M, blk), threads=64) as (bx, by):
            A_s = T.alloc_shared((blk, blk), "float32")
            B_s = T.alloc_shared((blk, blk), "float32")
            C_f = T.alloc_fragment((blk, blk), "float32")
            T.clear(C_f)
            for kk in T.serial(T.ceildiv(K, blk)):
                T.copy(A[by * blk, kk * blk], A_s)
                T.copy(B[kk * blk, bx * blk], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * blk, bx * blk])
    kern = tilelang.compile(k, out_idx=[2], target="cpu")
    for (m, n, kk) in [(32, 16, 16), (20, 37, 9)]:
        a = np.random.randn(m, kk).astype(np.float32)
        b = np.random.randn(kk, n).astype(np.float32)
        np.testing.assert_allclose(kern(a, b), tf32(a).astype(np.float64) @ tf32(b), rtol=1e-4, atol=1e-4)   # TF32


def test_dynamic_dim_used_in_body_loops():
    N = T.dynamic("N")

    @T.prim_func
    def k(A: T.Tensor((4, N), "float32"), C: T.Tensor((4,), "float32")):
        with T.Kernel(4, threads=1) as bx:
            s = T.alloc_var("float32", init=0.0)
            for j in T.serial(N):
                s += A[bx, j]
            C[bx] = s / N
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    for n in (5, 64):
        a = np.random.randn(4, n).astype(np.float32)
        np.testing.assert_allclose(kern(a), a.mean(1), rtol=1e-5, atol=1e-6)


def test_dynamic_shape_mismatch_between_arguments():
    M = T.dynamic("M")

    @T.prim_func
    def k(A: T.Tensor((M,), "float32"), B: T.Tensor((M,), "float32"), C: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, 32), threads=32) as bx:
            for i in T.Parallel(32):
                if bx * 32 + i < M:
                    C[bx * 32 + i] = A[bx * 32 + i] + B[bx * 32 + i]
    kern = tilelang.compile(k, out_idx=[2], target="cpu")
    a = np.random.randn(40).astype(np.float32)
    np.testing.assert_allclose(kern(a, a), 2 * a)
    with pytest.raises(tilelang.TileLangError, match="M"):
        kern(a, np.zeros(41, np.float32))


@pytest.mark.parametrize("n,alpha", [(10, 0.5), (64, -2.0), (1, 3.25)])
def test_scalar_params(n, alpha):
    L = 64

    @T.prim_func
    def k(A: T.Tensor((L,), "float32"), n: T.int32, alpha: T.float32, C: T.Tensor((L,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(L):
                C[i] = T.if_then_else(i < n, A[i] * alpha, A[i])
    kern = tilelang.compile(k, out_idx=[3], target="cpu")
    a = torch.randn(L)
    c = kern(a, n, alpha)
    ref = a.clone()
    ref[:n] *= alpha
    torch.testing.assert_close(c, ref)


def test_scalar_param_as_loop_bound_and_int64():
    @T.prim_func
    def k(A: T.Tensor((32,), "int64"), n: T.int32, off: T.int64, C: T.Tensor((1,), "int64")):
        with T.Kernel(1, threads=1) as bx:
            s = T.alloc_var("int64", init=0)
            for i in T.serial(n):
                s += A[i] + off
            C[0] = s
    kern = tilelang.compile(k, out_idx=[3], target="cpu")
    a = np.random.randint(-10, 10, 32).astype(np.int64)
    assert kern(a, 7, 2 ** 35)[0] == a[:7].sum() + 7 * 2 ** 35
    assert kern(a, 0, 1)[0] == 0


def test_dynamic_with_scalar_param_grid():
    N = T.dynamic("N")

    @T.prim_func
    def k(A: T.Tensor((N,), "float32"), scale: T.float32, C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, 16), threads=16) as bx:
            for i in T.Parallel(16):
                if bx * 16 + i < N:
                    C[bx * 16 + i] = A[bx * 16 + i] * scale
    kern = tilelang.compile(k, out_idx=[2], target="cpu")
    for n in (16, 33):
        a = np.random.randn(n).astype(np.float32)
        np.testing.assert_allclose(kern(a, 1.5), a * 1.5, rtol=1e-6)


def test_parallel_element_access_past_dynamic_end_is_predicated():
    # unguarded element accesses on a ragged last block: the published compiler skips stores
    # (and zero-fills loads) outside the tensor. The output is a view into a larger array, so a
    # missing predicate writes into memory we own instead of corrupting the heap.
    M = T.dynamic("M")

    @T.prim_func
    def k(A: T.Tensor((M,), "float32"), C: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, 32), threads=32) as bx:
            for i in T.Parallel(32):
                C[bx * 32 + i] = A[bx * 32 + i] + 1.0
    kern = tilelang.compile(k, target="cpu")
    src = np.zeros(64, np.float32)
    src[:40] = np.random.randn(40)
    big = np.full(64, -7.0, np.float32)
    kern(src[:40], big[:40])
    np.testing.assert_allclose(big[:40], src[:40] + 1, rtol=1e-6)
    assert (big[40:] == -7.0).all(), "stores past the end of C were not skipped"
