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


ex = _load("elementwise")


@pytest.mark.parametrize("M,N", [(128, 128), (256, 64), (200, 136), (1, 7), (33, 65)])
def test_elementwise_add_fp32(M, N):
    torch.manual_seed(0)
    kernel = ex.elementwise_add(M, N, 32, 64)
    a, b = torch.randn(M, N), torch.randn(M, N)
    c = kernel(a, b)
    assert c.shape == (M, N)
    torch.testing.assert_close(c, ex.ref_program(a, b), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("M,N", [(128, 128), (200, 136)])
def test_elementwise_add_fp16(M, N):
    torch.manual_seed(0)
    kernel = ex.elementwise_add(M, N, 32, 32, in_dtype="float16", out_dtype="float16")
    a = torch.randn(M, N, dtype=torch.float16)
    b = torch.randn(M, N, dtype=torch.float16)
    c = kernel(a, b)
    assert c.dtype == torch.float16
    torch.testing.assert_close(c, a + b, rtol=1e-2, atol=1e-2)


def test_elementwise_main():
    ex.main(M=128, N=96, bench=True)
