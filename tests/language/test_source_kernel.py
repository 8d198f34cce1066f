"""T.CUDASourceCodeKernel: a launch of the user's own CUDA source, called with the
kernel's tensors then its integer scalars and dynamic dimensions."""
import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.ir.errors import LoweringError
from tests.backend.cuda.conftest import needs_nvrtc

SOURCE = """
extern "C" __global__ void external_scale(float* A, float* B, int n) {
    int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n) { B[i] = 2.0f * A[i]; }
}
"""


def _kernel(source=SOURCE, entry="external_scale"):
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        T.CUDASourceCodeKernel(T.ceildiv(N, 128), threads=128, source_code_or_path=source, entry_name=entry)
    return main


@needs_nvrtc
def test_the_source_is_the_kernel_and_the_launch_follows_the_signature(tmp_path):
    from tests.backend.cuda.helpers import build
    art = build(_kernel())
    assert "B[i] = 2.0f * A[i];" in art.source
    k = art.meta["kernels"][0]
    assert k["entry"] == "external_scale" and k["threads"] == [128, 1, 1]
    assert art.meta["param_names"] == ["A", "B", "N"]
    path = tmp_path / "scale.cu"
    path.write_text(SOURCE)
    assert "B[i] = 2.0f * A[i];" in build(_kernel(path)).source


def test_the_entry_must_exist_and_be_extern_c():
    with pytest.raises(ValueError, match="Available entries: external_scale"):
        _kernel(entry="main_kernel")
    with pytest.raises(ValueError, match='extern \\\\"C\\\\"|extern "C"'):
        _kernel(SOURCE.replace('extern "C" ', ""))


def test_the_cpu_backend_says_it_cannot_run_cuda_source():
    with pytest.raises(LoweringError, match="CUDA source"):
        tilelang.compile(_kernel(), target="cpu")


def test_no_divisible_variant_for_user_source():
    # the variant for dimensions divisible by 16 passes N / 16 where N was: the user's
    # kernel takes N itself (it copied 8 of 128 elements on the H200)
    from tilelang.jit.divisibility import aligned_variant
    assert aligned_variant(_kernel(), 16) is None
    from tests.backend.cuda.conftest import nvrtc_available
    if nvrtc_available():   # and the kernel never asks for one (a call with N = 128)
        k = tilelang.compile(_kernel(), target="cuda")
        assert k._align is None


@pytest.mark.gpu
@pytest.mark.parametrize("n", [300, 128, 4096])
def test_the_source_kernel_runs(n):
    k = tilelang.compile(_kernel(), target="cuda")
    a = torch.randn(n, device="cuda")
    b = torch.empty_like(a)
    k(a, b)
    torch.testing.assert_close(b, 2 * a)
