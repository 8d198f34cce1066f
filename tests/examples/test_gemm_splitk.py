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


ex = _load("gemm_splitk")


@pytest.mark.parametrize("atomic", ["tile", "element"])
@pytest.mark.parametrize("M,N,K,split_k", [(128, 128, 256, 4), (256, 128, 128, 2), (200, 136, 72, 2),
                                           (200, 136, 300, 3), (64, 64, 64, 4)])
def test_gemm_splitk(M, N, K, split_k, atomic):
    torch.manual_seed(0)
    kernel = ex.matmul_splitk(M, N, K, 64, 64, 32, split_k=split_k, atomic=atomic)
    a = torch.randn(M, K).half()
    b = torch.randn(K, N).half()
    c = torch.zeros(M, N, dtype=torch.float32)
    kernel(a, b, c)
    torch.testing.assert_close(c, ex.ref_program(a, b), rtol=1e-2, atol=1e-2)


def test_gemm_splitk_accumulates_into_c():
    # The kernel adds into C: a non-zero C is kept.
    torch.manual_seed(0)
    kernel = ex.matmul_splitk(128, 64, 128, 64, 64, 32, split_k=2)
    a = torch.randn(128, 128).half()
    b = torch.randn(128, 64).half()
    c = torch.full((128, 64), 3.0)
    kernel(a, b, c)
    torch.testing.assert_close(c, ex.ref_program(a, b) + 3.0, rtol=1e-2, atol=1e-2)


def test_gemm_splitk_main():
    ex.main(M=128, N=128, K=256, split_k=2, atomic="tile", bench=True)
