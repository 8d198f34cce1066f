"""fp8 (e4m3 / e5m2) `T.gemm` on the CPU reference, K-major and not, fp8 or fp32 output."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T


def fp8_gemm(M, N, K, a_dtype="float8_e4m3fn", b_dtype="float8_e4m3fn", out="float8_e4m3fn", trans_B=True,
             bm=128, bn=128, bk=64, threads=128):
    b_shape, bs_shape = ((N, K), (bn, bk)) if trans_B else ((K, N), (bk, bn))

    @T.prim_func
    def f(A: T.Tensor((M, K), a_dtype), B: T.Tensor(b_shape, b_dtype), C: T.Tensor((M, N), out)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            As = T.alloc_shared((bm, bk), a_dtype)
            Bs = T.alloc_shared(bs_shape, b_dtype)
            Cl = T.alloc_fragment((bm, bn), "float32")
            T.clear(Cl)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=3):
                T.copy(A[by * bm, k * bk], As)
                if trans_B:
                    T.copy(B[bx * bn, k * bk], Bs)
                else:
                    T.copy(B[k * bk, bx * bn], Bs)
                T.gemm(As, Bs, Cl, transpose_B=trans_B)
            T.copy(Cl, C[by * bm, bx * bn])
    return f


@pytest.mark.parametrize("a_dtype,b_dtype,out,trans_B", [("float8_e4m3fn", "float8_e4m3fn", "float32", True),
                                                         ("float8_e5m2", "float8_e4m3fn", "float32", False),
                                                         ("float8_e4m3fn", "float8_e4m3fn", "float8_e4m3fn", True)])
def test_fp8_gemm_matches_numpy(a_dtype, b_dtype, out, trans_B):
    rng = np.random.default_rng(0)
    M = N = 128
    K = 192
    a = rng.standard_normal((M, K)).astype(T.dtype(a_dtype).as_numpy())
    b = rng.standard_normal((K, N)).astype(T.dtype(b_dtype).as_numpy())
    B = np.ascontiguousarray(b.T) if trans_B else b
    c = np.zeros((M, N), T.dtype(out).as_numpy())
    tilelang.compile(fp8_gemm(M, N, K, a_dtype, b_dtype, out, trans_B), target="cpu")(a, B, c)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    if out == "float32":
        np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)
    else:   # rounded to e4m3 (3 mantissa bits)
        np.testing.assert_allclose(c.astype(np.float64), ref, rtol=0.07, atol=0.05)
