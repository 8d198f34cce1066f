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


ex = _load("layer_norm")


@pytest.mark.parametrize("M,N", [(128, 256), (64, 64), (200, 136), (7, 300), (33, 17)])
def test_layer_norm_fp32(M, N):
    torch.manual_seed(0)
    kernel = ex.layer_norm(M, N, 32, 64)
    x = torch.randn(M, N) * 3 + 2
    w, b = torch.randn(N), torch.randn(N)
    y = kernel(x, w, b)
    assert y.shape == (M, N)
    torch.testing.assert_close(y, ex.ref_program(x, w, b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("M,N", [(128, 128), (200, 136)])
def test_layer_norm_fp16(M, N):
    torch.manual_seed(0)
    kernel = ex.layer_norm(M, N, 32, 64, dtype="float16")
    x = (torch.randn(M, N) + 1).half()
    w, b = torch.randn(N).half(), torch.randn(N).half()
    y = kernel(x, w, b)
    assert y.dtype == torch.float16
    torch.testing.assert_close(y, ex.ref_program(x, w, b), rtol=1e-2, atol=1e-2)


def test_layer_norm_main():
    ex.main(M=64, N=200, bench=True)
