"""NVRTC's automatic precompiled header (TILELANG_CUDA_NVRTC_PCH, on by default): the
options reach NVRTC only where it takes them, the cubin is the one compiled without it,
also when threads compile at once (par_compile), and the switch turns it off."""
import concurrent.futures as cf
import dataclasses

import pytest

from tilelang.backend.cuda.host import nvrtc
from tilelang.backend.cuda.options import CudaOptions
from tests.backend.cuda import kernels as K
from tests.backend.cuda.conftest import needs_nvrtc


def test_pch_options_follow_the_switch(monkeypatch):
    monkeypatch.setattr(nvrtc, "pch_supported", lambda: True)
    assert all(o in nvrtc.compile_options("sm_90a", pch=True) for o in nvrtc.PCH_OPTIONS)
    assert not any(o in nvrtc.compile_options("sm_90a", pch=False) for o in nvrtc.PCH_OPTIONS)
    monkeypatch.setattr(nvrtc, "pch_supported", lambda: False)   # an NVRTC older than 12.8
    assert not any(o in nvrtc.compile_options("sm_90a", pch=True) for o in nvrtc.PCH_OPTIONS)
    assert CudaOptions.from_config(None, "sm_90a", env={}).nvrtc_pch
    assert not CudaOptions.from_config(None, "sm_90a", env={"TILELANG_CUDA_NVRTC_PCH": "0"}).nvrtc_pch
    env = {"TILELANG_CUDA_NVRTC_SPLIT_COMPILE": "4"}
    assert CudaOptions.from_config(None, "sm_90a", env=env).nvrtc_split_compile == 4
    assert CudaOptions.from_config(None, "sm_90a", env={}).nvrtc_split_compile == 0
    assert CudaOptions.from_config(None, "sm_90a", env={"TILELANG_CUDA_NVRTC_FAST_COMPILE": "mid"}
                                   ).nvrtc_fast_compile == "mid"
    assert CudaOptions.from_config(None, "sm_90a", env={}).nvrtc_fast_compile is None
    with pytest.raises(ValueError, match="TILELANG_CUDA_NVRTC_FAST_COMPILE.*min, mid, max"):
        CudaOptions.from_config(None, "sm_90a", env={"TILELANG_CUDA_NVRTC_FAST_COMPILE": "fast"})


def test_failure_repro_command_leaves_out_the_pch_options(monkeypatch, tmp_path):
    monkeypatch.setattr(nvrtc, "pch_supported", lambda: True)
    opts = nvrtc.compile_options("sm_90a", pch=True)
    text = nvrtc._format_failure("int x = ;\n", "kernel.cu(1): error: expected an expression", "kernel.cu",
                                 opts, dump_dir=str(tmp_path))
    repro = text.split("reproduce with: ", 1)[1]
    assert "-arch=sm_90a" in repro and "-pch" not in repro


def _sources():
    from tilelang.backend.cuda import backend
    from tilelang.backend.registry import parse_target
    target = parse_target("cuda -arch=sm_90a")
    return [backend.generate(f, target)[1] for f in (K.elementwise_add(), K.softmax(), K.copy_2d())]


@needs_nvrtc
def test_cubin_is_the_same_with_and_without_pch_also_from_threads():
    if not nvrtc.pch_supported():
        pytest.skip("NVRTC older than 12.8: no automatic precompiled header")
    on = CudaOptions.from_config(None, "sm_90a", env={})
    off = dataclasses.replace(on, nvrtc_pch=False)
    srcs = _sources()
    plain = [nvrtc.compile_cuda(s, "sm_90a", options=off).cubin for s in srcs]
    first = nvrtc.compile_cuda(srcs[0], "sm_90a", options=on)   # creates (or reuses) the header
    assert first.cubin == plain[0]
    assert "precompiled header" not in first.log
    with cf.ThreadPoolExecutor(3) as ex:
        cubins = list(ex.map(lambda s: nvrtc.compile_cuda(s, "sm_90a", options=on).cubin, srcs + srcs))
    assert cubins == plain + plain
    split = nvrtc.compile_cuda(srcs[0], "sm_90a", options=dataclasses.replace(on, nvrtc_split_compile=2))
    assert split.cubin[:4] == b"\x7fELF"   # NVRTC took --split-compile=2
    quick = nvrtc.compile_cuda(srcs[0], "sm_90a", options=dataclasses.replace(on, nvrtc_fast_compile="mid"))
    assert quick.cubin[:4] == b"\x7fELF"   # and --Ofast-compile=mid


@needs_nvrtc
def test_sources_that_cannot_reuse_the_header_compile_with_an_empty_log():
    """A user's raw CUDA (not our include prefix) or other options after a generated kernel:
    NVRTC's 'cannot use the precompiled header' warnings (#629, #630) stay out of the log."""
    from tests.backend.cuda.helpers import build
    build(K.gemm(stages=3), "sm_90a")
    raw = 'extern "C" __global__ void quiet(float* x) { x[threadIdx.x] = 1.0f; }'
    assert nvrtc.compile_cuda(raw, "sm_90a").log == ""
    assert nvrtc.compile_cuda(raw, "sm_90a", extra_options=("-lineinfo",)).log == ""
