"""Memory-bound kernels against the device-to-device copy, for each value of the CUDA
backend's switches that concern them (one GPU, well under a minute on an H200):

    python benchmarks/memory_bound.py [--published-examples <tile-ai/tilelang>/examples] [--quick]

Times torch's copy (1 GiB, the bench suite's reference, and the byte count of the row
kernels), torch's RMSNorm / softmax / add and ours (examples/rms_norm, examples/softmax,
examples/elementwise with the bench suite's configurations and a 1024-element tile on 256
threads; with --published-examples also the published elementwise example at its
regression configuration), once per variant:

    defaults                      every switch at its default
    GUARDED_SPLIT=0               TILELANG_CUDA_GUARDED_SPLIT=0 (strided loops for uneven copy nests)
    STREAMING_OCCUPANCY=1         TILELANG_CUDA_STREAMING_OCCUPANCY=1 (a full SM of blocks for memory-bound kernels)
    REGISTER_PREFETCH=1           TILELANG_CUDA_REGISTER_PREFETCH=1 (opt-in: a chunked row loads the next chunk one
                                  iteration ahead into staging registers: the 4/1024 row configurations)
    SELECTIVE_PROXY_FENCES=0      TILELANG_CUDA_SELECTIVE_PROXY_FENCES=0 (every barrier fenced; only the published
                                  example stores through a TMA store, the other kernels run once, not per variant)

and prints one table: GB/s (bytes read + written / time) and the ratio to the 1 GiB copy.
Writes memory_bound.json and memory_bound.md under $OUT when it is set."""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TILELANG_DEFAULT_TARGET", "cuda")

import tilelang  # noqa: E402
from example_modules import load_example, load_module  # noqa: E402 (benchmarks/)
import tilelang.language as T  # noqa: E402
from tilelang.profiler import do_bench  # noqa: E402

VARIANTS = {
    "defaults": {},
    "GUARDED_SPLIT=0": {"TILELANG_CUDA_GUARDED_SPLIT": "0"},
    "STREAMING_OCCUPANCY=1": {"TILELANG_CUDA_STREAMING_OCCUPANCY": "1"},
    "REGISTER_PREFETCH=1": {"TILELANG_CUDA_REGISTER_PREFETCH": "1"},
    "SELECTIVE_PROXY_FENCES=0": {"TILELANG_CUDA_SELECTIVE_PROXY_FENCES": "0"},
}
ROW_CONFIGS = [dict(block_M=1, block_N=4096, threads=256), dict(block_M=4, block_N=1024, threads=256)]
ADD_CONFIGS = [dict(block_M=32, block_N=256, threads=256), dict(block_M=16, block_N=512, threads=256),
               dict(block_M=4, block_N=256, threads=256), dict(block_M=1, block_N=1024, threads=256)]
ROWS = []


def example(name, file=None):
    return load_example(name, file, prefix="mb_example")


def bench(fn):
    return do_bench(fn, warmup=25, rep=100, return_mode="median")


def rel_err(out, ref):
    out, ref = out.double(), ref.double()
    return float((out - ref).norm() / ref.norm().clamp_min(1e-30))


def record(job, impl, ms, nbytes, variant="", config=None, err=None):
    r = {"job": job, "impl": impl, "variant": variant, "config": config or {}, "ms": ms, "gbps": nbytes / ms / 1e6}
    if err is not None:
        r["rel_err"] = err
    ROWS.append(r)
    print(json.dumps(r), flush=True)


def with_switches(env):
    """Set the variant's switches (and reset the others to their defaults)."""
    for v in VARIANTS.values():
        for k in v:
            os.environ.pop(k, None)
    os.environ.update(env)


def compiled(factory, *args, **kwargs):
    """Our kernel compiled under the switches now set (tilelang.compile: the disk cache's key
    has the switches; the jit factory's own cache would not tell the variants apart)."""
    return tilelang.compile(factory.get_tir(*args, **kwargs), out_idx=[-1], target="cuda")


def copies(row_bytes):
    for label, nbytes in (("1GiB", 2 ** 30), (f"{row_bytes // 2 ** 21}MiB", row_bytes // 2)):   # the tensor's size
        x = torch.empty(nbytes // 2, dtype=torch.float16, device="cuda")
        y = torch.empty_like(x)
        record(f"d2d_copy {label}", "torch", bench(lambda: y.copy_(x)), 2 * nbytes)


def own_variants(variants):
    """The variants that change our examples' kernels (they store from registers: no TMA store)."""
    return {k: v for k, v in variants.items() if k != "SELECTIVE_PROXY_FENCES=0"}


def rowwise(variants, M=16384, N=4096):
    rn, sm = example("rms_norm"), example("softmax")
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    w = torch.randn(N, device="cuda", dtype=torch.float16)
    nbytes = 2 * M * N * 2
    ref = rn.ref_program(x, w)
    tf = lambda: torch.nn.functional.rms_norm(x, (N,), w, 1e-6)  # noqa: E731
    record(f"rmsnorm fp16 {M}x{N}", "torch", bench(tf), nbytes, err=rel_err(tf(), ref))
    sref = torch.softmax(x.double(), -1)
    record(f"softmax fp16 {M}x{N}", "torch", bench(lambda: torch.softmax(x, -1)), nbytes,
           err=rel_err(torch.softmax(x, -1), sref))
    for variant, env in variants.items():
        with_switches(env)
        for cfg in ROW_CONFIGS:
            k = compiled(rn.rms_norm, M, N, dtype=T.float16, **cfg)
            record(f"rmsnorm fp16 {M}x{N}", "tilelang", bench(lambda: k(x, w)), nbytes, variant, cfg,
                   rel_err(k(x, w), ref))
            k = compiled(sm.softmax, M, N, dtype=T.float16, **cfg)
            record(f"softmax fp16 {M}x{N}", "tilelang", bench(lambda: k(x)), nbytes, variant, cfg,
                   rel_err(k(x), sref))


def add(variants, n=2 ** 28):
    ew = example("elementwise")
    M, N = 4096, n // 4096   # 4096 rows: a 1-row tile's grid stays within gridDim.y's 65535
    a = torch.randn(M, N, device="cuda", dtype=torch.float16)
    b = torch.randn(M, N, device="cuda", dtype=torch.float16)
    nbytes = 3 * n * 2
    ref = a.double() + b.double()
    record("add fp16 2^28", "torch", bench(lambda: a + b), nbytes)
    for variant, env in variants.items():
        with_switches(env)
        for cfg in ADD_CONFIGS:
            k = compiled(ew.elementwise_add, M, N, in_dtype=T.float16, out_dtype=T.float16, **cfg)
            record("add fp16 2^28", "tilelang", bench(lambda: k(a, b)), nbytes, variant, cfg, rel_err(k(a, b), ref))


def published_add(variants, examples_dir, M=4096, N=4096):
    """The published elementwise example at its regression configuration (fp32, 32 x 32 tiles,
    128 threads), called as its run_regression_perf calls it."""
    path = pathlib.Path(examples_dir) / "elementwise" / "example_elementwise_add.py"
    a = torch.randn(M, N, dtype=torch.float32, device="cuda")
    b = torch.randn(M, N, dtype=torch.float32, device="cuda")
    cfg = {"block_M": 32, "block_N": 32, "threads": 128}
    for variant, env in variants.items():
        with_switches(env)
        mod = load_module(path, f"mb_published_add_{len(ROWS)}")   # a fresh jit function: its own kernel cache
        run = lambda: mod.elementwise_add(a, b, **cfg, in_dtype="float32", out_dtype="float32")  # noqa: E731
        out = run()
        record(f"published elementwise_add fp32 {M}x{N}", "tilelang", bench(run), 3 * M * N * 4, variant, cfg,
               rel_err(out, a.double() + b.double()))


def table():
    base = next((r["gbps"] for r in ROWS if r["job"] == "d2d_copy 1GiB"), None)
    lines = ["| job | impl | variant | config | ms | GB/s | / copy 1GiB | rel err |", "|---|---|---|---|---|---|---|---|"]
    for r in ROWS:
        cfg = "/".join(str(v) for v in r["config"].values())
        ratio = f"{r['gbps'] / base:.3f}" if base else ""
        err = f"{r['rel_err']:.1e}" if "rel_err" in r else ""
        lines.append(f"| {r['job']} | {r['impl']} | {r['variant']} | {cfg} | {r['ms']:.4f} | {r['gbps']:.0f} | {ratio} | {err} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--published-examples", default="", help="the examples/ folder of a tile-ai/tilelang checkout")
    ap.add_argument("--quick", action="store_true", help="defaults, STREAMING_OCCUPANCY=1 and REGISTER_PREFETCH=1 only")
    args = ap.parse_args()
    quick = ("defaults", "STREAMING_OCCUPANCY=1", "REGISTER_PREFETCH=1")
    variants = {k: v for k, v in VARIANTS.items() if not args.quick or k in quick}
    t0 = time.perf_counter()
    copies(2 * 16384 * 4096 * 2)
    rowwise(own_variants(variants))
    add(own_variants(variants))
    if args.published_examples:
        published_add(variants, args.published_examples)
    with_switches({})
    md = f"# Memory-bound kernels vs copy — {torch.cuda.get_device_name(0)} — {time.strftime('%Y-%m-%d %H:%M')}\n\n" + table()
    print(md)
    print(f"({time.perf_counter() - t0:.1f} s)")
    out = os.environ.get("OUT")
    if out:
        p = pathlib.Path(out)
        p.mkdir(parents=True, exist_ok=True)
        (p / "memory_bound.json").write_text(json.dumps(ROWS, indent=1))
        (p / "memory_bound.md").write_text(md)


if __name__ == "__main__":
    main()
