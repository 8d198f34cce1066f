"""Cold compile time of the kernels of issue 16, split into its parts (no GPU needed:
NVRTC compiles sm_90a on any machine; on a GPU machine the module load is timed too).

    python benchmarks/cold_compile.py [--arch sm_90a] [--only gemm_f16_128x256x64,...]
                                      [--profile <kernel> [--top 30]] [--out <dir>]

The process first pays its one-time costs (importing the package and the passes, loading
NVRTC, a first tiny kernel) and reports them apart; then every kernel is compiled with the
kernel cache off, each part timed:

    frontend   the factory call: Python -> IR (tracing)  [--clock cpu: CPU time, for a busy machine]
    key        the cache key (structural hash of the IR)
    passes     the pass pipeline (generic + CUDA; the slowest passes named)
    codegen    printing the CUDA source
    nvrtc      CUDA -> PTX -> cubin, and NVRTC's own split of it (its --time, TILELANG_CUDA_NVRTC_TIME):
               fe (C++ front end: what the precompiled header leaves of parsing), nvvm (the NVVM
               optimizer) and ptxas (PTX -> SASS, inside NVRTC), in wall time
    load       cuModuleLoadData and the launcher (only where a GPU is visible)
    other      the rest of `tilelang.compile` (argument signature, ...)

`--profile <kernel>` runs cProfile over that kernel's cold compile and prints the top
functions by cumulative and by own time. Writes cold_compile.json/.md under --out (or $OUT)
when given."""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import pathlib
import platform
import pstats
import subprocess
import sys
import time

T0 = time.perf_counter()
ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["TILELANG_DISABLE_CACHE"] = "1"
os.environ.setdefault("TILELANG_CUDA_NVRTC_TIME", "1")   # NVRTC's split (the cubin is the same)

import tilelang  # noqa: E402
from example_modules import load_example, load_module  # noqa: E402 (benchmarks/)
import tilelang.language as T  # noqa: E402
IMPORT_S = time.perf_counter() - T0

PUB = ROOT / ".pub" / "examples"
CLOCK = time.perf_counter   # --clock cpu: time.process_time (this process's CPU time; NVRTC runs in it)


def example(name, file=None):
    return load_example(name, file, prefix="cc_example")


def mla_factory():
    """The published MLA decode example's kernel (its own file when this checkout has the
    published examples, else ours), at b64 h128 kv8192 d512+64 with the example's blocks."""
    path = PUB / "deepseek_mla" / "example_mla_decode.py"
    if path.exists():
        mod = load_module(path, "cc_pub_mla_decode")
        return lambda: (mod.flashattn, (64, 128, 1, 8192, 512, 64, 64, 64, 1, (512 + 64) ** -0.5), {})
    mla = example("deepseek_mla", "mla_decode")
    return lambda: (mla.mla_decode, (64, 128, 8192, 512, 64), dict(block_H=64, block_N=64, num_split=1,
                                                                     threads=256))


def kernels():
    """(name, thunk returning (jit factory, args, kwargs)) for every kernel of issue 16."""
    g, fa = example("gemm"), example("flash_attention")
    rn, sm, ew = example("rms_norm"), example("softmax"), example("elementwise")
    f16, bf16 = T.float16, "bfloat16"
    return [
        ("gemm_f16_8192_128x256x64_s3", lambda: (g.matmul, (8192, 8192, 8192), dict(
            block_M=128, block_N=256, block_K=64, num_stages=3, threads=256))),
        ("gemm_f16_8192_128x128x64_s3", lambda: (g.matmul, (8192, 8192, 8192), dict(
            block_M=128, block_N=128, block_K=64, num_stages=3, threads=256))),
        ("gemm_bf16_nt_relu_128x128x64_s3", lambda: (g.matmul, (4096, 4096, 4096), dict(
            trans_B=True, relu=True, dtype=bf16, block_M=128, block_N=128, block_K=64, num_stages=3,
            threads=256))),
        ("flash_fwd_d128", lambda: (fa.flash_attention, (8, 16, 4096, 4096, 128), dict(
            is_causal=False, block_M=128, block_N=128, num_stages=2, threads=256))),
        ("flash_fwd_d128_causal", lambda: (fa.flash_attention, (8, 16, 4096, 4096, 128), dict(
            is_causal=True, block_M=128, block_N=128, num_stages=2, threads=256))),
        ("flash_fwd_d64", lambda: (fa.flash_attention, (16, 16, 2048, 2048, 64), dict(
            is_causal=False, block_M=128, block_N=128, num_stages=2, threads=256))),
        ("mla_decode", mla_factory()),
        ("rmsnorm", lambda: (rn.rms_norm, (16384, 4096), dict(dtype=f16, block_M=1, block_N=4096, threads=256))),
        ("softmax", lambda: (sm.softmax, (16384, 4096), dict(dtype=f16, block_M=4, block_N=1024, threads=256))),
        ("add", lambda: (ew.elementwise_add, (4096, 2 ** 28 // 4096), dict(
            in_dtype=f16, out_dtype=f16, block_M=1, block_N=1024, threads=256))),
    ]


class Parts:
    """Times the stages of one `tilelang.compile` by wrapping the functions that do them."""

    def __init__(self):
        from tilelang.backend.cuda import CudaBackend
        from tilelang.backend.cuda.emit import module as emit_module
        from tilelang.backend.cuda.host import nvrtc
        from tilelang.jit.kernel import JITKernel
        self.t = {}
        self.timings = []
        self.nvrtc_phases = {}   # ms per NVRTC phase, summed over the compile's NVRTC calls
        self._patches = [(CudaBackend, "lower", "passes"), (emit_module, "generate", "codegen"),
                         (nvrtc, "compile_cuda", "nvrtc"), (CudaBackend, "load", "load"),
                         (JITKernel, "cache_key", "key")]
        self._orig = []

    def __enter__(self):
        import tilelang.backend.cuda as cuda_pkg
        for owner, attr, part in self._patches:
            orig = owner.__dict__[attr]
            self._orig.append((owner, attr, orig))
            setattr(owner, attr, self._timed(orig, part))
        # the backend imported `generate` / `compile_cuda` inside its methods: patched at the module
        self._cuda_pkg = cuda_pkg
        return self

    def __exit__(self, *exc):
        for owner, attr, orig in self._orig:
            setattr(owner, attr, orig)

    def _timed(self, fn, part):
        def wrapper(*a, **k):
            t0 = CLOCK()
            try:
                out = fn(*a, **k)
                for name, ms in (getattr(out, "phases", None) or {}).items() if part == "nvrtc" else ():
                    self.nvrtc_phases[name] = self.nvrtc_phases.get(name, 0.0) + ms
                return out
            finally:
                self.t[part] = self.t.get(part, 0.0) + CLOCK() - t0
                if part == "passes" and len(a) >= 4 and hasattr(a[3], "timings"):
                    self.timings = list(a[3].timings)
        return wrapper


def compile_one(thunk, arch):
    """(row, kernel): one cold compile with its parts."""
    factory, args, kwargs = thunk()
    t0 = CLOCK()
    func = factory.get_tir(*args, **kwargs)
    frontend = CLOCK() - t0
    jk = {k: v for k, v in factory.jit_kwargs.items() if k in ("out_idx", "pass_configs", "compile_flags")}
    with Parts() as p:
        t1 = CLOCK()
        try:
            kernel = tilelang.compile(func, target=f"cuda -arch={arch}", **jk)
        except Exception as e:  # noqa: BLE001 - no GPU: the module load fails after the compile
            if "load" not in p.t:
                raise
            kernel, p.t["load_error"] = None, f"{type(e).__name__}: {e}"
        total = CLOCK() - t1
    row = {"frontend_s": frontend, "compile_s": total, "total_s": frontend + total}
    for part in ("key", "passes", "codegen", "nvrtc", "load"):
        row[f"{part}_s"] = p.t.get(part, 0.0)
    # codegen wraps nothing else; `generate` of the backend = passes + codegen: keep them apart
    row["other_s"] = total - sum(row[f"{x}_s"] for x in ("key", "passes", "codegen", "nvrtc", "load"))
    for name in ("frontend", "nvvm", "ptxas"):
        if name in p.nvrtc_phases:
            row[f"nvrtc_{name}_s"] = p.nvrtc_phases[name] / 1e3
    row["slowest_passes"] = [(n, round(s * 1e3, 1)) for n, s in sorted(p.timings, key=lambda x: -x[1])[:4]]
    return row, kernel


def one_time_costs(arch):
    """The process's one-time work before its first kernel: loading NVRTC, the first
    (tiny) kernel (imports of the passes, header caches)."""
    out = {"import_tilelang_s": IMPORT_S}
    t0 = CLOCK()
    from cuda.bindings import nvrtc
    nvrtc.nvrtcVersion()
    out["nvrtc_load_s"] = CLOCK() - t0

    @T.prim_func
    def tiny(A: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(32):
                A[i] = A[i] + 1.0
    t0 = CLOCK()
    try:
        tilelang.compile(tiny, target=f"cuda -arch={arch}")
    except Exception:  # noqa: BLE001 - no GPU to load it on
        pass
    out["first_tiny_kernel_s"] = CLOCK() - t0
    t0 = CLOCK()
    try:
        tilelang.compile(tiny, target=f"cuda -arch={arch}")
    except Exception:  # noqa: BLE001
        pass
    out["second_tiny_kernel_s"] = CLOCK() - t0
    return out


def profile(thunk, arch, top):
    factory, args, kwargs = thunk()
    jk = {k: v for k, v in factory.jit_kwargs.items() if k in ("out_idx", "pass_configs", "compile_flags")}
    pr = cProfile.Profile()
    pr.enable()
    try:
        tilelang.compile(factory.get_tir(*args, **kwargs), target=f"cuda -arch={arch}", **jk)
    except Exception as e:  # noqa: BLE001
        print("(compile raised:", type(e).__name__, str(e)[:200], ")")
    pr.disable()
    st = pstats.Stats(pr).strip_dirs()
    st.sort_stats("cumulative").print_stats(top)
    st.sort_stats("tottime").print_stats(top)


def table(rows, meta):
    ms = lambda s: f"{s * 1e3:.0f}"  # noqa: E731
    lines = [f"# Cold compile — {meta['date']} — {meta['machine']} — commit {meta['commit']}", "",
             f"Command: `python benchmarks/cold_compile.py --arch {meta['arch']} --clock {meta['clock']}`. "
             f"Milliseconds of {'CPU' if meta['clock'] == 'cpu' else 'wall'} time, kernel cache off, one process "
             "(its one-time costs below, apart; the import in wall time).", "",
             "| kernel | total | frontend | key | passes | codegen | nvrtc (fe / nvvm / ptxas) | load | other | "
             "slowest passes (ms) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['kernel']} | error: {r['error'][:120]} |||||||||")
            continue
        sp = ", ".join(f"{n} {t}" for n, t in r["slowest_passes"])
        load_ = ms(r["load_s"]) + ("*" if r.get("load_error") else "")
        split = "" if "nvrtc_nvvm_s" not in r else " (" + " / ".join(
            ms(r.get(f"nvrtc_{x}_s", 0.0)) for x in ("frontend", "nvvm", "ptxas")) + ")"
        lines.append(f"| {r['kernel']} | {ms(r['total_s'])} | {ms(r['frontend_s'])} | {ms(r['key_s'])} | "
                     f"{ms(r['passes_s'])} | {ms(r['codegen_s'])} | {ms(r['nvrtc_s'])}{split} | {load_} | "
                     f"{ms(r['other_s'])} | {sp} |")
    if any(r.get("load_error") for r in rows):
        lines += ["", "\\* no GPU here: the module load failed at once (not timed)."]
    if any("nvrtc_nvvm_s" in r for r in rows):
        lines += ["", "nvrtc's split is NVRTC's own --time (wall ms of its front end, NVVM optimizer and ptxas)."]
    lines += ["", "One-time costs of the process (ms): " + ", ".join(
        f"{k[:-2]} {v * 1e3:.0f}" for k, v in meta["one_time"].items())]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--only", default="", help="comma-separated kernel names")
    ap.add_argument("--profile", help="a kernel name: cProfile its cold compile")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="cpu: the process's CPU time (steadier on a machine shared with other work)")
    ap.add_argument("--out", default=os.environ.get("OUT"))
    a = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.process_time if a.clock == "cpu" else time.perf_counter
    ks = kernels()
    names = [n for n, _ in ks]
    want = set(filter(None, a.only.split(",")))
    if want - set(names) or (a.profile and a.profile not in names):
        raise SystemExit(f"unknown kernel: {sorted((want | {a.profile}) - set(names) - {None})}; "
                         f"the kernels: {', '.join(names)}")
    one_time = one_time_costs(a.arch)
    if a.profile:
        profile(dict(ks)[a.profile], a.arch, a.top)
        return 0
    rows = []
    for name, thunk in ks:
        if want and name not in want:
            continue
        try:
            row, _ = compile_one(thunk, a.arch)
        except Exception as e:  # noqa: BLE001 - a kernel that fails to compile is a finding
            row = {"error": f"{type(e).__name__}: {e}"}
        row["kernel"] = name
        rows.append(row)
        print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = "?"
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit, "arch": a.arch,
            "clock": a.clock,
            "machine": f"{platform.node()} ({os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, "
                       f"Python {platform.python_version()})", "one_time": one_time}
    md = table(rows, meta)
    print(md)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "cold_compile.json"), "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
        with open(os.path.join(a.out, "cold_compile.md"), "w") as f:
            f.write(md)
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
