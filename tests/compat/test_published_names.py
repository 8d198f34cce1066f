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
