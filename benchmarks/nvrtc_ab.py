"""NVRTC time of CUDA sources side by side, compiled in turn (interleaved, so that a noisy
machine slows them alike), with NVRTC's own split (front end / NVVM / ptxas) and a digest of
each cubin's SASS (the same digest: the same code). No GPU needed.

    TL_CUDA_DUMP=/tmp/dump python benchmarks/cold_compile.py --only mla_decode   # the sources
    python benchmarks/nvrtc_ab.py /tmp/dump/main_no_split.cu edited.cu [--reps 6] [--extra "-Xptxas -O2"]

Prints, per source, the minimum and median CPU time of its compiles, the minimum of each
phase, the SASS instruction count, local-memory accesses and the digest."""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import statistics
import sys
import tempfile
import time


def compile_once(nvrtc, N, src, extra):
    opts = N.compile_options("sm_90a", tuple(extra), pch=True)
    fd, tf = tempfile.mkstemp(suffix=".csv")
    os.close(fd)
    os.unlink(tf)
    opts = opts + [f"--time={tf}"]
    _, prog = nvrtc.nvrtcCreateProgram(src.encode(), b"k.cu", 0, [], [])
    t0 = time.process_time()
    err, = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
    cpu = time.process_time() - t0
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, n = nvrtc.nvrtcGetProgramLogSize(prog)
        log = bytearray(max(n, 1))
        nvrtc.nvrtcGetProgramLog(prog, log)
        sys.exit(log.decode(errors="replace"))
    _, n = nvrtc.nvrtcGetCUBINSize(prog)
    cubin = bytearray(n)
    nvrtc.nvrtcGetCUBIN(prog, cubin)
    nvrtc.nvrtcDestroyProgram(prog)
    with open(tf) as f:
        phases = N.read_phases(f.read())
    os.unlink(tf)
    return cpu, phases, bytes(cubin)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("sources", nargs="+")
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--extra", default="", help="more NVRTC options, one string")
    args = ap.parse_args(argv)
    from cuda.bindings import nvrtc
    from tilelang.backend.cuda.host import nvrtc as N
    srcs = [open(p).read() for p in args.sources]
    extra = args.extra.split()
    compile_once(nvrtc, N, srcs[0], extra)   # the precompiled header, made once
    runs = [[] for _ in srcs]
    for _ in range(args.reps):
        for k, src in enumerate(srcs):
            runs[k].append(compile_once(nvrtc, N, src, extra))
    for path, rs in zip(args.sources, runs):
        cpu = [r[0] * 1e3 for r in rs]
        phases = {name: min(r[1].get(name, 0.0) for r in rs) for name in rs[0][1]}
        text = N.sass(rs[-1][2])
        ins = [re.sub(r"/\*[0-9a-f]{4}\*/", "", ln).split(";")[0] for ln in text.splitlines()
               if re.match(r"\s+/\*[0-9a-f]{4}\*/", ln)]
        body = "\n".join(ins)
        print(f"{path}: min {min(cpu):.1f} ms, median {statistics.median(cpu):.1f} ms; "
              + ", ".join(f"{k} {v:.0f}" for k, v in phases.items())
              + f"; {len(ins)} SASS instructions, {len(re.findall('LDL|STL', body))} LDL/STL, "
              f"digest {hashlib.md5(body.encode()).hexdigest()[:8]}")


if __name__ == "__main__":
    main()
