"""Runs the HIP backend's generated source on the CPU (hip/hip_runtime.h here stands in
for ROCm's): one host thread per GPU thread, wavefront collectives and MFMA emulated by
their ISA definitions. It checks what compiling cannot: that the printed kernel computes
the tile program's values (thread mapping, barriers, MFMA lane layouts, shuffles)."""
from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np

OPT = os.environ.get("TL_HIP_EMU_OPT", "-O1")
HERE = os.path.dirname(os.path.abspath(__file__))
_CT = {"int32": "int", "int64": "int64_t", "float32": "float", "float64": "double", "bool": "bool"}


def clang():
    return shutil.which("clang++-15") or shutil.which("clang++")


FP8 = ("float tl_emu_fp8(const unsigned char* p, int r) { tl::float8_e4m3fnuz_t v; v.bits = p[r]; "
       "return (float)v; }\n")


def rename(source, meta, prefix):
    """`source` and `meta` with every entry renamed `<prefix>_<entry>` (several programs in
    one library)."""
    meta = dict(meta, kernels=[dict(k, entry=f"{prefix}_{k['entry']}") for k in meta["kernels"]])
    for k in meta["kernels"]:
        source = re.sub(r"\b" + k["entry"][len(prefix) + 1:] + r"\(", k["entry"] + "(", source)
    return source, meta


def _wrapper(meta, source):
    """extern "C" tl_emulate_<entry>(void** args, gx, gy, gz, threads) per kernel."""
    out = []
    for k in meta["kernels"]:
        sig = re.search(r'void __launch_bounds__\(\d+\) ' + k["entry"] + r'\((.*?)\) \{', source, re.S).group(1)
        types = [p.strip().rsplit(" ", 1)[0] for p in sig.split(",")]
        args = ", ".join(f"*({t}*)args[{i}]" for i, t in enumerate(types))
        out.append(f'extern "C" void tl_emulate_{k["entry"]}(void** args, unsigned gx, unsigned gy, unsigned gz, '
                   f'unsigned tx) {{ tl_emu_launch(gx, gy, gz, tx, [&]() {{ {k["entry"]}({args}); }}); }}')
    return "\n".join(out) + "\n"


def build(programs):
    """A ctypes library of [(source, meta)] (the HIP backend's output, entries distinct) with
    their launch wrappers."""
    from tilelang.backend.hip.compiler import INCLUDE_DIR
    d = tempfile.mkdtemp(prefix="tl_hip_emu_")
    src = os.path.join(d, "k.cpp")
    with open(src, "w") as f:
        f.write("".join(src + "\n" + _wrapper(meta, src) for src, meta in programs) + FP8)
    lib = os.path.join(d, "k.so")
    cmd = [clang(), "-std=c++20", OPT, "-shared", "-fPIC", "-pthread", "-w", "-I", HERE, "-I", INCLUDE_DIR,
           "-x", "c++", src, "-o", lib]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"emulator build failed ({src}):\n{p.stderr[-3000:]}")
    return ctypes.CDLL(lib)


def run(lib, meta, arrays, ints=(), floats=()):
    """Launch every kernel of `meta` on numpy `arrays` (in parameter order), in place."""
    work = [np.zeros([int(eval(s, {"__builtins__": {}}, {"ints": list(ints), "min": min, "max": max}))
                      for s in w["shape"]], dtype=w["dtype"]) for w in meta.get("workspaces", [])]
    bufs = [np.ascontiguousarray(a) for a in list(arrays) + work]
    for a, b in zip(arrays, bufs):
        assert a is b, "arrays must be C-contiguous"
    vals, bi, ii, fi = [], 0, 0, 0
    for cls, dt in meta["param_types"]:
        if cls == "buffer":
            vals.append(ctypes.c_void_p(bufs[bi].ctypes.data))
            bi += 1
        elif cls == "int":
            vals.append({"int32": ctypes.c_int32, "int64": ctypes.c_int64}[dt](int(ints[ii])))
            ii += 1
        else:
            vals.append({"float32": ctypes.c_float, "float64": ctypes.c_double}[dt](float(floats[fi])))
            fi += 1
    argv = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in vals])
    env = {"ints": list(ints), "min": min, "max": max, "int": int}
    for k in meta["kernels"]:
        grid = [int(eval(g, {"__builtins__": {}}, env)) for g in k["grid"]]
        getattr(lib, f"tl_emulate_{k['entry']}")(argv, *[ctypes.c_uint(g) for g in grid],
                                                 ctypes.c_uint(k["threads"][0]))
