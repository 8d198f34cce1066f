"""Search strategies against exhaustive tuning, on a GEMM space and a FlashAttention
space (the examples' kernels, written in the public TileLang API, tuned through
`tilelang.autotuner.AutoTuner`).

For each space: one exhaustive run (every config, the reference check on), then each
strategy (random, halving, model) with a budget of a third of the configs, for a few
seeds. Reported per run: evaluations (config x fidelity pairs compiled/checked/timed),
benchmark cost (in full benchmarks: a short benchmark counts its share), timed iterations, wall time, the config found, and its latency *in the exhaustive
run's table* divided by the exhaustive best (same session, so run-to-run noise does
not flatter or punish a strategy); the goal is <= 1.03 with <= 1/3 of the benchmark cost.
The exhaustive run's whole table (config -> ms) is kept in the .json, so strategies can be
replayed against it offline.

The spaces are limited (GEMM 4096^3: 96 configs, FlashAttention b2 h16 s2048 d128:
36 configs) so the whole script finishes in under 240 s on one H200; `--max-seconds`
(default 200, shared equally by the two spaces) stops starting new strategy runs past a
space's share (the skipped ones are listed in the output).
Compiled kernels are shared between the runs of a space (the kernel cache), tuning
results are not (TILELANG_AUTO_TUNING_DISABLE_CACHE=1).

    python benchmarks/autotune_strategies.py          # -> benchmarks/results/<date>_h200_autotune_strategies.*
    python benchmarks/autotune_strategies.py --smoke    # tiny sizes and spaces on the CPU (checks the script)
"""
import argparse
import importlib.util
import itertools
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

os.environ["TILELANG_AUTO_TUNING_DISABLE_CACHE"] = "1"
os.environ.setdefault("TILELANG_AUTO_TUNING_PROGRESS", "0")
ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from tilelang.autotuner import AutoTuner  # noqa: E402

STRATEGIES = ("random", "halving", "model")


def example(name):
    path = ROOT / "examples" / name / f"example_{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def spaces(smoke):
    g, fa = example("gemm"), example("flash_attention")
    if smoke:
        gemm_cfg = [dict(block_M=bm, block_N=bn, block_K=32, num_stages=2, threads=128)
                    for bm, bn in itertools.product((32, 64), (32, 64))]
        fa_cfg = [dict(block_M=bm, block_N=bn, num_stages=1, threads=128) for bm, bn in ((32, 32), (64, 32), (32, 64))]
        gemm_args, fa_args = (128, 128, 128), (1, 2, 64, 64, 32)
    else:
        gemm_cfg = [dict(block_M=bm, block_N=bn, block_K=bk, num_stages=s, threads=t, swizzle_panel=sw)
                    for bm, bn, bk, s, t, sw in itertools.product((64, 128), (64, 128, 256), (32, 64), (2, 4),
                                                                 (128, 256), (0, 8))]
        fa_cfg = [dict(block_M=bm, block_N=bn, num_stages=s, threads=t)
                  for bm, bn, s, t in itertools.product((64, 128), (32, 64, 128), (1, 2, 3), (128, 256))]
        gemm_args, fa_args = (4096, 4096, 4096), (2, 16, 2048, 2048, 128)
    yield ("gemm fp16 {}x{}x{}".format(*gemm_args), g.matmul, gemm_args, gemm_cfg,
           lambda A, B: (A.float() @ B.float()).half())
    yield ("flash_attention fp16 b{} h{} s{} d{}".format(*fa_args[:3], fa_args[4]), fa.flash_attention, fa_args,
           fa_cfg, lambda Q, K, V: fa.ref_program(Q, K, V))


def tune(factory, args, configs, ref, target, warmup, rep, **search):
    t = AutoTuner.from_kernel(factory, configs).set_kernel_parameters(args=args)
    t.set_compile_args(out_idx=factory.jit_kwargs.get("out_idx"), target=target)
    t.set_profile_args(ref_prog=ref, warmup=warmup, rep=rep, timeout=60, rtol=2e-2, atol=2e-2)
    t0 = time.perf_counter()
    res = t.run(**search)
    return res, time.perf_counter() - t0


def key(config):
    return json.dumps(config, sort_keys=True)


def run_space(name, factory, args, configs, ref, target, warmup, rep, seeds, deadline, strategies=STRATEGIES):
    os.environ["TILELANG_CACHE_DIR"] = tempfile.mkdtemp(prefix="tl_strat_")
    ex, wall = tune(factory, args, configs, ref, target, warmup, rep)
    table = {key(r.config): r.latency for r in ex.records if r.status == "ok"}
    out = dict(space=name, n_configs=len(configs), n_valid=len(table), budget=-(-len(configs) // 3),
               exhaustive=dict(best_config=ex.config, best_ms=ex.latency, evaluations=ex.search["evaluations"],
                               timed_iterations=ex.search["timed_iterations"], wall_s=wall, table=table),
               runs=[], skipped=[])
    print(json.dumps({"space": name, "exhaustive": {k: v for k, v in out["exhaustive"].items() if k != "table"}}),
          flush=True)
    for strategy, seed in itertools.product(strategies, seeds):
        if time.monotonic() > deadline:
            out["skipped"].append(f"{strategy} seed {seed}")
            continue
        res, wall = tune(factory, args, configs, ref, target, warmup, rep, strategy=strategy,
                         budget=out["budget"], seed=seed)
        in_ex = table.get(key(res.config))
        row = dict(strategy=strategy, seed=seed, evaluations=res.search["evaluations"],
                   benchmark_cost=res.search.get("benchmark_cost"),
                   configs_evaluated=res.search["configs_evaluated"],
                   timed_iterations=res.search["timed_iterations"], wall_s=wall, best_config=res.config,
                   found_ms=res.latency, found_in_exhaustive_ms=in_ex,
                   ratio_to_exhaustive_best=(in_ex / ex.latency) if in_ex else None)
        out["runs"].append(row)
        print(json.dumps(row), flush=True)
    return out


def summarize(results):
    lines = [f"# Autotuning search strategies vs exhaustive ({results['date']}, {results['device']})", "",
             f"commit {results['commit']}; `python benchmarks/autotune_strategies.py"
             f"{' --smoke' if results['smoke'] else ''}`; warmup {results['warmup']}, rep {results['rep']}; "
             f"total {results['wall_s']:.0f} s.",
             "ratio = the found config's latency in the exhaustive run's table / the exhaustive best "
             "(goal <= 1.03 with <= 1/3 of the benchmark cost; cost: full benchmarks, a short one counts its share).",
             ""]
    for sp in results["spaces"]:
        ex = sp["exhaustive"]
        lines += [f"## {sp['space']}: {sp['n_configs']} configs ({sp['n_valid']} valid), budget {sp['budget']}", "",
                  f"exhaustive: {ex['best_ms']:.4f} ms with {ex['best_config']}, {ex['evaluations']} evaluations, "
                  f"{ex['timed_iterations']} timed iterations, {ex['wall_s']:.1f} s", "",
                  "| strategy | seed | evaluations | cost | timed iterations | wall s | found ms | ratio | config |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in sp["runs"]:
            ratio = f"{r['ratio_to_exhaustive_best']:.3f}" if r["ratio_to_exhaustive_best"] else "-"
            cost = f"{r['benchmark_cost']:.1f}" if r.get("benchmark_cost") is not None else "-"
            lines.append(f"| {r['strategy']} | {r['seed']} | {r['evaluations']} | {cost} | {r['timed_iterations']} | "
                         f"{r['wall_s']:.1f} | {r['found_ms']:.4f} | {ratio} | {r['best_config']} |")
        for s in STRATEGIES:
            rs = [r["ratio_to_exhaustive_best"] for r in sp["runs"] if r["strategy"] == s]
            if rs and all(x is not None for x in rs):
                hit = sum(x <= 1.03 for x in rs)
                lines.append(f"\n{s}: within 3% in {hit}/{len(rs)} seeds, worst ratio {max(rs):.3f}")
        if sp["skipped"]:
            lines.append(f"\nskipped (past --max-seconds): {', '.join(sp['skipped'])}")
        lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true", help="tiny sizes and spaces on the CPU (checks the script)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--max-seconds", type=float, default=200.0)
    ap.add_argument("--strategies", default=",".join(STRATEGIES), help="comma-separated, e.g. model")
    ap.add_argument("--out", default=None, help="folder for the .md/.json (default: benchmarks/results)")
    a = ap.parse_args()
    t0 = time.monotonic()
    target = "cpu" if a.smoke else "cuda"
    warmup, rep = (1, 3) if a.smoke else (25, 100)
    device = torch.cuda.get_device_name(0) if (torch.cuda.is_available() and not a.smoke) else "cpu"
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip() or "unknown"
    except OSError:
        commit = "unknown"
    results = dict(date=time.strftime("%Y-%m-%d"), device=device, commit=os.environ.get("TL_COMMIT", commit),
                   smoke=a.smoke, warmup=warmup, rep=rep, spaces=[])
    todo = list(spaces(a.smoke))
    for k, (name, factory, args, configs, ref) in enumerate(todo):   # each space gets its share of the time
        results["spaces"].append(run_space(name, factory, args, configs, ref, target, warmup, rep,
                                           range(a.seeds), t0 + a.max_seconds * (k + 1) / len(todo),
                                           tuple(a.strategies.split(","))))
    results["wall_s"] = time.monotonic() - t0
    tag = "cpu_smoke" if a.smoke else ("h200" if "H200" in device else re.sub(r"\W+", "_", device.lower()))
    out = pathlib.Path(a.out or ROOT / "benchmarks" / "results")
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"{results['date']}_{tag}_autotune_strategies"
    stem.with_suffix(".json").write_text(json.dumps(results, indent=1, default=str))
    stem.with_suffix(".md").write_text(summarize(results))
    print(f"wrote {stem}.md and .json ({results['wall_s']:.0f} s)")


if __name__ == "__main__":
    main()
