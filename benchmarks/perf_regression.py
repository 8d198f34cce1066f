"""The published examples' own performance-regression suite (`examples/*/regression_*.py`),
run file by file, sequentially, under this package and under the published one, paired
case by case (issue 17).

Each file runs in its own process from its own folder with TL_PERF_REGRESSION_FORMAT=json,
so it prints one `__TILELANG_PERF_RESULTS_JSON__=[...]` line (tilelang/testing/perf.py);
`PYTHONPATH` puts either this repository or the published package (`--published DIR`, the
unpacked wheels; see the developers' brief) first. Writes
`<out>/<date>_<device>_perf_regression.{md,json}` with each case's latency under both, the
ratio (published / ours: above 1 means ours is faster) and the geometric mean.

    CUDA_HOME=<nvcc prefix> python benchmarks/perf_regression.py --examples <tilelang>/examples --published /tmp/tl_pub_pkg \
        --out benchmarks/results [--only dynamic_shape,gemm] [--timeout 300]

`--published-results a.json,b.json` pairs this package's run with the published half of earlier
reports (same device kind; the report says which) instead of running the published package again.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "__TILELANG_PERF_RESULTS_JSON__="


def regression_files(examples: Path, only=None):
    files = sorted(examples.glob("*/regression_*.py"))
    if only:
        files = [f for f in files if f.parent.name in only]
    return files


def parse_results(stdout: str):
    """The cases a regression file printed: [{"name", "latency", "case"?}], or None."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(PREFIX):
            return json.loads(line[len(PREFIX):])
    return None


def run_file(path: Path, pythonpath: str, timeout: int, extra_env=None):
    env = dict(os.environ, PYTHONPATH=pythonpath, TL_PERF_REGRESSION_FORMAT="json", PYTHONUNBUFFERED="1")
    env.update(extra_env or {})
    t = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, path.name], cwd=path.parent, env=env, capture_output=True, text=True,
                           timeout=timeout)
        out, err, rc = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out, err, rc = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""), \
            "timeout", -9
    res = parse_results(out)
    last = (err or out).strip().splitlines()[-1:] or [""]
    row = {"rc": rc, "seconds": round(time.perf_counter() - t, 1), "results": res, "last_line": last[0][:300]}
    if rc != 0:   # a crash after the results printed (an abort at exit) still needs its cause
        row["stderr_tail"] = (err or "").strip().splitlines()[-25:]
    return row


def warm(files, args, root):
    """Compile ahead: both packages cache their kernels on disk, and the published one takes
    seconds per kernel; the timings of this pass are thrown away."""
    from concurrent.futures import ThreadPoolExecutor
    jobs = [(f, f"{root}:{f.parent}") for f in files]
    if args.published and not args.published_results:
        jobs += [(f, f"{args.published}:{f.parent}") for f in files]
    t = time.perf_counter()
    with ThreadPoolExecutor(args.warm) as ex:
        list(ex.map(lambda j: run_file(j[0], j[1], args.timeout, {"TL_PERF_REGRESSION_WARM": "1"}), jobs))
    print(f"warm-up: {len(jobs)} runs in {time.perf_counter() - t:.0f} s", flush=True)


def pair(ours, published):
    """Cases by (file, name, case) with both latencies and the ratio published/ours."""
    rows = []
    keys = []
    for side in (ours, published):
        for f, r in side.items():
            for item in r.get("results") or []:
                k = (f, item["name"], item.get("case"))
                if k not in keys:
                    keys.append(k)

    def latency(side, k):
        for item in side.get(k[0], {}).get("results") or []:
            if (item["name"], item.get("case")) == k[1:]:
                return item["latency"]
        return None
    for k in keys:
        a, b = latency(ours, k), latency(published, k)
        rows.append({"file": k[0], "name": k[1], "case": k[2], "ours": a, "published": b,
                     "ratio": (b / a) if a and b else None})
    return rows


def geomean(values):
    vals = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def markdown(meta, rows, ours, published):
    g = geomean(r["ratio"] for r in rows)
    out = [f"# Published performance-regression suite: ours vs the published package",
           "", f"commit {meta['commit']}, {meta['date']}, {meta['device']}; published {meta['published']}",
           f"`python benchmarks/perf_regression.py --examples <tilelang>/examples --published <pkg>`", "",
           f"**geometric mean of published/ours: {g:.2f}** over {sum(1 for r in rows if r['ratio'])} cases "
           f"(above 1: ours faster)" if g else "no case ran under both", "",
           "| file | case | ours | published | published / ours |", "|---|---|---|---|---|"]
    for r in rows:
        fmt = lambda v: f"{v:.4g}" if v else "-"  # noqa: E731
        out.append(f"| {r['file']} | {r['name']} | {fmt(r['ours'])} | {fmt(r['published'])} | "
                   f"{fmt(r['ratio'])} |")
    failed = [(f, side, r) for side, d in (("ours", ours), ("published", published)) for f, r in d.items()
              if not r.get("results") or r["rc"] != 0]
    if failed:
        out += ["", "## Files without results, or that failed after printing them", ""]
        out += [f"- {f} ({side}): rc {r['rc']}, {r['last_line']}" for f, side, r in failed]
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", required=True, type=Path)
    ap.add_argument("--published", help="folder holding the published tilelang package (unpacked wheels)")
    ap.add_argument("--published-results", help="comma-separated earlier reports (.json) whose published half "
                    "to pair with instead of running the published package again (same device, said in the report)")
    ap.add_argument("--out", default="benchmarks/results", type=Path)
    ap.add_argument("--only", help="comma-separated example folders")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per file and side")
    ap.add_argument("--device", default=None)
    ap.add_argument("--warm", type=int, default=0,
                    help="first run every file under both packages in this many parallel processes, "
                         "untimed, so that the timed sequential pass finds its kernels in the caches")
    args = ap.parse_args(argv)
    files = regression_files(args.examples, set(args.only.split(",")) if args.only else None)
    if args.warm:
        warm(files, args, ROOT)
    ours, published = {}, {}
    device = args.device
    if device is None:
        try:
            import torch
            device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
        except Exception:  # noqa: BLE001
            device = "unknown"
    # the device machine's copy of the tree may carry an older git HEAD: the `.commit` file written
    # before the call (as benchmarks/gpu_check.sh reads it) says which commit was measured
    marker = ROOT / ".commit"
    commit = os.environ.get("TL_COMMIT") or (marker.read_text().strip()[:7] if marker.exists() else "") or \
        subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    meta = {"commit": commit, "date": datetime.date.today().isoformat(), "device": device,
            "published": args.published or "not run"}
    if args.published_results:   # the published package's figures from earlier runs, file by file
        for path in args.published_results.split(","):
            earlier = json.loads(Path(path).read_text())
            for key, r in earlier["published"].items():
                if r.get("results") and (not args.only or key.split("/")[0] in args.only.split(",")):
                    published[key] = dict(r, from_report=Path(path).name)
        meta["published"] = f"earlier runs: {args.published_results}"
    args.out.mkdir(parents=True, exist_ok=True)
    tag = "h200" if "H200" in str(device) else str(device).split()[-1].lower()
    stem = args.out / f"{meta['date']}_{tag}_perf_regression"
    for f in files:   # the report is rewritten after every file: a time limit keeps what ran
        key = f"{f.parent.name}/{f.name}"
        ours[key] = run_file(f, f"{ROOT}:{f.parent}", args.timeout)
        print(f"ours      {key}: rc {ours[key]['rc']} {ours[key]['results']}", flush=True)
        if args.published and not args.published_results:
            published[key] = run_file(f, f"{args.published}:{f.parent}", args.timeout)
            print(f"published {key}: rc {published[key]['rc']} {published[key]['results']}", flush=True)
        rows = pair(ours, published)
        stem.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows, "ours": ours,
                                                         "published": published}, indent=1))
        md = markdown(meta, rows, ours, published)
        stem.with_suffix(".md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
