"""int8 / uint8 `T.gemm` into int32 on CUDA: tensor cores (mma.sync m16n8k32 .s32.s8.s8.s32,
tl::gemm_ss_k32) for K-major operands (A M x K, B N x K), also when A is a register
fragment (the published w4a8 dequantize-GEMM example); the SIMT loop elsewhere."""
import pytest

import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops


def int8_gemm(M, N, K, dtype="int8", bm=64, bn=64, bk=128, a_fragment=False, trans_B=True):
    b_shape, bs_shape = ((N, K), (bn, bk)) if trans_B else ((K, N), (bk, bn))

    @T.prim_func
    def f(A: T.Tensor((M, K), dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), "int32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            As = T.alloc_shared((bm, bk), dtype)
            Bs = T.alloc_shared(bs_shape, dtype)
            Af = T.alloc_fragment((bm, bk), dtype)
            Cl = T.alloc_fragment((bm, bn), "int32")
            T.clear(Cl)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], As)
                if trans_B:
                    T.copy(B[bx * bn, k * bk], Bs)
                else:
                    T.copy(B[k * bk, bx * bn], Bs)
                if a_fragment:
                    T.copy(As, Af)
                    T.gemm(Af, Bs, Cl, transpose_B=trans_B)
                else:
                    T.gemm(As, Bs, Cl, transpose_B=trans_B)
            T.copy(Cl, C[by * bm, bx * bn])
    return f


@needs_sass
@pytest.mark.parametrize("dtype,a_fragment", [("int8", False), ("uint8", False), ("int8", True)])
def test_int8_uses_tensor_cores(dtype, a_fragment):
    art = build(int8_gemm(256, 256, 256, dtype, a_fragment=a_fragment), "sm_90a")
    assert "tl::gemm_ss_k32<64, 64, 128" in art.source
    ops = sass_ops(art)
    assert ops["IMMA"] > 0 and ops["LDL"] == 0 and ops["STL"] == 0, ops


@needs_nvrtc
def test_int8_n_major_b_falls_back():
    assert "gemm_ss_k32" not in build(int8_gemm(256, 256, 256, trans_B=False), "sm_90a").source


def test_int8_gemm_reference_on_cpu():
    import numpy as np
    import tilelang
    M = N = K = 128
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (M, K), dtype=np.int8)
    b = rng.integers(-128, 128, (N, K), dtype=np.int8)
    c = np.zeros((M, N), dtype=np.int32)
    tilelang.compile(int8_gemm(M, N, K, bm=32, bn=32, bk=32), target="cpu")(a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32).T)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,a_fragment", [("int8", False), ("uint8", False), ("int8", True)])
def test_gpu_int8_gemm_is_exact(dtype, a_fragment):
    import torch
    import tilelang
    M, N, K = 256, 192, 512
    lo, hi = (-128, 128) if dtype == "int8" else (0, 256)
    a = torch.randint(lo, hi, (M, K), device="cuda", dtype=getattr(torch, dtype))
    b = torch.randint(lo, hi, (N, K), device="cuda", dtype=getattr(torch, dtype))
    c = torch.zeros(M, N, device="cuda", dtype=torch.int32)
    tilelang.compile(int8_gemm(M, N, K, dtype, a_fragment=a_fragment), target="cuda")(a, b, c)
    ref = a.long().cpu() @ b.long().cpu().T
    assert torch.equal(c.cpu().long(), ref)
