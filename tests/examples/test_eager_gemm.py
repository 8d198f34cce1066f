import importlib.util
import os
import pathlib
import sys

os.environ["TILELANG_DEFAULT_TARGET"] = "cpu"

import pytest  # noqa: E402
import torch  # noqa: E402

from tests.tf32 import tf32  # noqa: E402


def _load(name):
    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / name / f"example_{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


ex = _load("eager_gemm")


@pytest.mark.parametrize("M,N,K", [(128, 128, 64), (256, 256, 256), (200, 136, 72), (33, 70, 40)])
def test_eager_gemm_fp16(M, N, K):
    torch.manual_seed(0)
    a = torch.randn(M, K).half()
    b = torch.randn(K, N).half()
    c = ex.matmul(a, b)
    assert c.shape == (M, N) and c.dtype == torch.float16
    torch.testing.assert_close(c, ex.ref_program(a, b), rtol=1e-2, atol=1e-2)


# float32 T.gemm is a TF32 gemm on every backend: compared with the product of the tf32
# operands, float32 sums
F32_TOL = 1e-3


@pytest.mark.parametrize("dtype,tdt,tol", [("bfloat16", torch.bfloat16, 1e-2), ("float32", torch.float32, F32_TOL)])
def test_eager_gemm_dtypes(dtype, tdt, tol):
    torch.manual_seed(0)
    a = torch.randn(200, 72).to(tdt)
    b = torch.randn(72, 136).to(tdt)
    c = ex.matmul(a, b, 64, 64, 32, dtype=dtype)
    assert c.dtype == tdt
    ref = ex.ref_program(tf32(a), tf32(b)) if dtype == "float32" else ex.ref_program(a, b)
    torch.testing.assert_close(c.float(), ref.float(), rtol=tol, atol=tol)


def test_eager_gemm_block_sizes():
    torch.manual_seed(0)
    a = torch.randn(96, 80).half()
    b = torch.randn(80, 48).half()
    c = ex.matmul(a, b, block_M=32, block_N=32, block_K=16)
    torch.testing.assert_close(c, ex.ref_program(a, b), rtol=1e-2, atol=1e-2)


def test_eager_gemm_reuses_across_calls():
    torch.manual_seed(0)
    for _ in range(2):
        a = torch.randn(64, 32).half()
        b = torch.randn(32, 64).half()
        torch.testing.assert_close(ex.matmul(a, b), ex.ref_program(a, b), rtol=1e-2, atol=1e-2)


def test_eager_gemm_main():
    ex.main(M=128, N=64, K=96, bench=True)
