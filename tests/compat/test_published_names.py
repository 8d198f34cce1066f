"""Published import paths that kernel code uses resolve to our implementation."""
import pytest


def test_import_paths():
    from tilelang.utils.tensor import torch_assert_close
    from tilelang.tileop.base import GemmWarpPolicy
    from tilelang.transform import PassConfigKey
    from tilelang.carver.arch import CUDA, driver  # noqa: F401
    from tilelang.contrib import nvcc
    from tilelang import DataType, jit  # noqa: F401
    from tilelang.profiler import do_bench  # noqa: F401
    from tilelang.layout import make_swizzled_layout  # noqa: F401
    import tilelang.language as T
    assert GemmWarpPolicy.FullRow == T.GemmWarpPolicy.FullRow
    assert PassConfigKey.TL_DISABLE_TMA_LOWER == "tl.disable_tma_lower"
    assert nvcc.parse_compute_version("9.0") == (9, 0)
    import torch
    torch_assert_close(torch.ones(4), torch.ones(4))
    with pytest.raises(AssertionError):
        torch_assert_close(torch.ones(4), torch.zeros(4))


def test_cuda_arch_description_without_gpu():
    from tilelang.carver.arch import CUDA
    a = CUDA("cuda -arch=sm_90a")
    assert a.sm_version == 90 and a.num_sms > 0 and a.smem_cap > 100_000


def test_region_loop_break_atomic_load_store():
    import numpy as np
    import tilelang
    import tilelang.language as T

    @T.prim_func
    def f(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8, 8), "float32"), C: T.Tensor((4,), "int32")):
        with T.Kernel(1) as bx:
            s = T.alloc_shared((4, 4), "float32")
            T.copy(T.region(A[2, 2], "r", 4, 4), s)
            T.copy(s, T.region(B[0, 0], "w", 4, 4))
            n = T.alloc_var("int32", init=0)
            for i in T.serial(100):
                if i == 3:
                    T.loop_break()
                n = n + 1
            T.atomic_store(C[0], n)
            T.atomic_store(C[1], T.atomic_load(C[0]) * 2)
    k = tilelang.compile(f, target="cpu")
    a = np.random.rand(8, 8).astype(np.float32)
    b = np.zeros((8, 8), np.float32)
    c = np.zeros(4, np.int32)
    k(a, b, c)
    np.testing.assert_array_equal(b[:4, :4], a[2:6, 2:6])
    assert c[0] == 3 and c[1] == 6


def test_warp_indices_are_expressions_of_the_thread_index():
    import tilelang.language as T

    @T.prim_func
    def f(A: T.Tensor((256,), "int32")):
        with T.Kernel(1, threads=256) as bx:
            A[T.get_thread_binding()] = T.get_warp_idx() * 100 + T.get_lane_idx() + T.get_warp_group_idx() * 7
    text = f.script()
    assert "tx // 32 * 100 + tx % 32 + tx // 128 * 7" in text
