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


ex = _load("gemv")


@pytest.mark.parametrize("N,K", [(128, 256), (64, 64), (200, 136), (136, 72), (5, 300)])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_gemv(N, K, dtype):
    torch.manual_seed(0)
    tdt = ex.TORCH_DTYPES[dtype]
    kernel = ex.gemv(N, K, 32, 64, dtype=dtype)
    a, x = torch.randn(N, K).to(tdt), torch.randn(K).to(tdt)
    y = kernel(a, x)
    assert y.shape == (N,) and y.dtype == tdt
    tol = 1e-4 if dtype == "float32" else 1e-2
    torch.testing.assert_close(y, ex.ref_program(a, x), rtol=tol, atol=tol)


def test_gemv_bf16():
    torch.manual_seed(0)
    kernel = ex.gemv(200, 136, 32, 64, dtype="bfloat16")
    a, x = torch.randn(200, 136).bfloat16(), torch.randn(136).bfloat16()
    torch.testing.assert_close(kernel(a, x), ex.ref_program(a, x), rtol=1e-2, atol=1e-2)


def test_gemv_main():
    ex.main(N=128, K=200, dtype="float16", bench=True)
