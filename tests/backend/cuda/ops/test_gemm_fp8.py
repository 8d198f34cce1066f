"""fp8 `T.gemm` on CUDA: tensor cores (mma.sync m16n8k32, tl::gemm_ss_k32) on sm_89+
for K-major operands, the SIMT loop elsewhere; checked in the source and the SASS."""
import pytest

from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops
from tests.language.test_gemm_fp8 import fp8_gemm


@needs_sass
@pytest.mark.parametrize("a_dtype,b_dtype", [("float8_e4m3fn", "float8_e4m3fn"), ("float8_e5m2", "float8_e5m2"),
                                             ("float8_e4m3fn", "float8_e5m2")])
def test_fp8_uses_tensor_cores_on_hopper(a_dtype, b_dtype):
    art = build(fp8_gemm(256, 256, 256, a_dtype, b_dtype, out="float32"), "sm_90a")
    assert "tl::gemm_ss_k32<128, 128, 64, 2, 2>" in art.source
    ops = sass_ops(art)
    assert ops["HMMA"] > 0 and ops["LDSM"] > 0 and ops["LDL"] == 0 and ops["STL"] == 0, ops


@needs_nvrtc
def test_fp8_other_forms_fall_back():
    assert "gemm_ss_k32" not in build(fp8_gemm(256, 256, 256, out="float32"), "sm_80").source   # no fp8 mma
    assert "gemm_ss_k32" not in build(fp8_gemm(256, 256, 256, out="float32", trans_B=False), "sm_90a").source


@pytest.mark.gpu
@pytest.mark.parametrize("a_dtype,b_dtype", [("float8_e4m3fn", "float8_e4m3fn"), ("float8_e5m2", "float8_e4m3fn")])
def test_gpu_fp8_gemm_matches_torch(a_dtype, b_dtype):
    import torch
    import tilelang
    M = N = K = 512
    a = torch.randn(M, K, device="cuda").to(getattr(torch, a_dtype))
    b = torch.randn(N, K, device="cuda").to(getattr(torch, b_dtype))
    c = torch.zeros(M, N, device="cuda")
    tilelang.compile(fp8_gemm(M, N, K, a_dtype, b_dtype, out="float32"), target="cuda")(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().T, rtol=1e-3, atol=1e-2)
