import importlib.util
import os
import pathlib
import sys

os.environ["TILELANG_DEFAULT_TARGET"] = "cpu"

import pytest  # noqa: E402
import torch  # noqa: E402


def _load(name):
    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / name / f"example_{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


ex = _load("implicit_gemm")


@pytest.mark.parametrize("M,N,K", [(128, 128, 64), (256, 256, 256), (64, 192, 96)])
def test_implicit_gemm(M, N, K):
    torch.manual_seed(0)
    kernel = ex.matmul_implicit(M, N, K, 64, 64, 32)
    a = torch.randn(M, K).half()
    b = torch.randn(K, N).half()
    c = kernel(a, b)
    assert c.shape == (M, N) and c.dtype == torch.float16
    torch.testing.assert_close(c, ex.ref_program(a, b), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("M,N,K", [(200, 136, 72), (70, 33, 40)])
def test_implicit_gemm_ragged(M, N, K):
    torch.manual_seed(0)
    kernel = ex.matmul_implicit(M, N, K, 64, 64, 32)
    a = torch.randn(M, K).half()
    b = torch.randn(K, N).half()
    torch.testing.assert_close(kernel(a, b), ex.ref_program(a, b), rtol=1e-2, atol=1e-2)


def test_implicit_gemm_main():
    ex.main(M=128, N=128, K=64, bench=True)
