"""CUDA C++ -> cubin (and PTX) with NVRTC through `cuda-bindings`, plus a SASS
dump through `cuobjdump`. Compile errors show the failing generated source lines."""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache

from tilelang.ir.errors import TileLangError
from tilelang.backend.c import INCLUDE_DIR as SHARED_INCLUDE_DIR

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "include")


class CudaCompileError(TileLangError):
    """NVRTC rejected the generated source."""


@dataclass
class Compiled:
    cubin: bytes
    ptx: str
    log: str
    phases: dict = field(default_factory=dict)   # NVRTC's own split in ms (CudaOptions.nvrtc_time), see read_phases


# NVRTC's --time rows (CUDA 12.x+: "file, phase, ms, unit") -> the names cold_compile reports
_PHASES = {"CUDA C++ Frontend": "frontend", "NVVM Optimizer": "nvvm", "PTX Translation": "ptxas"}


def read_phases(text: str) -> dict:
    """{frontend, nvvm, ptxas: ms} from the CSV NVRTC's --time=<file> writes (its title
    row only where NVRTC created the file); a phase this NVRTC names otherwise keeps its name."""
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) >= 3:
            try:
                ms = float(cells[2])
            except ValueError:
                continue
            name = _PHASES.get(cells[1], cells[1])
            out[name] = out.get(name, 0.0) + ms
    return out


@lru_cache(maxsize=1)
def cuda_include_dirs() -> tuple:
    """Where cuda_fp16.h and friends live: the nvidia-cuda-* wheels first, then the
    toolkit. (cuda_fp16.h needs the CCCL headers on the 13.x line.)"""
    out = []
    try:
        import nvidia
        for root in nvidia.__path__:
            for inc in sorted(glob.glob(os.path.join(root, "*", "include"))):
                if os.path.exists(os.path.join(inc, "cuda_fp16.h")):
                    out.append(inc)
                    cccl = os.path.join(inc, "cccl")
                    if os.path.isdir(cccl):
                        out.append(cccl)
    except ImportError:
        pass
    # the toolkit after the wheels: fills in headers a partial wheel set lacks
    if True:
        for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
            if home and os.path.exists(os.path.join(home, "include", "cuda_fp16.h")):
                out.append(os.path.join(home, "include"))
                if os.path.isdir(os.path.join(home, "include", "cccl")):
                    out.append(os.path.join(home, "include", "cccl"))
                break
    return tuple(out)


def nvrtc_available() -> bool:
    try:
        from cuda.bindings import nvrtc
        err, _, _ = nvrtc.nvrtcVersion()
        return err == nvrtc.nvrtcResult.NVRTC_SUCCESS and bool(cuda_include_dirs())
    except Exception:  # noqa: BLE001 - missing wheel or library
        return False


def _check(nvrtc, err, what):
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, msg = nvrtc.nvrtcGetErrorString(err)
        raise CudaCompileError(f"{what} failed: {msg.decode() if isinstance(msg, bytes) else msg}")


# NVRTC's automatic precompiled header: the `#include` lines every generated source starts
# with (tl_cuda/tl.h and the cuda_fp16/bf16/fp8 headers under it) are parsed by the first
# compile of the process and reused by the next ones with the same options (most of a small
# kernel's compile time); the messages saying so would fill the log that callers read, and so
# would the warnings that a source starting otherwise (a user's raw CUDA) or compiled with other
# options cannot reuse the header parsed (#630, #629): it is then parsed as without the option
PCH_OPTIONS = ("-pch", "--pch-messages=false", "--diag-suppress=629,630")


def compile_options(arch: str, extra=(), lineinfo=False, fast_math=True, pch=False) -> list:
    opts = [f"--gpu-architecture={arch}", "-std=c++17", "-default-device"] + (["--use_fast_math"] if fast_math else []) + \
        [f"-I{INCLUDE_DIR}", f"-I{SHARED_INCLUDE_DIR}"] + [f"-I{d}" for d in cuda_include_dirs()]
    if lineinfo:
        opts.append("-lineinfo")
    if pch and pch_supported():
        opts += PCH_OPTIONS
    return opts + list(extra)


@lru_cache(maxsize=1)
def pch_supported() -> bool:
    """NVRTC 12.8 and later take the automatic precompiled header options."""
    try:
        from cuda.bindings import nvrtc
        err, major, minor = nvrtc.nvrtcVersion()
        return err == nvrtc.nvrtcResult.NVRTC_SUCCESS and (major, minor) >= (12, 8)
    except Exception:  # noqa: BLE001 - no NVRTC: nothing to compile with anyway
        return False


def compile_cuda(source: str, arch: str, name: str = "kernel.cu", extra_options=(), options=None) -> Compiled:
    """Compile `source` to a cubin for `arch` (e.g. 'sm_90a') with the compile's
    CudaOptions (`lineinfo`, `dump_dir`; read from the environment when not given)."""
    if options is None:
        from tilelang.backend.cuda.options import CudaOptions
        options = CudaOptions.from_config(None, arch)
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:
        raise CudaCompileError("the CUDA backend needs `cuda-bindings` and `nvidia-cuda-nvrtc`",
                               hint="pip install 'tilelang[cuda]'") from e
    from tilelang.backend.cuda.options import ptxas_options
    opts = compile_options(arch, ptxas_options(options) + tuple(options.compile_flags) + tuple(extra_options),
                           lineinfo=options.lineinfo,
                           fast_math=options.fast_math, pch=options.nvrtc_pch)
    if options.nvrtc_split_compile:
        opts.append(f"--split-compile={options.nvrtc_split_compile}")
    if options.nvrtc_fast_compile:
        opts.append(f"--Ofast-compile={options.nvrtc_fast_compile}")
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    _check(nvrtc, err, "nvrtcCreateProgram")
    time_file = None
    if options.nvrtc_time:   # NVRTC writes its phases' times there (the header reuse is unaffected)
        fd, time_file = tempfile.mkstemp(prefix="tl_nvrtc_time_", suffix=".csv")
        os.close(fd)
    try:
        run_opts = opts + ([f"--time={time_file}"] if time_file else [])
        err, = nvrtc.nvrtcCompileProgram(prog, len(run_opts), [o.encode() for o in run_opts])
        # NVRTC writes into the buffers it is given: they must be fresh, writable memory.
        # (`b" " * n` is CPython's shared one-byte object when n == 1, the size of an empty
        # log: NVRTC's NUL then turned every " " literal compiled later in the process into
        # "", e.g. f"{type} {name}" into "int32_tbx".)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = bytearray(max(size, 1))
        nvrtc.nvrtcGetProgramLog(prog, log)
        log = log.decode(errors="replace").rstrip("\x00 \n")
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CudaCompileError(_format_failure(source, log, name, opts, options.dump_dir),
                                   hint=(f"the kernel's compile_flags {list(options.compile_flags)} reach NVRTC: "
                                         "check them" if options.compile_flags else
                                         "set TL_CUDA_DUMP=<dir> to keep the generated source"))
        _, n = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = bytearray(n)
        _check(nvrtc, nvrtc.nvrtcGetCUBIN(prog, cubin)[0], "nvrtcGetCUBIN")
        cubin = bytes(cubin)
        ptx = ""
        _, n = nvrtc.nvrtcGetPTXSize(prog)
        if n:
            buf = bytearray(n)
            if nvrtc.nvrtcGetPTX(prog, buf)[0] == nvrtc.nvrtcResult.NVRTC_SUCCESS:
                ptx = buf.decode(errors="replace").rstrip("\x00")
        return Compiled(cubin, ptx, log, _take_phases(time_file))
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
        if time_file and os.path.exists(time_file):
            os.unlink(time_file)


def serialized_wgmma(log: str) -> list:
    """[(kernel, ptxas's reason)] for each kernel whose wgmma instructions ptxas serialized
    (its "Potential Performance Loss" info, e.g. C7518 "... due to program dependence on
    compiler-inserted WG.DP in divergent path"): every wgmma then waits for the one before,
    the kernel still correct but its tensor cores idle between them."""
    out = []
    for m in re.finditer(r"wgmma\.mma_async instructions are serialized due to (.*?) in the function '(\w+)'", log):
        out.append((m.group(2), m.group(1).strip()))
    return out


def _take_phases(time_file) -> dict:
    if not time_file:
        return {}
    try:
        with open(time_file) as f:
            return read_phases(f.read())
    except OSError:
        return {}


def _format_failure(source, log, name, opts, dump_dir=None, context=2):
    """The NVRTC log, then each referenced line of the generated source with context,
    then how to reproduce with nvcc."""
    lines = source.splitlines()
    out = [f"NVRTC failed to compile the generated CUDA source:\n{log}"]
    seen = set()
    for m in re.finditer(rf"{re.escape(name)}\((\d+)\)", log):
        ln = int(m.group(1))
        if ln in seen:
            continue
        seen.add(ln)
        lo, hi = max(1, ln - context), min(len(lines), ln + context)
        out.append(f"--- {name}:{ln} ---")
        for i in range(lo, hi + 1):
            out.append(f"{'>' if i == ln else ' '}{i:5d} | {lines[i - 1]}")
        if len(seen) >= 5:
            break
    dump = _dump_source(source, name, dump_dir)
    if dump:
        out.append(f"source written to {dump}; reproduce with: nvcc -cubin "
                   + " ".join(o.replace("--gpu-architecture=", "-arch=") for o in opts
                              if o != "-default-device" and o not in PCH_OPTIONS)
                   + f" {dump}")
    return "\n".join(out)


def _dump_source(source, name, dump_dir=None):
    d = dump_dir or tempfile.gettempdir()
    try:
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, f"tl_failed_{abs(hash(source)) & 0xffffffff:08x}_{name}")
        with open(path, "w") as f:
            f.write(source)
        return path
    except OSError:
        return None


@lru_cache(maxsize=1)
def cuobjdump_path():
    """cuobjdump from PATH, the toolkit, or the nvidia-cuda-cuobjdump wheel."""
    p = shutil.which("cuobjdump")
    if p:
        return p
    cands = [os.path.join(h, "bin", "cuobjdump") for h in
             (os.environ.get("CUDA_HOME"), "/usr/local/cuda") if h]
    try:
        import nvidia
        for root in nvidia.__path__:
            cands += glob.glob(os.path.join(root, "*", "bin", "cuobjdump"))
    except ImportError:
        pass
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def sass(cubin: bytes) -> str:
    """The SASS of a cubin (cuobjdump -sass)."""
    tool = cuobjdump_path()
    if tool is None:
        raise RuntimeError("cuobjdump not found (pip install nvidia-cuda-cuobjdump)")
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin)
        path = f.name
    try:
        r = subprocess.run([tool, "-sass", path], capture_output=True, text=True, check=False, env=_tool_env(tool))
        if r.returncode != 0:
            raise RuntimeError(f"cuobjdump failed: {r.stderr.strip()}")
        return r.stdout
    finally:
        os.unlink(path)


def _tool_env(tool):
    """cuobjdump -sass runs nvdisasm, found on PATH: the wheels put both in one bin/."""
    env = dict(os.environ)
    d = os.path.dirname(tool)
    env["PATH"] = d + os.pathsep + env.get("PATH", "")
    if os.path.exists(os.path.join(d, "nvdisasm")):
        env.setdefault("NVDISASM_PATH", d)
    return env


def resource_usage(cubin: bytes) -> str:
    """Registers / shared / stack per kernel (cuobjdump -res-usage)."""
    tool = cuobjdump_path()
    if tool is None:
        return ""
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin)
        path = f.name
    try:
        return subprocess.run([tool, "-res-usage", path], capture_output=True, text=True).stdout
    finally:
        os.unlink(path)
