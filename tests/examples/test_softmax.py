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


ex = _load("softmax")


@pytest.mark.parametrize("M,N", [(128, 256), (64, 64), (200, 136), (5, 300), (33, 17)])
def test_softmax_fp32(M, N):
    torch.manual_seed(0)
    kernel = ex.softmax(M, N, 32, 64)
    x = torch.randn(M, N) * 4
    y = kernel(x)
    assert y.shape == (M, N)
    torch.testing.assert_close(y, ex.ref_program(x), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(y.sum(-1), torch.ones(M), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("M,N", [(128, 128), (200, 136)])
def test_softmax_fp16(M, N):
    torch.manual_seed(0)
    kernel = ex.softmax(M, N, 32, 64, dtype="float16")
    x = (torch.randn(M, N) * 4).half()
    y = kernel(x)
    assert y.dtype == torch.float16
    torch.testing.assert_close(y, ex.ref_program(x), rtol=1e-2, atol=1e-3)


def test_softmax_large_values():
    # Needs the max subtraction to stay finite.
    torch.manual_seed(0)
    kernel = ex.softmax(64, 100, 32, 64)
    x = torch.randn(64, 100) * 50 + 1000
    torch.testing.assert_close(kernel(x), ex.ref_program(x), rtol=1e-4, atol=1e-5)


def test_softmax_main():
    ex.main(M=64, N=200, bench=True)
