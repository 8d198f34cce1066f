"""NVRTC's own split of a compile (TILELANG_CUDA_NVRTC_TIME: front end, NVVM optimizer, ptxas,
from its --time file; the cubin is the same) and ptxas's -O level (TILELANG_CUDA_PTXAS_OPT_LEVEL,
opt-in, in the cache key: it changes the SASS)."""
import dataclasses

import pytest

from tilelang.backend.cuda.host import nvrtc
from tilelang.backend.cuda.options import CudaOptions, ptxas_options, switches_identity
from tests.backend.cuda import kernels as K
from tests.backend.cuda.conftest import needs_nvrtc


def test_phases_read_from_the_time_file_with_or_without_its_title_row():
    rows = ("kernel.cu, CUDA C++ Frontend, 28, ms\nkernel.cu, NVVM Optimizer, 23.5, ms\n"
            "kernel.cu, PTX Translation, 18, ms\n")
    assert nvrtc.read_phases(rows) == {"frontend": 28.0, "nvvm": 23.5, "ptxas": 18.0}
    titled = "File name, phase name, metric, unit\n" + rows + "kernel.cu, Some New Phase, 4, ms\n"
    assert nvrtc.read_phases(titled) == {"frontend": 28.0, "nvvm": 23.5, "ptxas": 18.0, "Some New Phase": 4.0}
    assert nvrtc.read_phases("") == {}


def test_switches():
    assert not CudaOptions.from_config(None, "sm_90a", env={}).nvrtc_time
    assert CudaOptions.from_config(None, "sm_90a", env={"TILELANG_CUDA_NVRTC_TIME": "1"}).nvrtc_time
    assert CudaOptions.from_config(None, "sm_90a", env={}).ptxas_opt_level is None
    o = CudaOptions.from_config(None, "sm_90a", env={"TILELANG_CUDA_PTXAS_OPT_LEVEL": "1"})
    assert o.ptxas_opt_level == 1 and ptxas_options(o) == ("--ptxas-options=-O1",)
    with pytest.raises(ValueError, match="TILELANG_CUDA_PTXAS_OPT_LEVEL.*0, 1, 2 or 3"):
        CudaOptions.from_config(None, "sm_90a", env={"TILELANG_CUDA_PTXAS_OPT_LEVEL": "4"})
    # the -O level changes the cubin: it keys the kernel cache; timing NVRTC does not
    assert "TILELANG_CUDA_PTXAS_OPT_LEVEL=1" in switches_identity({"TILELANG_CUDA_PTXAS_OPT_LEVEL": "1"})
    assert switches_identity({"TILELANG_CUDA_NVRTC_TIME": "1"}) == ""


def _source(func):
    from tilelang.backend.cuda import backend
    from tilelang.backend.registry import parse_target
    return backend.generate(func, parse_target("cuda -arch=sm_90a"))[1]


@needs_nvrtc
def test_timed_compile_reports_the_phases_and_the_same_cubin():
    src = _source(K.softmax())
    plain = CudaOptions.from_config(None, "sm_90a", env={})
    timed = dataclasses.replace(plain, nvrtc_time=True)
    a = nvrtc.compile_cuda(src, "sm_90a", options=plain)
    b = nvrtc.compile_cuda(src, "sm_90a", options=timed)
    assert a.phases == {} and set(b.phases) >= {"frontend", "nvvm", "ptxas"}
    assert all(ms >= 0 for ms in b.phases.values()) and b.phases["nvvm"] > 0
    assert a.cubin == b.cubin


@needs_nvrtc
def test_ptxas_opt_level_reaches_ptxas():
    src = _source(K.softmax())
    plain = CudaOptions.from_config(None, "sm_90a", env={})
    o0 = nvrtc.compile_cuda(src, "sm_90a", options=dataclasses.replace(plain, ptxas_opt_level=0))
    o3 = nvrtc.compile_cuda(src, "sm_90a", options=dataclasses.replace(plain, ptxas_opt_level=3))
    if nvrtc.cuobjdump_path() is None:
        pytest.skip("cuobjdump not installed")
    # -O3 is ptxas's default: the same SASS (the cubin's notes record the options given)
    assert nvrtc.sass(o3.cubin) == nvrtc.sass(nvrtc.compile_cuda(src, "sm_90a", options=plain).cubin)
    assert nvrtc.sass(o0.cubin) != nvrtc.sass(o3.cubin)
