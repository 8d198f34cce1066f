"""Compile generated C++ to a shared object with the system compiler."""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile

from tilelang.ir.errors import CompileError
from tilelang.backend.c import INCLUDE_DIR as SHARED_INCLUDE_DIR

INCLUDE_DIR = os.path.join(os.path.dirname(__file__), "include")


def find_compiler():
    for c in (os.environ.get("CXX"), "g++", "c++", "clang++"):
        if c and shutil.which(c):
            return shutil.which(c)
    raise CompileError("no C++ compiler found for the CPU backend",
                       hint="install g++ (e.g. `apt-get install g++`) or set CXX")


# Kernels written for CUDA carry nvcc's flags (`T.annotate_compile_flags`, compile_flags=):
# their C++ meaning where there is one, none for device-only ones. nvcc's fast math
# (approximate division and transcendentals) has no safe C++ twin: -ffast-math would also
# assume no NaN/inf, which breaks T.isnan / T.isinf, so it is dropped.
_NVCC_FLAGS = {"--use_fast_math": None, "-use_fast_math": None, "-lineinfo": None,
               "--expt-relaxed-constexpr": None, "--expt-extended-lambda": None, "-Xptxas": None}
_NVCC_PREFIXES = ("--ptxas-options", "-arch=", "--gpu-architecture", "-gencode", "--maxrregcount", "-maxrregcount")


def _host_flags(extra):
    out, it = [], iter(extra)
    for f in it:
        if f == "-Xptxas":
            next(it, None)   # its argument is ptxas's
        elif f in _NVCC_FLAGS:
            out += [_NVCC_FLAGS[f]] if _NVCC_FLAGS[f] else []
        elif not f.startswith(_NVCC_PREFIXES):
            out.append(f)
    return out


def _is_gcc(cxx) -> bool:
    return "clang" not in _compiler_version(cxx).lower()


def flags(extra=()):
    f = ["-O3", "-march=native", "-fopenmp", "-std=c++17", "-shared", "-fPIC", "-w",
         "-fno-math-errno", f"-I{INCLUDE_DIR}", f"-I{SHARED_INCLUDE_DIR}"]
    if _is_gcc(find_compiler()):
        # GCC 12.2 (-O3, AVX masked stores) miscompiles a loop whose body stores to one
        # address from both arms of an `if` under another `if` (the fuzzer's Branch family:
        # elements left unwritten); not if-converting loop bodies avoids it
        # (tests/backend/cpu/test_compiler.py)
        f.append("-fno-tree-loop-if-convert")
    # e.g. TILELANG_CPU_EXTRA_FLAGS="-fsanitize=address -g" to check generated code
    env = os.environ.get("TILELANG_CPU_EXTRA_FLAGS", "").split()
    return f + env + _host_flags(list(extra))


# Every generated kernel starts with `#include "tl_cpu.h"`, whose C++ standard headers are
# ~37k lines: parsing them is most of a small kernel's compile time. A precompiled header,
# built once per (compiler, flags, header contents) in TILELANG_PCH_DIR (default: the
# temporary directory; its name is the content key, so kernel cache directories can change
# without rebuilding it) and found
# before the real header on the include path, removes that cost. g++ ignores a .gch that
# does not match the compile's flags and falls back to the header itself, so this can only
# save time. TILELANG_CPU_PCH=0 turns it off.
_PCH_HEADER = "tl_cpu.h"


@functools.lru_cache(maxsize=None)
def _headers_digest() -> str:
    h = hashlib.sha1()
    for d in (INCLUDE_DIR, SHARED_INCLUDE_DIR):
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            if os.path.isfile(path):
                h.update(name.encode())
                with open(path, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()


def precompiled_header_key(cxx, pch_flags) -> str:
    return hashlib.sha1("\0".join([_compiler_version(cxx), _headers_digest(), *pch_flags]).encode()).hexdigest()[:20]


def precompiled_header_dir(cxx, compile_flags) -> str | None:
    """A directory holding tl_cpu.h.gch for these flags (built on first use), or None."""
    if os.environ.get("TILELANG_CPU_PCH", "1") == "0" or "g++" not in os.path.basename(os.path.realpath(cxx)):
        return None
    pch_flags = [f for f in compile_flags if f != "-shared"]
    key = precompiled_header_key(cxx, pch_flags)
    root = os.environ.get("TILELANG_PCH_DIR") or os.path.join(tempfile.gettempdir(), f"tilelang-pch-{os.getuid()}")
    d = os.path.join(root, key)
    gch = os.path.join(d, _PCH_HEADER + ".gch")
    if os.path.exists(gch):
        return d
    try:
        os.makedirs(d, exist_ok=True)
        tmp = f"{gch}.{os.getpid()}.tmp"
        r = subprocess.run([cxx, *pch_flags, "-x", "c++-header", os.path.join(INCLUDE_DIR, _PCH_HEADER), "-o", tmp],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return None
        os.replace(tmp, gch)   # atomic: a concurrent compile sees the whole file or none
    except OSError:
        return None   # an unwritable cache only costs time
    return d


def compile_source(source: str, extra_flags=()) -> bytes:
    cxx = find_compiler()
    with tempfile.TemporaryDirectory(prefix="tilelang_cpu_") as d:
        src = os.path.join(d, "kernel.cpp")
        so = os.path.join(d, "kernel.so")
        with open(src, "w") as f:
            f.write(source)
        compile_flags = flags(extra_flags)
        pch = precompiled_header_dir(cxx, compile_flags)
        cmd = [cxx, *([f"-I{pch}"] if pch else []), *compile_flags, src, "-o", so]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            keep = os.path.join(tempfile.gettempdir(), f"tilelang_failed_{os.getpid()}.cpp")
            shutil.copy(src, keep)
            who = (f"with compile_flags {list(extra_flags)} (check them)" if extra_flags
                   else "(this is a bug in tilelang)")
            raise CompileError(
                f"the C++ compiler failed on generated code {who}:\n"
                f"{r.stderr[-4000:]}\nsource kept at {keep}\nreproduce: {' '.join(cmd[:-3])} {keep} -o out.so")
        with open(so, "rb") as f:
            return f.read()


@functools.lru_cache(maxsize=None)
def _compiler_version(cxx) -> str:
    try:
        return cxx + ":" + subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except Exception:  # noqa: BLE001
        return cxx


def compiler_identity() -> str:
    """What the binary depends on besides the source: compiler version and host CPU
    (we compile with -march=native), for the cache key."""
    cxx = find_compiler()
    try:
        ver = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except Exception:  # noqa: BLE001
        ver = cxx
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "flags")):
                    cpu += line
                    if line.startswith("flags"):
                        break
    except OSError:
        import platform
        cpu = platform.processor()
    import hashlib
    return ver + ":" + hashlib.sha1(cpu.encode()).hexdigest()[:12] + ":" + " ".join(flags())
