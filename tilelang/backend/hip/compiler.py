"""HIP C++ -> AMD GPU code object, and its assembly, with `hipcc` (ROCm's clang; Debian's
`hipcc` package compiles for gfx90a / gfx940 on a machine without a GPU).

One hipcc run per source: `--cuda-device-only -c -save-temps` leaves the device
assembly (`.s`, the ISA listing with `v_mfma_*`, `.vgpr_spill_count`, `ScratchSize`) and
the linked code object (`.out`, an ELF that hipModuleLoadData takes) side by side."""
from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
import tempfile

from tilelang.ir.errors import CompileError

INCLUDE_DIR = os.path.join(os.path.dirname(__file__), "include")


def find_hipcc():
    """The hipcc executable ($HIPCC, then PATH, then /opt/rocm/bin), or None."""
    env = os.environ.get("HIPCC")
    if env:
        return env
    return shutil.which("hipcc") or next((p for p in ("/opt/rocm/bin/hipcc",) if os.path.exists(p)), None)


@functools.lru_cache(maxsize=None)
def hipcc_version():
    hipcc = find_hipcc()
    if hipcc is None:
        return "none"
    try:
        out = subprocess.run([hipcc, "--version"], capture_output=True, text=True, timeout=60,
                             env=_env()).stdout
    except (OSError, subprocess.SubprocessError):
        return "unusable"
    return " ".join(out.split()[:4])


def _env():
    env = dict(os.environ)
    env.setdefault("HIP_PLATFORM", "amd")
    return env


def command(hipcc, arch, src, out, flags=()):
    return [hipcc, "-x", "hip", f"--offload-arch={arch}", "--cuda-device-only", "-O3", "-std=c++17",
            "-I", INCLUDE_DIR, "-c", src, "-o", out, "-save-temps", *flags]


def compile_source(source, arch, flags=()):
    """(code object bytes, assembly text) of `source` for `arch`."""
    hipcc = find_hipcc()
    if hipcc is None:
        raise CompileError("the HIP backend compiles with hipcc, which is not installed",
                           hint="install ROCm, or Debian's `apt-get install --no-install-recommends hipcc`; "
                                "or set HIPCC to its path")
    with tempfile.TemporaryDirectory(prefix="tl_hip_") as d:
        src = os.path.join(d, "kernel.hip")
        with open(src, "w") as f:
            f.write(source)
        cmd = command(hipcc, arch, src, os.path.join(d, "kernel.bundle"), flags)
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=d, env=_env(), timeout=600)
        if p.returncode != 0:
            errors = "\n".join(l for l in p.stderr.splitlines() if "warning:" not in l)
            keep = os.path.join(tempfile.gettempdir(), f"tl_hip_failed_{abs(hash(source)) % 10**8}.hip")
            with open(keep, "w") as f:
                f.write(source)
            raise CompileError(f"hipcc failed on the generated HIP source ({keep}):\n{errors[-4000:]}",
                               hint="reproduce with: HIP_PLATFORM=amd " + " ".join(
                                   command(hipcc, arch, keep, "kernel.o", flags)))
        asm = _one(d, "*.s")
        co = _one(d, "*.out")
        with open(asm) as f:
            text = f.read()
        with open(co, "rb") as f:
            binary = f.read()
    return binary, text


def _one(d, pattern):
    found = sorted(glob.glob(os.path.join(d, pattern)))
    if not found:
        raise CompileError(f"hipcc left no {pattern} file (is this ROCm's clang?)")
    return found[0]


# reading the assembly ------------------------------------------------------------------
_MFMA = re.compile(r"^\s*(v_mfma_\w+)", re.M)


def mfma_instructions(asm):
    return _MFMA.findall(asm)


def kernel_resources(asm):
    """{kernel: {"vgpr_spill_count": n, "sgpr_spill_count": n, "private_segment_fixed_size": n,
    "vgpr_count": n}} from the code object metadata in the assembly."""
    out = {}
    for block in re.split(r"\n\s*- \.agpr_count:|\n\s*- \.args:", asm):
        name = re.search(r"\.name:\s+(\S+)", block)
        if name is None:
            continue
        info = {}
        for key in ("vgpr_spill_count", "sgpr_spill_count", "private_segment_fixed_size", "vgpr_count"):
            m = re.search(rf"\.{key}:\s+(\d+)", block)
            if m:
                info[key] = int(m.group(1))
        if info:
            out[name.group(1)] = info
    return out


def scratch_sizes(asm):
    """ScratchSize of every function in the listing (bytes of spill/stack memory)."""
    return [int(x) for x in re.findall(r"; ScratchSize: (\d+)", asm)]


# many kernels in one hipcc run (checks over a family of kernels) ------------------------
_ENTRY = re.compile(r'(extern "C" __global__ void __launch_bounds__\(\d+\) )(\w+)\(')


def compile_many(sources, arch):
    """{tag: assembly of that source's functions} for {tag: HIP source}, compiled as one
    translation unit (one hipcc start instead of one per kernel): each source's entries
    are renamed `<tag>__<entry>`."""
    parts, owners = [], {}
    for tag, src in sources.items():
        def rename(m, tag=tag):
            owners[f"{tag}__{m.group(2)}"] = tag
            return f"{m.group(1)}{tag}__{m.group(2)}("
        parts.append(_ENTRY.sub(rename, src))
    _, asm = compile_source("\n".join(parts), arch)
    bodies = function_bodies(asm)
    out = {tag: "" for tag in sources}
    for name, text in bodies.items():
        if name in owners:
            out[owners[name]] += text
    resources = kernel_resources(asm)
    return out, {n: resources.get(n, {}) for n in owners}, owners


def function_bodies(asm):
    """{function: its instructions and trailing comments (ScratchSize ...)} of a listing."""
    out = {}
    pattern = r"^(\w+):[ \t]*(?:;[^\n]*)?\n(.*?)^\.Lfunc_end\d+:(.*?)(?=; -- Begin function|\.amdgpu_metadata|\Z)"
    for m in re.finditer(pattern, asm, re.M | re.S):
        out[m.group(1)] = m.group(2) + m.group(3)
    return out
