"""The published examples' own benchmark entry points (`python <example>.py`: its `__main__`
with the example's default arguments), run under this package and under the published one,
file by file, sequentially, and compared metric by metric (issue 16, item 7).

Each file runs in its own process from its own folder with `PYTHONPATH` putting either this
repository or the published package (`--published DIR`, the unpacked wheels) first, as in
perf_regression.py. Every latency / throughput line the example prints on stdout is parsed:
"Latency: 0.41 ms", "Tile-lang: 0.41 ms", "Ref: 12.5 TFlops", "Best latency: 0.40",
"fwd  tilelang: 0.0123 ms   ref: 0.0456 ms", "Sparse TFLOPS: 310.2, Latency: 0.00042 s", a bare
"0.41" line (gemm_intrinsics prints its latency alone), ... Units are normalised (latency in ms,
throughput in TFLOPS or GB/s; a unitless number counts only when the word just before it names a
latency, time or flops). A metric is keyed by (file, label, kind, occurrence), so the same line
pairs across the two packages; its role is "reference" when its label names torch / triton /
ref / fla / ... and "kernel" (the TileLang kernel under test) otherwise; a throughput whose label
is only "Flops" / "TFlops" takes the role of the metric printed before it ("Torch latency: ..."
then "Flops: ..."). Lines of a torch.profiler table are not metrics.

ratio: published / ours for a latency, ours / published for a throughput: above 1 means ours is
faster. The headline is the geometric mean over the paired kernel latencies; the references'
own geometric mean (torch / triton measured twice, once per package's process) shows the noise.

Writes `<out>/<date>_<device>_example_mains.{md,json}` after every file (a time limit keeps what
ran): the table, files that failed on either side with the error's last line, files skipped
(a module absent here, e.g. `fla` or `flash_attn`; or `--deadline` reached).

    CUDA_HOME=<nvcc prefix> python benchmarks/example_mains.py --examples <tilelang>/examples \\
        --published /tmp/pubpkg --out benchmarks/results [--only gemm/,flash_attention/example_mha]
        [--timeout 240] [--warm 8] [--deadline 530]
    python benchmarks/example_mains.py --list --examples <tilelang>/examples   # the files, no run
    python benchmarks/example_mains.py --merge a.json,b.json --out benchmarks/results  # one table

`--resume earlier.json` keeps an earlier call's runs and runs only the rest. On the H200:
`benchmarks/gpu_example_mains.sh` (one device call; ONLY=... selects files, RESUME=... resumes).
"""
from __future__ import annotations

import argparse
import ast
import datetime
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The published examples whose `__main__` prints a latency or TFLOPs line and that run on an
# sm_90 GPU, in the order they are run (the families issue 16 names first, so a deadline cuts
# the tail). Left out: elementwise, gemm_fp8 and blocksparse_gemm (their defaults print no
# latency), sm100 / sm120 / AMD files, autotune-by-default files, and files needing a model.
DEFAULT_FILES = [
    "gemm/example_gemm.py",
    "gemm/example_gemm_intrinsics.py",
    "gemm/example_gemm_persistent.py",
    "gemm/example_gemm_autotune.py",
    "flash_attention/example_mha_fwd_bshd.py",
    "flash_attention/example_mha_fwd_bhsd.py",
    "flash_attention/example_gqa_fwd_bshd.py",
    "flash_attention/example_mha_bwd_bshd.py",
    "flash_attention/example_mha_bwd_bhsd.py",
    "flash_attention/example_gqa_bwd.py",
    "flash_attention/example_gqa_bwd_tma_reduce.py",
    "flash_attention/example_mha_fwd_varlen.py",
    "flash_decoding/example_gqa_decode.py",
    "flash_decoding/example_mha_inference.py",
    "flash_decoding/example_gqa_decode_varlen_logits.py",
    "deepseek_mla/example_mla_decode.py",
    "deepseek_mla/example_mla_decode_ws.py",
    "deepseek_mla/example_mla_decode_paged.py",
    "deepseek_mla/example_mla_decode_persistent.py",
    "gemv/example_gemv.py",
    "dequantize_gemm/example_dequant_gemm_fp4_hopper.py",
    "dequantize_gemm/example_dequant_gemm_bf16_fp4_hopper.py",
    "dequantize_gemm/example_dequant_gemm_bf16_mxfp4_hopper.py",
    "dequantize_gemm/example_dequant_gemm_w4a8.py",
    "convolution/example_convolution_autotune.py",
    "deepseek_v32/sparse_mla_fwd.py",
    "deepseek_v32/sparse_mla_fwd_pipelined.py",
    "deepseek_v32/sparse_mla_bwd.py",
    "deepseek_v32/fp8_lighting_indexer.py",
    "deepseek_v32/topk_selector.py",
    "warp_specialize/example_warp_specialize_flashmla.py",
    "warp_specialize/example_warp_specialize_gemm_barrierpipe_stage2.py",
    "warp_specialize/example_warp_specialize_gemm_copy_0_gemm_1.py",
    "warp_specialize/example_warp_specialize_gemm_copy_1_gemm_0.py",
    "warp_specialize/example_warp_specialize_gemm_copy_gemm_0_1.py",
    "warp_specialize/example_warp_specialize_gemm_softpipe_stage2.py",
    "attention_sink/example_mha_sink_fwd_bhsd.py",
    "attention_sink/example_mha_sink_bwd_bhsd.py",
    "attention_sink/example_gqa_sink_bwd_bhsd.py",
    "attention_sink/benchmark_mha_sink_fwd.py",
    "attention_sink/benchmark_gqa_sink_fwd.py",
    "cast/example_per_token_cast_to_fp8.py",
    "cast/example_group_per_split_token_cast_to_fp8.py",
    "norm/rms_norm.py",
    "norm/layernorm.py",
    "topk/example_topk.py",
    "dynamic_shape/example_dynamic.py",
    "grouped_gemm/example_grouped_gemm_fwd.py",
    "grouped_gemm/example_grouped_gemm_bwd.py",
    "gemm_sp/example_gemm_sp.py",
    "linear_attention/example_retention_fwd.py",
    "deepseek_deepgemm/example_deepgemm_fp8_2xAcc.py",
    "deepseek_v4/sparse_attn_fwd_sm90.py",
    "deepseek_mhc/example_mhc_bwd.py",
    "hadamard_transform/example_hadamard.py",
]

# Files whose unlabelled latency lines say nothing of what they time: their roles in print order
# (example_mha_inference prints the torch reference's "{:.2f} ms", then the kernel's "{:.4f} ms").
ROLE_BY_ORDER = {"flash_decoding/example_mha_inference.py": {("", "latency"): ("reference", "kernel")}}

# Words in a label that name a reference implementation rather than the TileLang kernel.
REFERENCE_WORDS = {"torch", "pytorch", "ref", "reference", "triton", "fla", "fa", "fa2", "baseline", "cublas",
                   "cudnn", "dense", "flashmla", "flashinfer", "aiter"}
KERNEL_WORDS = {"tilelang", "tile", "tl", "sparse"}
# The last word before a unitless number must name a metric for the number to count.
LATENCY_WORDS = {"latency", "time", "ms"}
THROUGHPUT_WORDS = {"tflops", "flops", "tflop"}
# unit (lower case) -> (kind, factor to the kind's unit: ms, TFLOPS, GB/s)
UNITS = {"ms": ("latency", 1.0), "us": ("latency", 1e-3), "µs": ("latency", 1e-3), "s": ("latency", 1e3),
         "sec": ("latency", 1e3), "seconds": ("latency", 1e3), "tflop/s": ("tflops", 1.0),
         "tflops": ("tflops", 1.0), "gflops": ("tflops", 1e-3), "gb/s": ("gbps", 1.0)}
KIND_UNIT = {"latency": "ms", "tflops": "TFLOPS", "gbps": "GB/s"}
_NUMBER = re.compile(r"(?<![\w.])(?P<num>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)"
                     r"(?:\s*(?P<unit>(?i:tflop/s|tflops|gflops|gb/s|seconds|sec|ms|us|µs|s))(?![\w/]))?")
_PROFILER_SUMMARY = re.compile(r"^\s*Self (CPU|CUDA) time total")


def _words(text):
    return re.findall(r"[a-z0-9]+", text.lower())


def _clean(label):
    """The label's text without the separators around it; "" when nothing but punctuation."""
    label = re.sub(r"\s+", " ", label).strip(" :=,|")
    return label if re.search(r"[A-Za-z0-9]", label) else ""


def _role_of(words):
    if set(words) & REFERENCE_WORDS:
        return "reference"
    if set(words) & KERNEL_WORDS:
        return "kernel"
    return None


def parse_line(line):
    """The metrics one printed line holds: [(label, kind, value, role or None)], values in the
    kind's unit. The label of a metric is the text since the previous metric on the line (an
    empty one takes the line's previous label: "Ref: 1.2 ms | 30 TFlops"); numbers that are no
    metric ("M=1024", "diff: 1e-5", "1.5x") stay part of the next label."""
    if _PROFILER_SUMMARY.match(line):
        return []
    found, start, last_label = [], 0, ""
    for m in _NUMBER.finditer(line):
        raw = line[start:m.start()]
        unit = (m.group("unit") or "").lower()
        if unit:
            kind, factor = UNITS[unit]
        else:
            after = line[m.end():m.end() + 1]
            last = (_words(raw) or [""])[-1]
            if after and (after.isalpha() or after == "%"):   # "1.5x", "12%"
                continue
            if line.strip() == m.group(0):                     # print(latency)
                kind, factor = "latency", 1.0
            elif not raw.rstrip().endswith((":", "=")):
                continue
            elif last in THROUGHPUT_WORDS:                     # "Best TFlops: 612.3", "fwd tflops = 301"
                kind, factor = "tflops", 1.0
            elif last in LATENCY_WORDS:                        # "Best latency: 0.4", "tilelang_time: 0.4"
                kind, factor = "latency", 1.0
            else:
                continue
        own = _clean(raw)
        label = own or last_label
        role = _role_of(_words(own)) or _role_of(_words(line[:m.start()]))
        found.append((label, kind, float(m.group("num")) * factor, role))
        last_label, start = label, m.end()
    if len(found) > 3 or (len(found) > 1 and re.search(r"\d%", line)):
        return []   # a torch.profiler table row (Self CUDA, Self CUDA %, CUDA total, ...)
    return found


def parse_metrics(stdout, file=None):
    """Every metric a run printed, in order: [{"label", "key", "kind", "value", "n", "role"}];
    `n` counts the earlier metrics with the same (key, kind), so repeated lines pair in order."""
    out, seen, by_order = [], {}, ROLE_BY_ORDER.get(file, {})
    for line in stdout.splitlines():
        for label, kind, value, role in parse_line(line):
            key = label.lower()
            n = seen.get((key, kind), 0)
            seen[(key, kind)] = n + 1
            if (key, kind) in by_order and n < len(by_order[(key, kind)]):
                role = by_order[(key, kind)][n]
            if role is None:   # "Flops: ..." after "Torch latency: ...": the same measurement's role
                generic = kind != "latency" and set(_words(label)) <= THROUGHPUT_WORDS
                role = out[-1]["role"] if out and generic else "kernel"
            out.append({"label": label, "key": key, "kind": kind, "value": value, "n": n, "role": role})
    return out


def pair(ours, published):
    """Rows by (file, key, kind, n) with both values and the ratio (above 1: ours faster)."""
    rows, index = [], {}
    for side_name, side in (("ours", ours), ("published", published)):
        for f, r in side.items():
            for m in r.get("metrics") or []:
                k = (f, m["key"], m["kind"], m["n"])
                if k not in index:
                    index[k] = {"file": f, "label": m["label"], "kind": m["kind"], "n": m["n"], "role": m["role"],
                                "ours": None, "published": None}
                    rows.append(index[k])
                index[k][side_name] = m["value"]
    for row in rows:
        a, b = row["ours"], row["published"]
        row["ratio"] = None if not a or not b else (b / a if row["kind"] == "latency" else a / b)
    return rows


def geomean(values):
    vals = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def missing_modules(path, seen=None):
    """Top-level modules `path` (and the sibling modules it imports) needs that are not installed
    here; imports under try/except are optional and not counted; tilelang/tvm come from the
    package under test."""
    seen = set() if seen is None else seen
    if path in seen or not path.exists():
        return set()
    seen.add(path)
    try:
        tree = ast.parse(path.read_text(), str(path))
    except SyntaxError:
        return set()
    optional = {id(n) for t in ast.walk(tree) if isinstance(t, ast.Try) for s in t.body for n in ast.walk(s)}
    names = set()
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    missing = set()
    for name in sorted(names - {"tilelang", "tvm", "__future__"}):
        sibling = path.parent / f"{name}.py"
        if sibling.exists() or (path.parent / name).is_dir():
            missing |= missing_modules(sibling if sibling.exists() else path.parent / name / "__init__.py", seen)
        elif importlib.util.find_spec(name) is None:
            missing.add(name)
    return missing


def _text(v):
    return v.decode(errors="replace") if isinstance(v, bytes) else (v or "")


def run_file(path: Path, pythonpath: str, timeout: float, rel: str):
    """One `python <file>` from its folder: rc, seconds, the metrics, the error's last line."""
    env = dict(os.environ, PYTHONPATH=pythonpath, PYTHONUNBUFFERED="1")
    t = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, path.name], cwd=path.parent, env=env, capture_output=True, text=True,
                           timeout=max(1, timeout))
        out, err, rc = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out, err, rc = _text(e.stdout), _text(e.stderr) + f"\ntimeout after {timeout:.0f} s", "timeout"
    row = {"rc": rc, "seconds": round(time.perf_counter() - t, 1), "metrics": parse_metrics(out, rel)}
    if rc != 0:
        lines = [line for line in (err or out).strip().splitlines() if line.strip()]
        row["error"] = (lines[-1] if lines else f"exit status {rc}")[:300]
        row["stderr_tail"] = (err or "").strip().splitlines()[-25:]
    row["log"] = out[-20000:] + ("\n--- stderr ---\n" + err[-20000:] if err else "")
    return row


def warm(jobs, parallel, timeout, until):
    """Every (file, side) once, `parallel` at a time and untimed: both packages cache their
    kernels on disk (the published one takes seconds per kernel), so the timed sequential pass
    mostly loads them. Returns each run's seconds, the timed pass's estimate of what it needs;
    runs that would start after `until` are left out."""
    from concurrent.futures import ThreadPoolExecutor
    took = {}

    def one(job):
        f, rel, side, pythonpath = job
        left = until - time.monotonic()
        if left > 5:
            took[(rel, side)] = run_file(f, pythonpath, min(timeout, left), rel)["seconds"]
    with ThreadPoolExecutor(parallel) as ex:
        list(ex.map(one, jobs))
    return took


def device_name():
    try:
        import torch
        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu (no CUDA GPU)"
    except ImportError:
        return "no torch"
    except Exception as e:  # noqa: BLE001
        return f"unknown ({type(e).__name__})"


def _fmt(v):
    return "-" if v is None else f"{v:.4g}"


def markdown(meta, rows, ours, published, skipped):
    kern = [r["ratio"] for r in rows if r["ratio"] and r["kind"] == "latency" and r["role"] == "kernel"]
    refs = [r["ratio"] for r in rows if r["ratio"] and r["kind"] == "latency" and r["role"] == "reference"]
    g, gr = geomean(kern), geomean(refs)
    out = ["# The published examples' own `main()`: ours vs the published package", "",
           f"commit {meta['commit']}, {meta['date']}, {meta['device']}; published {meta['published']}; "
           f"examples {meta['examples']}", "", f"`{meta['command']}`", "",
           *([f"**{meta['note']}**", ""] if meta.get("note") else []),
           (f"**geometric mean of the kernel latencies' published / ours: {g:.3f}** over {len(kern)} paired "
            f"metrics (above 1: ours faster)" if g else "no kernel latency was measured under both packages"),
           "", (f"references (torch / triton / ... timed in each package's process; 1.00 is no noise): "
                f"{gr:.3f} over {len(refs)}" if gr else "no reference latency paired"), "",
           "ratio: published / ours for a latency, ours / published for a throughput.", "",
           "| file | metric | role | ours | published | ratio |", "|---|---|---|---|---|---|"]
    for r in rows:
        name = (r["label"] or "(unlabelled)") + (f" #{r['n'] + 1}" if r["n"] else "")
        out.append(f"| {r['file']} | {name} [{KIND_UNIT[r['kind']]}] | {r['role']} | {_fmt(r['ours'])} | "
                   f"{_fmt(r['published'])} | {_fmt(r['ratio'])} |")
    failed = [(f, side, r) for side, d in (("ours", ours), ("published", published)) for f, r in sorted(d.items())
              if r["rc"] != 0]
    if failed:
        out += ["", "## Failed runs (the error's last line)", "", "| file | side | rc | seconds | error |",
                "|---|---|---|---|---|"]
        out += [f"| {f} | {side} | {r['rc']} | {r['seconds']} | {r.get('error', '').replace('|', '/')} |"
                for f, side, r in failed]
    silent = [(f, side) for side, d in (("ours", ours), ("published", published)) for f, r in sorted(d.items())
              if r["rc"] == 0 and not r["metrics"]]
    if silent:
        out += ["", "## Runs that passed but printed no metric", ""] + [f"- {f} ({side})" for f, side in silent]
    if skipped:
        out += ["", "## Not run", ""] + [f"- {f}: {why}" for f, why in skipped.items()]
    return "\n".join(out) + "\n"


def write_report(stem, meta, ours, published, skipped):
    rows = pair(ours, published)
    strip = lambda d: {f: {k: v for k, v in r.items() if k != "log"} for f, r in d.items()}  # noqa: E731
    stem.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows, "ours": strip(ours),
                                                     "published": strip(published), "skipped": skipped}, indent=1))
    md = markdown(meta, rows, ours, published, skipped)
    stem.with_suffix(".md").write_text(md)
    return md


def select(examples: Path, only, files=None):
    rels = files or DEFAULT_FILES
    if only:
        # "gemm/" is the folder gemm (not dequantize_gemm/); anything else matches within the path
        rels = [r for r in rels if any(r.startswith(o) if o.endswith("/") else o in r for o in only)]
    return rels


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", type=Path, help="the published repository's examples/ folder")
    ap.add_argument("--published", help="folder holding the published tilelang package (unpacked wheels); "
                    "without it only this package runs")
    ap.add_argument("--out", default="benchmarks/results", type=Path, help="folder for the .md/.json report")
    ap.add_argument("--only", help="comma-separated folders (`gemm/`: that folder only) or substrings of `folder/file.py` "
                    "(`mla_decode`)")
    ap.add_argument("--files", help="comma-separated `folder/file.py` to run instead of the default list")
    ap.add_argument("--timeout", type=float, default=240, help="seconds per file and side (default 240)")
    ap.add_argument("--warm", type=int, default=0, help="first run every file under both packages in this many "
                    "parallel processes, untimed, so the timed sequential pass finds its kernels cached")
    ap.add_argument("--deadline", type=float, default=0, help="seconds for the whole run: files that no longer "
                    "fit are skipped and listed as such (0: no limit)")
    ap.add_argument("--device", default=None, help="device name for the report (default: torch's)")
    ap.add_argument("--list", action="store_true", help="print the selected files and why any would be skipped")
    ap.add_argument("--merge", help="comma-separated earlier .json reports to combine into one table (no run)")
    ap.add_argument("--no-module-check", action="store_true", help="run files even when a module they import "
                    "is not installed here (they then fail, and the report says with which error)")
    ap.add_argument("--resume", type=Path, help="an earlier report (.json) of this script: keep its runs, run "
                    "only the files it has not run yet (one device call after another), write the union")
    ap.add_argument("--logs", type=Path, help="folder for each run's stdout/stderr")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    if args.merge:
        return merge(args)
    if args.examples is None:
        ap.error("--examples is required (the published repository's examples/ folder), unless --merge")
    if not args.examples.is_dir():
        ap.error(f"--examples {args.examples}: no such folder")
    if args.published and not (Path(args.published) / "tilelang").is_dir():
        ap.error(f"--published {args.published}: no tilelang/ package in that folder")
    rels = select(args.examples, args.only.split(",") if args.only else None,
                  args.files.split(",") if args.files else None)
    skipped, todo = {}, []
    for rel in rels:
        f = args.examples / rel
        if not f.exists():
            skipped[rel] = "no such file in --examples"
        elif not args.no_module_check and (missing := missing_modules(f)):
            skipped[rel] = "needs " + ", ".join(sorted(missing)) + " (not installed)"
        else:
            todo.append((rel, f))
    if args.list:
        for rel in rels:
            print(f"{rel}: {skipped.get(rel, 'run')}")
        return 0
    device = args.device or device_name()
    commit = os.environ.get("TL_COMMIT") or subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                                           capture_output=True, text=True).stdout.strip()
    meta = {"commit": commit or "unknown", "date": datetime.date.today().isoformat(), "device": device,
            "published": args.published or "not run", "examples": _revision(args.examples),
            "command": "python benchmarks/example_mains.py " + " ".join(argv if argv is not None else sys.argv[1:])}
    args.out.mkdir(parents=True, exist_ok=True)
    if args.logs:
        args.logs.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"{meta['date']}_{_tag(device)}_example_mains"
    sides = [("ours", str(ROOT))] + ([("published", args.published)] if args.published else [])
    limit = t0 + args.deadline if args.deadline else float("inf")
    ours, published = {}, {}
    if args.resume:   # the runs of an earlier call; its deadline-skipped files run now
        earlier = json.loads(args.resume.read_text())
        ours.update(earlier["ours"])
        published.update(earlier["published"])
        meta["resumed_from"] = args.resume.name
        meta["command"] = earlier["meta"]["command"] + " + " + meta["command"]
        todo = [(rel, f) for rel, f in todo if rel not in ours]
    estimate = {}
    if args.warm and todo:   # at most 45% of the deadline, the rest is the timed pass's
        until = t0 + 0.45 * args.deadline if args.deadline else float("inf")
        jobs = [(f, rel, side, f"{pp}:{f.parent}") for rel, f in todo for side, pp in sides]
        t = time.monotonic()
        estimate = warm(jobs, args.warm, args.timeout, until)
        print(f"warm-up: {len(estimate)} of {len(jobs)} runs in {time.monotonic() - t:.0f} s", flush=True)
    if not device.startswith("NVIDIA") and "GPU" not in device.upper():
        meta["note"] = f"no CUDA GPU visible here ({device}): every example is expected to fail"
    md = write_report(stem, meta, ours, published, skipped)
    for rel, f in todo:
        need = sum(min(args.timeout, estimate.get((rel, s), 30)) for s, _ in sides)
        if time.monotonic() + need > limit:
            skipped[rel] = f"deadline: {limit - time.monotonic():.0f} s left, about {need:.0f} s needed"
            continue
        for side, pp in sides:
            left = limit - time.monotonic()
            r = run_file(f, f"{pp}:{f.parent}", min(args.timeout, left), rel)
            (ours if side == "ours" else published)[rel] = r
            if args.logs:
                (args.logs / f"{rel.replace('/', '__')}.{side}.log").write_text(r["log"])
            shown = ", ".join(f"{m['label'] or '-'}={m['value']:.4g}" for m in r["metrics"][:4])
            print(f"{side:9} {rel}: rc {r['rc']} {r['seconds']} s {shown or r.get('error', '')}", flush=True)
        md = write_report(stem, meta, ours, published, skipped)
    md = write_report(stem, meta, ours, published, skipped)   # the files the deadline left out
    print(md)
    print(f"wrote {stem}.md and .json", flush=True)
    return 0


def merge(args):
    """One table from several reports (e.g. one device call per group of files)."""
    paths = args.merge.split(",")
    reports = [json.loads(Path(p).read_text()) for p in paths]
    ours, published, skipped = {}, {}, {}
    for rep in reports:
        ours.update(rep["ours"])
        published.update(rep["published"])
        skipped.update(rep.get("skipped", {}))
    for f in list(skipped):   # run by a later report
        if f in ours:
            del skipped[f]
    first = reports[0]["meta"]
    meta = dict(first, commit=",".join(sorted({r["meta"]["commit"] for r in reports})),
                command=" + ".join(r["meta"]["command"] for r in reports),
                published=",".join(sorted({r["meta"]["published"] for r in reports})),
                merged_from=[Path(p).name for p in paths])
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"{first['date']}_{_tag(first['device'])}_example_mains"
    print(write_report(stem, meta, ours, published, skipped))
    print(f"wrote {stem}.md and .json")
    return 0


def _tag(device):
    """The device's short name in the report's file name: h200, or cpu without a CUDA GPU."""
    if "H200" in device:
        return "h200"
    if not device.startswith("NVIDIA"):
        return "cpu"
    return re.sub(r"\W+", "_", device.split()[-1].lower()).strip("_")


def _revision(examples: Path):
    rev = examples.resolve().parent / "REVISION"
    return "tile-ai/tilelang " + rev.read_text().strip() if rev.exists() else str(examples)


if __name__ == "__main__":
    sys.exit(main())
