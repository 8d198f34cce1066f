"""T.gemm: transpose flags, warp policies, clear_accum, dtypes, slices of 3-D shared buffers."""
import ml_dtypes
import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T
from tests.tf32 import tf32

TORCH = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
         "int8": torch.int8, "int32": torch.int32}


def matmul(M, N, K, bm, bn, bk, trans_A, trans_B, in_dtype, out_dtype, accum_dtype,
           policy=T.GemmWarpPolicy.Square, num_stages=2):
    A_shape = (K, M) if trans_A else (M, K)
    B_shape = (N, K) if trans_B else (K, N)
    A_sh = (bk, bm) if trans_A else (bm, bk)
    B_sh = (bn, bk) if trans_B else (bk, bn)

    @T.prim_func
    def main(A: T.Tensor(A_shape, in_dtype), B: T.Tensor(B_shape, in_dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared(A_sh, in_dtype)
            B_s = T.alloc_shared(B_sh, in_dtype)
            C_f = T.alloc_fragment((bm, bn), accum_dtype)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=num_stages):
                if trans_A:
                    T.copy(A[k * bk, by * bm], A_s)
                else:
                    T.copy(A[by * bm, k * bk], A_s)
                if trans_B:
                    T.copy(B[bx * bn, k * bk], B_s)
                else:
                    T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_f, trans_A, trans_B, policy=policy)
            T.copy(C_f, C[by * bm, bx * bn])
    return main


def _inputs(M, N, K, trans_A, trans_B, dtype):
    g = torch.Generator().manual_seed(M * 7 + N * 3 + K)
    if dtype == "int8":
        a = torch.randint(-128, 128, (M, K), generator=g, dtype=torch.int8)
        b = torch.randint(-128, 128, (K, N), generator=g, dtype=torch.int8)
    else:
        a = torch.randn(M, K, generator=g).to(TORCH[dtype])
        b = torch.randn(K, N, generator=g).to(TORCH[dtype])
    A = a.T.contiguous() if trans_A else a
    B = b.T.contiguous() if trans_B else b
    return a, b, A, B


@pytest.mark.parametrize("trans_A,trans_B", [(False, False), (False, True), (True, False), (True, True)])
@pytest.mark.parametrize("M,N,K", [(64, 64, 64), (96, 80, 72)])
def test_gemm_transpose_flags(trans_A, trans_B, M, N, K):
    kern = tilelang.compile(matmul(M, N, K, 32, 32, 16, trans_A, trans_B, "float16", "float32", "float32"),
                            out_idx=[2], target="cpu")
    a, b, A, B = _inputs(M, N, K, trans_A, trans_B, "float16")
    c = kern(A, B)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("policy", [T.GemmWarpPolicy.Square, T.GemmWarpPolicy.FullRow,
                                    T.GemmWarpPolicy.FullCol, T.GemmWarpPolicy.Full])
def test_gemm_policies(policy):
    M, N, K = 64, 64, 32
    kern = tilelang.compile(matmul(M, N, K, 32, 32, 32, False, False, "float16", "float16", "float32",
                                   policy=policy), out_idx=[2], target="cpu")
    a, b, A, B = _inputs(M, N, K, False, False, "float16")
    torch.testing.assert_close(kern(A, B), (a.float() @ b.float()).half(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("in_dtype,out_dtype,accum,tol", [
    ("float16", "float16", "float32", 1e-2),
    ("bfloat16", "bfloat16", "float32", 2e-2),
    ("float32", "float32", "float32", 1e-4),
    ("float16", "float32", "float16", 5e-2),
    ("int8", "int32", "int32", 0),
])
def test_gemm_dtypes(in_dtype, out_dtype, accum, tol):
    M, N, K = 64, 48, 64
    kern = tilelang.compile(matmul(M, N, K, 32, 16, 32, False, False, in_dtype, out_dtype, accum),
                            out_idx=[2], target="cpu")
    a, b, A, B = _inputs(M, N, K, False, False, in_dtype)
    c = kern(A, B)
    assert c.dtype == TORCH[out_dtype]
    if in_dtype == "int8":
        ref = a.to(torch.int64) @ b.to(torch.int64)
        torch.testing.assert_close(c.to(torch.int64), ref, rtol=0, atol=0)
    else:
        if in_dtype == "float32":   # a TF32 gemm: the operands' top 19 bits (ops/mma.py)
            a, b = tf32(a), tf32(b)
        ref = (a.double() @ b.double())
        torch.testing.assert_close(c.double(), ref.to(TORCH[out_dtype]).double(), rtol=tol,
                                   atol=tol * max(1.0, float(ref.abs().max()) / 10))


def test_gemm_numpy_bf16_inputs():
    M, N, K = 32, 32, 32
    kern = tilelang.compile(matmul(M, N, K, 32, 32, 16, False, True, "bfloat16", "float32", "float32"),
                            out_idx=[2], target="cpu")
    a = np.random.randn(M, K).astype(ml_dtypes.bfloat16)
    bt = np.random.randn(N, K).astype(ml_dtypes.bfloat16)
    c = kern(a, bt)
    assert isinstance(c, np.ndarray) and c.dtype == np.float32
    np.testing.assert_allclose(c, a.astype(np.float32) @ bt.astype(np.float32).T, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("clear_accum", [True, False])
def test_gemm_clear_accum(clear_accum):
    # C_f starts at 1; two gemms over two K halves: with clear_accum=True each gemm zeroes
    # C first, so only the second half survives; without it, 1 + A@B
    M, N, K, bk = 32, 32, 64, 32

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M, bk), "float16")
            B_s = T.alloc_shared((bk, N), "float16")
            C_f = T.alloc_fragment((M, N), "float32")
            T.fill(C_f, 1.0)
            for k in T.serial(K // bk):
                T.copy(A[0, k * bk], A_s)
                T.copy(B[k * bk, 0], B_s)
                T.gemm(A_s, B_s, C_f, clear_accum=clear_accum)
            T.copy(C_f, C)
    kern = tilelang.compile(main, out_idx=[2], target="cpu")
    a = torch.randn(M, K).half()
    b = torch.randn(K, N).half()
    c = kern(a, b)
    if clear_accum:
        ref = a[:, bk:].float() @ b[bk:].float()
    else:
        ref = 1 + a.float() @ b.float()
    torch.testing.assert_close(c, ref, rtol=1e-3, atol=1e-3)


def test_gemm_fragment_A_operand():
    # A in a fragment (as in flash attention's P @ V), B in shared
    M, N, K = 32, 32, 32

    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_f = T.alloc_fragment((M, K), "float32")
            B_s = T.alloc_shared((K, N), "float32")
            C_f = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_f)
            for i, j in T.Parallel(M, K):
                A_f[i, j] = T.exp(A_f[i, j])
            T.copy(B, B_s)
            T.gemm(A_f, B_s, C_f, clear_accum=True)
            T.copy(C_f, C)
    kern = tilelang.compile(main, out_idx=[2], target="cpu")
    rng = np.random.default_rng(3)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    ref = tf32(np.exp(a)).astype(np.float64) @ tf32(b)   # a TF32 gemm
    np.testing.assert_allclose(kern(a, b), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("stages", [2, 3])
def test_gemm_on_3d_shared_slices(stages):
    # a multi-buffered 3-D shared buffer: gemm on A_s[s, :, :] and B_s[s, :, :]
    M, N, K, bk = 32, 32, 96, 16

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((stages, M, bk), "float16")
            B_s = T.alloc_shared((stages, bk, N), "float16")
            C_f = T.alloc_fragment((M, N), "float32")
            T.clear(C_f)
            for k in T.serial(K // bk):
                T.copy(A[0, k * bk], A_s[k % stages, :, :])
                T.copy(B[k * bk:(k + 1) * bk, 0:N], B_s[k % stages, 0:bk, 0:N])
                T.gemm(A_s[k % stages, :, :], B_s[k % stages, :, :], C_f)
            T.copy(C_f, C)
    kern = tilelang.compile(main, out_idx=[2], target="cpu")
    a = torch.randn(M, K).half()
    b = torch.randn(K, N).half()
    torch.testing.assert_close(kern(a, b), a.float() @ b.float(), rtol=1e-3, atol=1e-3)


def test_gemm_k_mismatch_is_clear_error():
    with pytest.raises(tilelang.TileLangError, match="reduction dims"):
        @T.prim_func
        def main(A: T.Tensor((32, 32), "float16"), C: T.Tensor((32, 32), "float32")):
            with T.Kernel(1, threads=128) as bx:
                A_s = T.alloc_shared((32, 16), "float16")
                B_s = T.alloc_shared((32, 32), "float16")
                C_f = T.alloc_fragment((32, 32), "float32")
                T.gemm(A_s, B_s, C_f)
        tilelang.compile(main, out_idx=[1], target="cpu")


@pytest.mark.parametrize("trans_B", [False, True])
def test_gemm_fragment_A_transposed(trans_B):
    K, M, N = 16, 32, 24

    @T.prim_func
    def main(A: T.Tensor((K, M), "float32"), B: T.Tensor((N, K) if trans_B else (K, N), "float32"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_f = T.alloc_fragment((K, M), "float32")
            B_s = T.alloc_shared((N, K) if trans_B else (K, N), "float32")
            C_f = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_f)
            T.copy(B, B_s)
            T.gemm(A_f, B_s, C_f, transpose_A=True, transpose_B=trans_B, clear_accum=True)
            T.copy(C_f, C)
    kern = tilelang.compile(main, out_idx=[2], target="cpu")
    a = np.random.randn(K, M).astype(np.float32)
    b = np.random.randn(*((N, K) if trans_B else (K, N))).astype(np.float32)
    ta, tb = tf32(a).astype(np.float64), tf32(b).astype(np.float64)   # a TF32 gemm
    np.testing.assert_allclose(kern(a, b), ta.T @ (tb.T if trans_B else tb), rtol=1e-4, atol=1e-4)


def test_gemm_operands_by_keyword():
    import tilelang.language as T

    @T.prim_func
    def k(A: T.Tensor((16, 16), "float32"), Bm: T.Tensor((16, 16), "float32"), C: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=32):
            a = T.alloc_shared((16, 16), "float32")
            b = T.alloc_shared((16, 16), "float32")
            c = T.alloc_fragment((16, 16), "float32")
            T.copy(A, a)
            T.copy(Bm, b)
            T.clear(c)
            T.gemm(a, B=b, C=c, policy=T.GemmWarpPolicy.FullRow)
            T.copy(c, C)
    import numpy as np
    import tilelang
    kern = tilelang.compile(k, target="cpu")
    x = np.random.rand(16, 16).astype(np.float32)
    y = np.random.rand(16, 16).astype(np.float32)
    z = np.zeros((16, 16), np.float32)
    kern(x, y, z)
    np.testing.assert_allclose(z, tf32(x).astype(np.float64) @ tf32(y), rtol=1e-5)   # a TF32 gemm
