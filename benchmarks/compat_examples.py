"""Run the published TileLang's example tests, unmodified, against this package.

Issue 6: the 19 test files below must pass with our `tilelang`. Their code is not
part of this repository: fetch `tile-ai/tilelang` (tag v0.1.13) somewhere outside
the tree and point --examples at its `examples/` folder. Each file runs in its own
pytest process from its own folder (the tests import their siblings), with this
repository first on PYTHONPATH, so our `tilelang` (and its `tvm` shim) is the one
imported. Prints `N/19 pass` and writes JSON + Markdown under --out.

    python benchmarks/compat_examples.py --examples /tmp/tilelang/examples --out /tmp/out
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

REQUIRED = [
    "elementwise/test_example_elementwise.py",
    "norm/test_rms_norm.py",
    "cast/test_example_cast.py",
    "topk/test_topk_tilelang.py",
    "gemv/test_example_gemv.py",
    "gemm/test_example_gemm.py",
    "gemm_splitk/test_example_gemm_splitk.py",
    "gemm_fp8/test_example_gemm_fp8.py",
    "gemm_sp/test_example_gemm_sp.py",
    "flash_decoding/test_example_flash_decoding.py",
    "deepseek_mla/test_example_mla_decode.py",
    "dequantize_gemm/test_example_dequantize_gemm.py",
    "warp_specialize/test_example_warp_specialize.py",
    "blocksparse_attention/test_example_blocksparse_attention.py",
    "gdn/test_example_gdn_compilation.py",
    "seer_attention/test_block_sparse_attn_tilelang.py",
    "deepseek_nsa/test_example_tilelang_nsa.py",
    "deepseek_v32/test_tilelang_example_deepseek_v32.py",
    "attention_sink/test_example_attention_sink.py",
]
EXTRA = [
    "flash_attention/test_example_flash_attention.py",
    "linear_attention",
    "block_causal_attention",
]


def commit():
    if os.environ.get("TL_COMMIT"):
        return os.environ["TL_COMMIT"]
    try:
        return subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True).strip()
    except Exception:
        return "unknown"


def run_one(examples, rel, timeout, out):
    path = os.path.join(examples, rel)
    cwd = path if os.path.isdir(path) else os.path.dirname(path)
    target = "." if os.path.isdir(path) else os.path.basename(path)
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=short", "-rfEs", target]
    t0 = time.time()
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        rc, log = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as e:
        rc = "timeout"
        log = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
    dt = time.time() - t0
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|error|errors)", log)}
    ok = rc == 0 and counts.get("passed", 0) > 0
    name = rel.replace("/", "__")
    if out:
        with open(os.path.join(out, f"compat_{name}.log"), "w") as fh:
            fh.write(log)
    return {"test": rel, "pass": ok, "rc": rc, "seconds": round(dt, 1), "counts": counts,
            "tail": log.strip().splitlines()[-1] if log.strip() else ""}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", required=True, help="the published repository's examples/ folder")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--timeout", type=int, default=300, help="seconds per test file")
    ap.add_argument("--only", nargs="*", help="run these folders only")
    ap.add_argument("--jobs", type=int, default=1, help="test files run at once (one GPU is shared)")
    ap.add_argument("--extra", action="store_true", help="also run the three extra folders")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    EXAMPLES_DIR.append(os.path.abspath(args.examples))
    todo = REQUIRED + (EXTRA if args.extra else [])
    if args.only:
        todo = [t for t in todo if t.split("/")[0] in args.only]
    sys.path.insert(0, ROOT)
    import tilelang
    print(f"tilelang from {os.path.dirname(tilelang.__file__)}", flush=True)
    results = []
    from concurrent.futures import ThreadPoolExecutor, as_completed
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:   # each file is its own pytest process
        futures = {pool.submit(run_one, args.examples, rel, args.timeout, args.out): rel for rel in todo}
        for fut in as_completed(futures):
            r = fut.result()
            results.append(r)
            print(f"{'PASS' if r['pass'] else 'FAIL'} {r['test']} ({r['seconds']} s) {r['tail']}", flush=True)
            n = write_report(results, args.out)   # after each file: a device time limit keeps what ran
    print(f"{n}/{len([r for r in results if r['test'] in REQUIRED])} pass")


def published_revision():
    """The published checkout's `git describe`, written next to its examples/ (.pub/REVISION)."""
    for path in (os.path.join(os.path.dirname(EXAMPLES_DIR[0]), "REVISION"),) if EXAMPLES_DIR else ():
        if os.path.exists(path):
            return "tile-ai/tilelang " + open(path).read().strip()
    return "tile-ai/tilelang (revision unknown)"


EXAMPLES_DIR = []


def write_report(results, out):
    req = [r for r in results if r["test"] in REQUIRED]
    n = sum(r["pass"] for r in req)
    try:
        import torch
        device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    except Exception:
        device = "unknown"
    meta = {"commit": commit(), "date": datetime.datetime.utcnow().isoformat(timespec="seconds") + "Z",
            "device": device, "published_examples": published_revision(),
            "required_passed": n, "required_total": len(REQUIRED), "required_run": len(req)}
    with open(os.path.join(out, "compat_examples.json"), "w") as fh:
        json.dump({"meta": meta, "results": results}, fh, indent=1)
    with open(os.path.join(out, "compat_examples.md"), "w") as fh:
        ran = "" if len(req) == len(REQUIRED) else f" ({len(req)} of them run here)"
        fh.write(f"# Published example tests on our package: {n} of the {len(REQUIRED)} required pass{ran}\n\n")
        fh.write(f"commit {meta['commit']}, {meta['date']}, {device}, examples from {meta['published_examples']}\n\n")
        fh.write("| test file | result | seconds | last line |\n|---|---|---|---|\n")
        for r in results:
            fh.write(f"| {r['test']} | {'pass' if r['pass'] else 'FAIL'} | {r['seconds']} | {r['tail'][:120]} |\n")
    return n


if __name__ == "__main__":
    main()
