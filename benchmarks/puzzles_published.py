"""Run the published TileLang Puzzles (tile-ai/tilelang-puzzles), unmodified, against this package.

Their code is not part of this repository: clone `tile-ai/tilelang-puzzles` somewhere outside
the tree and pass its path. Each script of `ans/` (the reference answers; `--dir puzzles` for the
unsolved exercises) runs in its own Python process from the checkout's root (the scripts import
`common.utils`), with this repository first on PYTHONPATH so our `tilelang` is the one imported.
A script passes when it exits with 0, printed at least one "Results match: True" line from its own
checker (`common/utils.py: test_puzzle`) and no "Results match: False".

    python benchmarks/puzzles_published.py /path/to/tilelang-puzzles            # on a GPU
    python benchmarks/puzzles_published.py /path/to/tilelang-puzzles --cpu      # no GPU

--cpu runs on a machine without a GPU through the conformance plugin's emulation
(benchmarks/conformance/plugin.py: `device="cuda"` tensors become CPU tensors, torch.cuda.* answers
as one sm_90 device, target "cuda" compiles for our CPU backend). There, the scripts' timing loops
(`bench_puzzle`, 110 launches each, no result checked) are replaced by a line saying they were
skipped unless --bench is given; every `test_puzzle` check still runs at the scripts' own sizes
(08 and 10 multiply 4096x4096 matrices: minutes on a laptop). --cuda-check also compiles every
kernel for sm_90a with NVRTC there.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLUGIN = os.path.join(ROOT, "benchmarks", "conformance", "plugin.py")

# The child process: optional CPU emulation, optional skipping of the timing loops, then the
# script itself as __main__ (its own file name in tracebacks).
BOOTSTRAP = r"""
import importlib.util, os, runpy, sys
sys.path.insert(0, os.getcwd())
if os.environ.get("TL_PUZZLES_CPU") == "1":
    spec = importlib.util.spec_from_file_location("tl_conformance_plugin", os.environ["TL_PUZZLES_PLUGIN"])
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    plugin._emulate_cuda_on_cpu()
    if os.environ.get("TL_PUZZLES_BENCH") != "1":
        import common.utils
        def bench_puzzle(puzzle_tl, puzzle_torch, tl_hyper_params={}, bench_name="Tilelang", **_):
            print(f"(benchmark {bench_name} {tl_hyper_params} skipped on the CPU)")
        common.utils.bench_puzzle = bench_puzzle
script = sys.argv[1]
sys.argv = [script]
runpy.run_path(script, run_name="__main__")
"""

MATCH = re.compile(r"Results match:\s*(True|False)")


def run_one(checkout, rel, args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, checkout] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["TL_PUZZLES_PLUGIN"] = PLUGIN
    env["TL_PUZZLES_CPU"] = "1" if args.cpu else "0"
    env["TL_PUZZLES_BENCH"] = "1" if args.bench else "0"
    env["TL_CONFORMANCE_CUDA_CHECK"] = "1" if args.cuda_check else "0"
    t0 = time.time()
    try:
        p = subprocess.run([sys.executable, "-c", BOOTSTRAP, rel], cwd=checkout, env=env, capture_output=True,
                           text=True, timeout=args.timeout)
        out, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        out += f"\n(timed out after {args.timeout} s)"
        rc = None
    matches = MATCH.findall(out)
    ok = rc == 0 and matches and all(m == "True" for m in matches)
    return {"file": rel, "ok": bool(ok), "rc": rc, "checks": len(matches),
            "failed": sum(m == "False" for m in matches), "seconds": time.time() - t0, "output": out}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout", help="path of a tile-ai/tilelang-puzzles checkout")
    ap.add_argument("--dir", default="ans", help="which folder's scripts to run (default: ans, the reference answers)")
    ap.add_argument("--only", default="", help="comma-separated prefixes, e.g. 01,07")
    ap.add_argument("--cpu", action="store_true", help="no GPU: run through the CPU emulation")
    ap.add_argument("--bench", action="store_true", help="with --cpu: keep the scripts' timing loops")
    ap.add_argument("--cuda-check", action="store_true", help="with --cpu: also compile every kernel for sm_90a")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per script (default 900)")
    ap.add_argument("--log", help="write every script's full output to this file")
    args = ap.parse_args(argv)

    checkout = os.path.abspath(args.checkout)
    folder = os.path.join(checkout, args.dir)
    if not os.path.isdir(os.path.join(checkout, "common")) or not os.path.isdir(folder):
        ap.error(f"checkout: {checkout} has no common/ and {args.dir}/ folders; pass a tilelang-puzzles checkout")
    wanted = [w for w in args.only.split(",") if w]
    files = sorted(f for f in os.listdir(folder) if f.endswith(".py") and
                   (not wanted or any(f.startswith(w) for w in wanted)))
    if not files:
        ap.error(f"no scripts in {folder} match --only {args.only!r}")

    mode = "cpu emulation" if args.cpu else "gpu"
    print(f"tilelang-puzzles {args.dir}/ with {ROOT} ({mode})")
    print(f"{'script':<28} {'result':<6} {'checks':>6} {'seconds':>8}")
    results = []
    for rel in files:
        r = run_one(checkout, os.path.join(args.dir, rel), args)
        results.append(r)
        status = "pass" if r["ok"] else ("timeout" if r["rc"] is None else "FAIL")
        print(f"{rel:<28} {status:<6} {r['checks'] - r['failed']:>3}/{r['checks']:<2} {r['seconds']:>8.1f}", flush=True)
        if not r["ok"]:
            tail = "\n".join(r["output"].strip().splitlines()[-15:])
            print("    " + tail.replace("\n", "\n    "))
    if args.log:
        with open(args.log, "w") as f:
            for r in results:
                f.write(f"===== {r['file']} rc={r['rc']} ok={r['ok']}\n{r['output']}\n")
    passed = sum(r["ok"] for r in results)
    print(f"{passed}/{len(results)} pass")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
