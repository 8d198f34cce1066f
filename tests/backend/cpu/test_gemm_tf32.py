"""The reference semantics of a TF32 gemm (T.gemm on float32 / tfloat32 operands into
float32): `tl::gemm` in include/tl_cpu.h multiplies each operand's top 19 bits, as the CUDA
tensor cores (mma .tf32) and the CUDA SIMT fallback do, so CPU and GPU results agree."""
import numpy as np
import pytest
import torch

import tilelang
from tests.backend.cuda.ops.test_gemm_tf32 import f32_gemm, bf16_rows_times_tf32
from tests.tf32 import tf32


@pytest.mark.parametrize("dtype", ["float32", "tfloat32"])
@pytest.mark.parametrize("trans_A,trans_B", [(False, False), (True, True)])
def test_cpu_tf32_gemm_multiplies_truncated_operands(dtype, trans_A, trans_B):
    M, N, K = 64, 64, 96
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    kern = tilelang.compile(f32_gemm(M, N, K, dtype=dtype, trans_A=trans_A, trans_B=trans_B), target="cpu")
    c = np.zeros((M, N), np.float32)
    kern(a.T.copy() if trans_A else a, b.T.copy() if trans_B else b, c)
    ref = tf32(a).astype(np.float64) @ tf32(b).astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(c - exact).max() > 20 * np.abs(c - ref).max()   # the truncation is visible


def test_cpu_16_bit_operands_are_not_truncated():
    M, N, K = 32, 32, 32
    rng = np.random.default_rng(6)
    a = torch.from_numpy(rng.standard_normal((M, K)).astype(np.float32)).half()
    b = torch.from_numpy(rng.standard_normal((K, N)).astype(np.float32)).half()
    kern = tilelang.compile(f32_gemm(M, N, K, bm=32, bn=32, dtype="float16"), target="cpu")
    c = torch.zeros(M, N)
    kern(a, b, c)
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=1e-6, atol=1e-5)


def test_cpu_bf16_widened_to_tf32_fragment():
    tokens, width = 48, 512
    rng = np.random.default_rng(7)
    x = torch.from_numpy(rng.standard_normal((tokens, width)).astype(np.float32)).bfloat16()
    w = torch.from_numpy((rng.standard_normal((32, width)) * 1e-2).astype(np.float32))
    y, sq = torch.zeros(tokens, 32), torch.zeros(tokens)
    tilelang.compile(bf16_rows_times_tf32(tokens, width), target="cpu")(x, w, y, sq)
    ref = x.double() @ torch.from_numpy(tf32(w.numpy())).double().T   # bf16 values are exact in tf32
    torch.testing.assert_close(y.double(), ref, rtol=1e-5, atol=1e-5 * float(ref.abs().max()))
    torch.testing.assert_close(sq.double(), x.double().square().sum(1), rtol=1e-5, atol=1e-4)
