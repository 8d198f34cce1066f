"""T.reshape / T.view of a shared buffer whose layout is not row-major (a 128-byte swizzle
chosen from T.annotate_layout, or padded rows): the view's elements are the base's logical
elements, placed by the base's layout. Before, the view read the storage row-major (the
published test_reshape_layout_transform_shared: 1760 of 2048 elements wrong on the H200)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.layout import make_swizzled_layout


def _reshape_swizzled(R=32, C=64, dtype="float16"):
    @T.prim_func
    def k(A: T.Tensor((R, C), dtype), B: T.Tensor((R * C,), dtype)):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((R, C), dtype)
            T.annotate_layout({S: make_swizzled_layout(S)})
            T.copy(A, S)
            T.copy(T.reshape(S, [R * C]), B)
    return k


def _view_widening(R=32, C=64):
    @T.prim_func
    def k(A: T.Tensor((R, C), "float16"), B: T.Tensor((R * C // 2,), "float32")):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((R, C), "float16")
            T.annotate_layout({S: make_swizzled_layout(S)})
            T.copy(A, S)
            T.copy(T.view(S, [R * C // 2], "float32"), B)
    return k


def test_views_read_through_the_swizzle():
    src = tilelang.compile(_reshape_swizzled(), target="cuda -arch=sm_90a").get_kernel_source()
    copy_out = src[src.index("__syncthreads();"):]
    assert "tl::sw128<32>(" in copy_out, copy_out
    src = tilelang.compile(_view_widening(), target="cuda -arch=sm_90a").get_kernel_source()
    copy_out = src[src.index("__syncthreads();"):]
    assert "reinterpret_cast<float*>(&S[tl::sw128<32>(" in copy_out, copy_out


def test_views_on_the_cpu_reference():
    a = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float16)
    np.testing.assert_array_equal(tilelang.compile(_reshape_swizzled(), out_idx=-1, target="cpu")(a), a.reshape(-1))
    np.testing.assert_array_equal(tilelang.compile(_view_widening(), out_idx=-1, target="cpu")(a),
                                  a.reshape(-1).view(np.float32))


@pytest.mark.gpu
def test_views_of_swizzled_buffers_on_the_gpu():
    torch = pytest.importorskip("torch")
    a = torch.randn(32, 64, dtype=torch.float16, device="cuda")
    out = tilelang.compile(_reshape_swizzled(), out_idx=-1, target="cuda")(a)
    torch.testing.assert_close(out, a.reshape(-1), rtol=0, atol=0)
    out = tilelang.compile(_view_widening(), out_idx=-1, target="cuda")(a)
    torch.testing.assert_close(out, a.reshape(-1).view(torch.float32), rtol=0, atol=0)
