"""options.py: the CUDA backend's switches, typed and read once."""
import pathlib
import re

import pytest

from tests.backend.cuda.conftest import needs_nvrtc
from tilelang.backend.cuda.options import CudaOptions, switches_identity


def test_defaults_and_environment():
    assert CudaOptions.from_config(None, "sm_90a", env={}) == CudaOptions()
    o = CudaOptions.from_config(None, "sm_90a", env={"TILELANG_CUDA_TMA": "0", "TILELANG_CUDA_PINGPONG": "1",
                                                     "TILELANG_CUDA_TMA_REFILL": "wait"})
    assert (o.tma, o.pingpong, o.tma_refill_wait, o.wgmma_rs) == (False, True, True, True)
    assert o.describe() == "tma=False, bulk_tiles=False, tma_refill_wait=True, pingpong=True"
    assert CudaOptions().describe() == "defaults"


def test_tma_needs_sm90a_and_follows_the_pass_config():
    assert not CudaOptions.from_config(None, "sm_80", env={}).tma
    assert not CudaOptions.from_config({"tl.disable_tma_lower": True}, "sm_90a", env={}).tma
    assert CudaOptions.from_config({"tl.disable_tma_lower": False}, "sm_90a", env={}).tma


def test_bulk_tile_copies_need_sm90_only():
    assert CudaOptions.from_config(None, "sm_90", env={}).bulk_tiles
    assert not CudaOptions.from_config(None, "sm_90", env={}).tma   # wgmma pipelines need sm_90a
    assert not CudaOptions.from_config(None, "sm_80", env={}).bulk_tiles
    assert not CudaOptions.from_config({"tl.disable_tma_lower": True}, "sm_90a", env={}).bulk_tiles


def test_every_switch_and_pass_config_the_backend_reads_is_a_field():
    o = CudaOptions.from_config({"tl.lower_trace": "/tmp/trace"}, "sm_90a",
                                env={"TL_CUDA_LINEINFO": "1", "TL_CUDA_DUMP": "/tmp/cu", "TL_LOWER_TRACE": "/tmp/x"})
    assert (o.lineinfo, o.dump_dir, o.lower_trace) == (True, "/tmp/cu", "/tmp/trace")  # the pass config wins
    assert CudaOptions.from_config(None, "sm_90a", env={"TL_LOWER_TRACE": "/tmp/x"}).lower_trace == "/tmp/x"
    o = CudaOptions.from_config({"tl.disable_tma_lower": True}, "sm_90a", env={})
    assert not o.tma_atomics and CudaOptions.from_config(None, "sm_80", env={}).tma_atomics


def test_a_misspelt_switch_is_warned_about_once():
    import warnings
    from tilelang.backend.cuda import options
    options._warned.discard("TILELANG_CUDA_PINPONG")
    with pytest.warns(UserWarning, match="TILELANG_CUDA_PINPONG is not a CUDA backend switch"):
        CudaOptions.from_config(None, "sm_90a", env={"TILELANG_CUDA_PINPONG": "1"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CudaOptions.from_config(None, "sm_90a", env={"TILELANG_CUDA_PINPONG": "1"})


def test_the_cache_identity_is_the_switches_that_change_the_output():
    assert switches_identity({}) == ""
    # a switch at its default, the dump directory and the trace do not change the kernel
    assert switches_identity({"TILELANG_CUDA_TMA_RING": "1", "TL_CUDA_DUMP": "/tmp/cu", "TL_LOWER_TRACE": "/t"}) == ""
    assert switches_identity({"TILELANG_CUDA_TMA": "0", "TL_CUDA_LINEINFO": "1"}) == \
        "TILELANG_CUDA_TMA=False,TL_CUDA_LINEINFO=True"
    assert switches_identity({"TILELANG_CUDA_TMA": "off"}) == switches_identity({"TILELANG_CUDA_TMA": "0"})


def test_the_backend_identity_derives_from_the_options(monkeypatch):
    from tilelang.backend.cuda import backend
    base = backend.identity()
    monkeypatch.setenv("TL_CUDA_DUMP", "/tmp/cu")
    assert backend.identity() == base
    monkeypatch.setenv("TL_CUDA_LINEINFO", "1")     # -lineinfo changes the cubin
    assert backend.identity() == base + "TL_CUDA_LINEINFO=True"


def _two_kernels():
    import tilelang.language as T

    @T.prim_func
    def f(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            for i in T.Parallel(128):
                B[bx * 128 + i] = A[bx * 128 + i] + 1.0
        with T.Kernel(2, threads=128) as bx:
            for i in T.Parallel(128):
                A[bx * 128 + i] = B[bx * 128 + i] * 2.0
    return f


def test_options_are_read_once_per_compile(monkeypatch):
    from tilelang.backend.cuda import backend
    from tilelang.backend.cuda import options as O
    from tilelang.backend.registry import parse_target
    calls = []
    real = O.read_switches
    monkeypatch.setattr(O, "read_switches", lambda env=None: calls.append(1) or real(env))
    monkeypatch.setenv("TILELANG_CUDA_WGMMA_RS", "0")
    _, source, meta = backend.generate(_two_kernels(), parse_target({"kind": "cuda", "arch": "sm_90a"}), None)
    assert len(meta["kernels"]) == 2 and len(calls) == 1


def test_nvrtc_gets_lineinfo_from_the_options(monkeypatch):
    from tilelang.backend.cuda.host import nvrtc
    assert "-lineinfo" in nvrtc.compile_options("sm_90a", lineinfo=True)
    assert "-lineinfo" not in nvrtc.compile_options("sm_90a")
    seen = []
    monkeypatch.setattr(nvrtc, "compile_options", lambda arch, extra=(), lineinfo=False, fast_math=True, pch=False: seen.append(lineinfo) or
                        (_ for _ in ()).throw(RuntimeError("stop")))
    with pytest.raises(RuntimeError, match="stop"):
        nvrtc.compile_cuda("", "sm_90a", options=CudaOptions(lineinfo=True))
    assert seen == [True]


def test_only_options_py_reads_the_switches_and_pass_configs():
    # every decision reads plan.options / cg.options / ctx.config[OPTIONS]; the rest of the
    # environment the backend reads says where the CUDA toolkit's headers and tools are
    root = pathlib.Path(__file__).resolve().parents[3] / "tilelang" / "backend" / "cuda"
    toolkit = {"CUDA_HOME", "CUDA_PATH", "CC"}   # CC: the C compiler of the launch extension (host/c_launch.py)
    readers = []
    for p in sorted(root.rglob("*.py")):
        if p.name == "options.py":
            continue
        text = p.read_text()
        for m in re.finditer(r"environ\.get\(\"([A-Z_]+)\"|getenv\(\"([A-Z_]+)\"|environ\[\"([A-Z_]+)\"\]", text):
            if (m.group(1) or m.group(2) or m.group(3)) not in toolkit:
                readers.append(f"{p.relative_to(root)}: {m.group(0)}")
        readers += [f"{p.relative_to(root)}: {m.group(0)}" for m in re.finditer(r"\.get\(\"tl\.[a-z_]+\"", text)]
    assert readers == []


def test_nvcc_compile_flags_become_nvrtc_options():
    from tilelang.backend.cuda.options import nvrtc_flags
    flags = ["-O3", "-Wno-deprecated-declarations", "-U__CUDA_NO_HALF_OPERATORS__", "-DNDEBUG", "--use_fast_math",
             "--ptxas-options=-v,--register-usage-level=10", "--expt-relaxed-constexpr", "-Xcompiler", "-fPIC",
             "-arch=sm_90a", "--maxrregcount=128", "-lineinfo"]
    assert nvrtc_flags(flags) == ("-U__CUDA_NO_HALF_OPERATORS__", "-DNDEBUG", "--use_fast_math", "--ptxas-options=-v",
                                  "--ptxas-options=--register-usage-level=10", "--maxrregcount=128", "-lineinfo")
    assert nvrtc_flags("-O3 -DX=1") == ("-DX=1",)
    o = CudaOptions.from_config({"compile_flags": ["-O3", "-DX=1"], "tl.disable_fast_math": True}, "sm_90a", env={})
    assert (o.compile_flags, o.fast_math) == (("-DX=1",), False)
    assert CudaOptions.from_config(None, "sm_90a", env={}).fast_math


def test_the_compile_reaches_nvrtc_with_the_kernels_flags(monkeypatch):
    from tilelang.backend.cuda import backend
    from tilelang.backend.cuda.host import nvrtc
    from tilelang.backend.registry import parse_target
    assert "--use_fast_math" not in nvrtc.compile_options("sm_90a", fast_math=False)
    assert "--use_fast_math" in nvrtc.compile_options("sm_90a")
    seen = []
    monkeypatch.setattr(nvrtc, "compile_options", lambda arch, extra=(), lineinfo=False, fast_math=True, pch=False:
                        seen.append((tuple(extra), fast_math)) or (_ for _ in ()).throw(RuntimeError("stop")))
    with pytest.raises(RuntimeError, match="stop"):
        backend.build(_two_kernels(), parse_target({"kind": "cuda", "arch": "sm_90a"}),
                      {"compile_flags": ["-O3", "--maxrregcount=64"], "tl.disable_fast_math": True})
    assert seen == [(("--maxrregcount=64",), False)]


@needs_nvrtc
def test_an_option_nvrtc_does_not_know_fails_with_its_name():
    from tilelang.backend.cuda.host.nvrtc import CudaCompileError, compile_cuda
    src = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }'
    with pytest.raises(CudaCompileError, match="--no-such-flag") as e:
        compile_cuda(src, "sm_90a", options=CudaOptions(compile_flags=("--no-such-flag",)))
    assert "compile_flags" in str(e.value)
    compile_cuda(src, "sm_90a", options=CudaOptions(compile_flags=nvrtc_flags_of(["-O3", "--ptxas-options=-v,--warn-on-spills",
                                                                                   "-DNDEBUG", "--maxrregcount=64"])))


def nvrtc_flags_of(flags):
    from tilelang.backend.cuda.options import nvrtc_flags
    return nvrtc_flags(flags)
