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


ex = _load("quickstart")


@pytest.mark.parametrize("M,N,K", [(128, 128, 64), (256, 128, 256), (200, 136, 72)])
def test_quickstart_matmul_relu(M, N, K):
    import tilelang
    torch.manual_seed(0)
    kernel = tilelang.compile(ex.matmul_relu(M, N, K, 64, 64, 32), out_idx=[2], target="cpu")
    a = torch.randn(M, K, dtype=torch.float16)
    b = torch.randn(K, N, dtype=torch.float16)
    c = kernel(a, b)
    assert c.shape == (M, N) and c.dtype == torch.float16
    assert (c >= 0).all()
    torch.testing.assert_close(c, ex.ref_program(a, b), rtol=1e-2, atol=1e-2)


def test_quickstart_main():
    kernel = ex.main(M=128, N=128, K=128, bench=True)
    assert kernel is not None
