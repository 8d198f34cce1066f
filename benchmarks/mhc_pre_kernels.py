"""Issue 17: the KERNEL time of each kernel of DeepSeek mHC's pre block (ours only), at the
published regression configuration (n=2048, hidden 4096, hc_mult 4, n_splits 1), under each
A/B switch setting that touches them, so that one H200 run says which kernel holds the gap to
the published package (0.0948 ms for both, `run_regression_perf`, CUPTI):

- `mhc_pre_gemm_sqrsum_tilelang`: 64 blocks of 32 tokens (TF32 gemm + sum of squares);
- `mhc_pre_big_fuse_tilelang`: 2048 blocks of 96 threads (mixes, Sinkhorn, the mixed layer input);
- `both`, as `run_regression_perf` runs them, with each kernel's share from the CUDA activity
  records of torch's profiler.

Times are `tilelang.profiler.do_bench(fn, backend="cupti")` (kernel time only, L2 flushed
before each call, as the suite measures), host dispatch excluded. Each variant runs in a
subprocess of its own with its environment switches (tilelang/env.py), first runs the example's
own check, and prints each kernel's registers a thread next to the bandwidth it reached and the
first-principles floor (its HBM bytes at 4.2 TB/s). Usage:

    python benchmarks/mhc_pre_kernels.py <dir with example_mhc_pre.py> [out.json] [--only=name,name]
        [--published=<folder holding the published tilelang package>]

`--published` adds a variant "published": the same timings with that package first on the
path (its registers are not read).
"""
import json
import os
import subprocess
import sys

# variant name -> the environment switches it sets
VARIANTS = {
    "default": {},
    "mma_chains_off": {"TILELANG_CUDA_MMA_CHAINS": "0"},
    "converting_copy_pipeline_off": {"TILELANG_CUDA_CONVERTING_COPY_PIPELINE": "0"},
    "pipelined_occupancy_on": {"TILELANG_CUDA_PIPELINED_OCCUPANCY": "1"},
    "cp_async_early_refill_on": {"TILELANG_CUDA_CP_ASYNC_EARLY_REFILL": "1"},
    "cp_async_unroll_on": {"TILELANG_CUDA_CP_ASYNC_UNROLL": "1"},
    # the opt-in ones together
    "all_on": {"TILELANG_CUDA_PIPELINED_OCCUPANCY": "1", "TILELANG_CUDA_CP_ASYNC_EARLY_REFILL": "1",
               "TILELANG_CUDA_CP_ASYNC_UNROLL": "1"},
}
HBM_TBPS = 4.2
N, HIDDEN, HC = 2048, 4096, 4


def kernel_shares_ms(fn, reps=100):
    """{kernel name: mean device ms a call} of the kernels `fn` launches (torch profiler, CUPTI)."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    out = {}
    for e in p.key_averages():
        t = getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0)
        if t:
            out[e.key] = round(out.get(e.key, 0.0) + float(t) / reps / 1e3, 5)
    return out


def resources(kernel):
    """Registers a thread and resident blocks an SM of a compiled kernel (needs cuobjdump)."""
    try:
        import re
        from tilelang.backend.cuda.host.nvrtc import resource_usage
        text = resource_usage(kernel.artifact.binary)
        regs = int(re.search(r"REG:(\d+)", text).group(1))
        return {"registers": regs}
    except Exception as e:  # noqa: BLE001 - a figure to report, not a reason to stop timing
        return {"registers": f"unknown ({type(e).__name__})"}


def measure(example_dir):
    """One variant, in this process: the figures as a dict."""
    sys.path.insert(0, example_dir)
    import torch
    import example_mhc_pre as ex
    from tilelang.profiler import do_bench
    hc3 = HC * 2 + HC * HC
    d = ex.generate_test_data(n=N, hc_mult=HC, hidden_size=HIDDEN)
    x = d["residual"].view(N, HC * HIDDEN)
    mul = torch.empty(1, N, hc3, device="cuda")
    sq = torch.empty(1, N, device="cuda")
    post = torch.empty(N, HC, device="cuda")
    comb = torch.empty(N, HC * HC, device="cuda")
    layer = torch.empty(N, HIDDEN, dtype=torch.bfloat16, device="cuda")
    fuse_args = (HIDDEN, d["rms_eps"], d["hc_pre_eps"], d["hc_sinkhorn_eps"], d["hc_post_mult_value"],
                 d["sinkhorn_repeat"], 1, HC)

    def gemm():
        ex.mhc_pre_gemm_sqrsum_tilelang(x, d["fn"], mul.squeeze(0), sq.squeeze(0), hc3, HC * HIDDEN)

    def fuse():
        ex.mhc_pre_big_fuse_tilelang(mul, sq, d["hc_scale"], d["hc_base"], d["residual"], post, comb, layer,
                                     *fuse_args)

    def both():
        gemm()
        fuse()

    both()
    # the results are right (the example's own check, a partial last token block included)
    ex.test(n=N, hidden_size=HIDDEN, hc_mult=HC)
    ex.test(n=500, hidden_size=1280, hc_mult=HC)
    res = {"device": torch.cuda.get_device_name(),
           "gemm_sqrsum_ms": do_bench(gemm, backend="cupti"),
           "big_fuse_ms": do_bench(fuse, backend="cupti"),
           "both_ms": do_bench(both, backend="cupti"),
           "both_by_kernel_ms": kernel_shares_ms(both)}
    if "published" in os.environ.get("MHC_VARIANT", ""):
        return res
    kg = ex.mhc_pre_gemm_sqrsum_tilelang.compile(hc_mult3=hc3, hc_hidden_size=HC * HIDDEN)
    kf = ex.mhc_pre_big_fuse_tilelang.compile(hidden_size=HIDDEN, rms_eps=d["rms_eps"], hc_pre_eps=d["hc_pre_eps"],
                                             hc_sinkhorn_eps=d["hc_sinkhorn_eps"],
                                             hc_post_mult_value=d["hc_post_mult_value"],
                                             sinkhorn_repeat=d["sinkhorn_repeat"], n_splits=1, hc_mult=HC)
    res["gemm_sqrsum_resources"] = resources(kg)
    res["big_fuse_resources"] = resources(kf)
    # bytes each kernel must move from HBM (fn is re-read from L2 by every block: not counted)
    gemm_bytes = x.numel() * 2 + d["fn"].numel() * 4 + N * (hc3 + 1) * 4
    fuse_bytes = x.numel() * 2 + layer.numel() * 2 + N * (hc3 + 1 + HC + HC * HC) * 4
    for name, b in (("gemm_sqrsum", gemm_bytes), ("big_fuse", fuse_bytes)):
        res[f"{name}_floor_ms"] = round(b / (HBM_TBPS * 1e12) * 1e3, 5)
        res[f"{name}_GBps"] = round(b / res[f"{name}_ms"] / 1e6, 1)
    return res


def main(argv):
    if argv and argv[0] == "--child":
        print("RESULT " + json.dumps(measure(argv[1])))
        return
    args = [a for a in argv if not a.startswith("--")]
    only = next((a.split("=", 1)[1] for a in argv if a.startswith("--only=")), None)
    published = next((a.split("=", 1)[1] for a in argv if a.startswith("--published=")), None)
    if len(args) < 1:
        raise SystemExit(__doc__)
    example_dir, out = args[0], (args[1] if len(args) > 1 else None)
    names = only.split(",") if only else list(VARIANTS)
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        raise SystemExit(f"--only: unknown variant(s) {unknown}; known: {list(VARIANTS)}")
    results = {}
    for name in names + (["published"] if published else []):
        env = dict(os.environ, **VARIANTS.get(name, {}), MHC_VARIANT=name)
        # the child imports this checkout's tilelang, as the parent does when run from the repository
        # root, or the published package
        root = published if name == "published" else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        p = subprocess.run([sys.executable, __file__, "--child", example_dir], env=env, capture_output=True,
                           text=True)
        line = next((ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")), None)
        results[name] = json.loads(line[7:]) if line else {"error": (p.stderr or p.stdout)[-2000:]}
        results[name]["switches"] = VARIANTS.get(name, {})
        print(name, json.dumps(results[name], indent=1), flush=True)
    if out:
        with open(out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
