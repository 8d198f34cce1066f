"""__launch_bounds__'s second argument (minimum blocks per SM) and the pass config
tl.ptxas_register_usage_level: both reach ptxas and change its register allocation.

The published package prints `__launch_bounds__(threads, n)` with n from
T.annotate_min_blocks_per_sm, else 1; without the second argument ptxas caps the
registers to keep more blocks resident (mHC's TF32 gemm: 110 registers instead of 179)."""
import re

import pytest

import tilelang
import tilelang.language as T
from tilelang.backend.cuda.options import CudaOptions, ptxas_options
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass

SM90 = "cuda -arch=sm_90a"


def _kernel(min_blocks=None):
    @T.prim_func
    def k(A: T.Tensor((1024, 256), "float32"), B: T.Tensor((1024, 256), "float32")):
        with T.Kernel(8, threads=96) as bx:
            if min_blocks:
                T.annotate_min_blocks_per_sm(min_blocks)
            for i, j in T.Parallel(128, 256):
                B[bx * 128 + i, j] = T.exp(A[bx * 128 + i, j]) * 2.0
    return k


def _bounds(src):
    return re.search(r"__launch_bounds__\(([^)]*)\)", src).group(1)


@needs_nvrtc
def test_min_blocks_default_annotation_and_switch(monkeypatch):
    assert _bounds(tilelang.compile(_kernel(), target=SM90).get_kernel_source()) == "96, 1"
    assert _bounds(tilelang.compile(_kernel(3), target=SM90).get_kernel_source()) == "96, 3"
    monkeypatch.setenv("TILELANG_CUDA_MIN_BLOCKS", "0")   # the A/B switch: the one-argument form
    assert _bounds(tilelang.compile(_kernel(), target=SM90).get_kernel_source()) == "96"
    assert _bounds(tilelang.compile(_kernel(3), target=SM90).get_kernel_source()) == "96, 3"


def test_min_blocks_switch_is_part_of_the_options():
    assert CudaOptions.from_config(None, "sm_90a", env={}).min_blocks_per_sm == 1
    assert CudaOptions.from_config(None, "sm_90a", env={"TILELANG_CUDA_MIN_BLOCKS": "0"}).min_blocks_per_sm == 0
    with pytest.raises(ValueError, match="TILELANG_CUDA_MIN_BLOCKS"):
        CudaOptions.from_config(None, "sm_90a", env={"TILELANG_CUDA_MIN_BLOCKS": "one"})


def test_register_usage_level_pass_config():
    o = CudaOptions.from_config({"tl.ptxas_register_usage_level": 10}, "sm_90a", env={})
    assert o.register_usage_level == 10
    assert ptxas_options(o) == ("--ptxas-options=--register-usage-level=10",)
    assert ptxas_options(CudaOptions.from_config(None, "sm_90a", env={})) == ()
    for bad in (11, -1, "high", True):
        with pytest.raises(ValueError, match="tl.ptxas_register_usage_level"):
            CudaOptions.from_config({"tl.ptxas_register_usage_level": bad}, "sm_90a", env={})


def _pressure_kernel():
    """Enough live values per thread that ptxas's register choices show in the SASS."""
    @T.prim_func
    def k(A: T.Tensor((4096, 64), "float32"), B: T.Tensor((4096,), "float32")):
        with T.Kernel(32, threads=128) as bx:
            acc = T.alloc_local((64,), "float32")
            for j in T.serial(64):
                acc[j] = A[bx * 128 + T.get_thread_binding(), j]
            s = T.alloc_var("float32")
            s = 0.0
            for r in T.serial(8):
                for j in T.unroll(64):
                    acc[j] = T.sin(acc[j] * s + acc[(j + r) % 64])
                    s += acc[j]
            B[bx * 128 + T.get_thread_binding()] = s
    return k


@needs_sass
def test_launch_bounds_and_usage_level_reach_ptxas(monkeypatch):
    """Both settings reach ptxas: its register allocation differs with each (NVRTC 13.0:
    80 registers with (128, 1), 74 with (128), 79 at usage level 0)."""
    from tilelang.backend.cuda.host.nvrtc import resource_usage, sass
    import warnings

    def compiled(**kw):
        with warnings.catch_warnings():
            warnings.simplefilter("error")   # the pass config is honoured: no "has no effect" warning
            b = tilelang.compile(_pressure_kernel(), target=SM90, **kw).artifact.binary
        return int(re.search(r"REG:(\d+)", resource_usage(b)).group(1)), sass(b)
    base = compiled()
    level0 = compiled(pass_configs={"tl.ptxas_register_usage_level": 0})
    monkeypatch.setenv("TILELANG_CUDA_MIN_BLOCKS", "0")
    one_arg = compiled()
    assert base[1] != level0[1]
    assert base[0] > one_arg[0]
