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


ex = _load("reduce")

SHAPES = [(128, 256), (64, 64), (200, 136), (7, 300), (33, 17)]


@pytest.mark.parametrize("M,N", SHAPES)
def test_row_sum(M, N):
    torch.manual_seed(0)
    kernel = ex.row_sum(M, N, 32, 64)
    x = torch.randn(M, N)
    out = kernel(x)
    assert out.shape == (M,)
    torch.testing.assert_close(out, ex.ref_sum(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("M,N", SHAPES)
def test_row_max(M, N):
    torch.manual_seed(0)
    kernel = ex.row_max(M, N, 32, 64)
    x = torch.randn(M, N) - 5.0  # all negative: zero padding must not leak into the max
    out = kernel(x)
    assert out.shape == (M,)
    torch.testing.assert_close(out, ex.ref_max(x), rtol=0, atol=0)


@pytest.mark.parametrize("M,N", [(128, 128), (200, 136)])
def test_reduce_fp16(M, N):
    torch.manual_seed(0)
    x = torch.randn(M, N).half()
    s = ex.row_sum(M, N, 32, 64, dtype="float16")(x)
    m = ex.row_max(M, N, 32, 64, dtype="float16")(x)
    assert s.dtype == torch.float16 and m.dtype == torch.float16
    torch.testing.assert_close(s, ex.ref_sum(x), rtol=1e-2, atol=2e-2)
    torch.testing.assert_close(m, ex.ref_max(x), rtol=0, atol=0)


def test_reduce_main():
    ex.main(M=64, N=200, bench=True)
