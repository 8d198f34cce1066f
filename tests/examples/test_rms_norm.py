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


ex = _load("rms_norm")


@pytest.mark.parametrize("M,N", [(128, 256), (64, 64), (200, 136), (7, 300), (33, 17)])
def test_rms_norm_fp32(M, N):
    torch.manual_seed(0)
    kernel = ex.rms_norm(M, N, 32, 64)
    x, w = torch.randn(M, N), torch.randn(N)
    y = kernel(x, w)
    assert y.shape == (M, N)
    torch.testing.assert_close(y, ex.ref_program(x, w), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("M,N", [(128, 128), (200, 136)])
def test_rms_norm_fp16(M, N):
    torch.manual_seed(0)
    kernel = ex.rms_norm(M, N, 32, 64, dtype="float16")
    x, w = torch.randn(M, N).half(), torch.randn(N).half()
    y = kernel(x, w)
    assert y.dtype == torch.float16
    torch.testing.assert_close(y, ex.ref_program(x, w), rtol=1e-2, atol=1e-2)


def test_rms_norm_eps():
    torch.manual_seed(0)
    kernel = ex.rms_norm(32, 64, 32, 64, eps=0.5)
    x, w = torch.randn(32, 64) * 0.1, torch.ones(64)
    torch.testing.assert_close(kernel(x, w), ex.ref_program(x, w, eps=0.5), rtol=1e-4, atol=1e-5)


def test_rms_norm_main():
    ex.main(M=64, N=200, bench=True)
