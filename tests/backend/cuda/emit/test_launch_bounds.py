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


def _source(func):
    from tilelang.backend.registry import get_backend
    return get_backend("cuda").generate(func, {"kind": "cuda", "arch": "sm_90a"})[1]


def _bounds(src):
    return re.search(r"__launch_bounds__\(([^)]*)\)", src).group(1)


def test_min_blocks_default_annotation_and_switch(monkeypatch):
    assert _bounds(_source(_kernel())) == "96, 1"
    assert _bounds(_source(_kernel(3))) == "96, 3"
    monkeypatch.setenv("TILELANG_CUDA_MIN_BLOCKS", "0")   # the A/B switch: the one-argument form
    assert _bounds(_source(_kernel())) == "96"
    assert _bounds(_source(_kernel(3))) == "96, 3"


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


@needs_nvrtc
def test_register_usage_level_reaches_nvrtc(monkeypatch):
    """The compile hands the option to NVRTC (and warns no more that the key does nothing)."""
    import warnings
    from tilelang.backend.cuda.host import nvrtc
    seen = []
    real = nvrtc.compile_options
    monkeypatch.setattr(nvrtc, "compile_options", lambda *a, **kw: seen.append(real(*a, **kw)) or seen[-1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tilelang.compile(_kernel(), target=SM90, pass_configs={"tl.ptxas_register_usage_level": 7})
    assert "--ptxas-options=--register-usage-level=7" in seen[-1]


# ptxas itself: the second argument changes its register allocation (NVRTC 13.0: 62 registers
# with (128, 1), 56 with (128)): the unrolled loop keeps more loads in flight when it may
_PRESSURE = r"""
extern "C" __global__ void __launch_bounds__(128BOUNDS) k(const float* __restrict__ a, float* __restrict__ b) {
  float acc[48];
#pragma unroll
  for (int j = 0; j < 48; ++j) acc[j] = a[(blockIdx.x * 48 + j) * 128 + threadIdx.x];
  float s = 0.f;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
#pragma unroll
    for (int j = 0; j < 48; ++j) { acc[j] = __sinf(acc[j] * s + acc[(j + r + 1) % 48]); s += acc[j]; }
  }
  b[blockIdx.x * 128 + threadIdx.x] = s;
}
"""


@needs_sass
def test_ptxas_registers_follow_the_launch_bounds():
    from tilelang.backend.cuda.host.nvrtc import compile_cuda, resource_usage

    def regs(bounds, extra=()):
        c = compile_cuda(_PRESSURE.replace("BOUNDS", bounds), "sm_90a", extra_options=extra)
        return int(re.search(r"REG:(\d+)", resource_usage(c.cubin)).group(1))
    assert regs(", 1") != regs("")
