"""The module printer (emit/module.py): what several kernels of one program share."""
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import build


def _two_kernels_one_wgmma_shape():
    """Two T.Kernel launches whose gemms use the same wgmma instruction shape (the published
    fused-MoE example: the routed experts' up and down projections)."""
    @T.prim_func
    def k(A: T.Tensor((128, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((128, 64), "float32"),
          D: T.Tensor((128, 64), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((128, 64), "float16")
            b = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((128, 64), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.clear(c)
            T.gemm(a, b, c)
            T.copy(c, C)
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((128, 64), "float16")
            b = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((128, 64), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.clear(c)
            T.gemm(a, b, c)
            T.copy(c, D)
    return k


@needs_nvrtc
def test_kernels_sharing_a_wgmma_shape_compile_with_one_wrapper():
    src = build(_two_kernels_one_wgmma_shape()).source   # NVRTC compiled it (a second definition did not)
    assert src.count("template <> struct WgmmaSS<") == 1
    assert src.index("template <> struct WgmmaSS<") < src.index('extern "C" __global__')


@pytest.mark.gpu
def test_kernels_sharing_a_wgmma_shape_run():
    torch = pytest.importorskip("torch")
    A = torch.randn(128, 64, device="cuda", dtype=torch.float16)
    B = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    C = torch.empty(128, 64, device="cuda")
    D = torch.empty(128, 64, device="cuda")
    tilelang.compile(_two_kernels_one_wgmma_shape(), target="cuda")(A, B, C, D)
    ref = A.float() @ B.float()
    torch.testing.assert_close(C, ref, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(D, ref, rtol=1e-2, atol=1e-2)
