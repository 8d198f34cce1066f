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


ex = _load("gemm")

# float32 T.gemm is a TF32 gemm on every backend: compared with the product of the tf32
# operands, float32 sums
TOL = {"float16": 1e-2, "bfloat16": 1e-2, "float32": 1e-3}


def _check(M, N, K, layout, dtype, relu):
    torch.manual_seed(0)
    trans_A, trans_B = layout[0] == "T", layout[1] == "T"
    kernel = ex.matmul(M, N, K, 64, 64, 32, trans_A=trans_A, trans_B=trans_B, dtype=dtype, relu=relu)
    a, b = ex.make_inputs(M, N, K, trans_A, trans_B, dtype, device="cpu")
    c = kernel(a, b)
    assert c.shape == (M, N)
    assert c.dtype == ex.TORCH_DTYPES[dtype]
    ref = ex.ref_program(tf32(a), tf32(b), trans_A, trans_B, relu) if dtype == "float32" else \
        ex.ref_program(a, b, trans_A, trans_B, relu)
    torch.testing.assert_close(c.float(), ref.float(), atol=TOL[dtype], rtol=TOL[dtype])


@pytest.mark.parametrize("layout", ["NN", "NT", "TN"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_gemm_layouts_dtypes(layout, dtype):
    _check(200, 136, 72, layout, dtype, relu=False)


@pytest.mark.parametrize("M,N,K", [(128, 128, 64), (256, 256, 256), (200, 136, 72), (64, 96, 40), (17, 5, 3)])
def test_gemm_shapes(M, N, K):
    _check(M, N, K, "NN", "float16", relu=False)


@pytest.mark.parametrize("layout", ["NN", "NT", "TN"])
@pytest.mark.parametrize("M,N,K", [(128, 128, 64), (200, 136, 72)])
def test_gemm_relu(layout, M, N, K):
    _check(M, N, K, layout, "float16", relu=True)


def test_gemm_relu_zeroes_negatives():
    torch.manual_seed(0)
    kernel = ex.matmul(64, 64, 32, 64, 64, 32, relu=True)
    a = -torch.ones(64, 32, dtype=torch.float16)
    b = torch.ones(32, 64, dtype=torch.float16)
    assert torch.count_nonzero(kernel(a, b)) == 0


def test_gemm_main():
    ex.main(M=128, N=128, K=64, layout="NT", dtype="float16", relu=True, bench=True)
