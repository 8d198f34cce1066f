"""Run the published TileLang's own tests (`testing/python/<dir>`) against this package.

The published repository is not part of this tree: fetch tile-ai/tilelang somewhere outside
it (never commit its files) and pass its root with --repo. Each test file is copied to a
scratch folder (the published `testing/conftest.py` would put their source tree first on
`sys.path`), then run in its own pytest process with this repository first on PYTHONPATH,
several files at once, each under a time limit. Every test gets a status -- passed, failed,
error, skipped, not applicable (listed in benchmarks/conformance/not_applicable.txt with a
reason) -- and every failure a reason class:

  wrong result        a numeric comparison failed (the worst kind)
  missing name        an attribute, import or keyword the published API has and we lack
  compile error       our generated source did not compile (NVRTC / the C++ compiler)
  rejected            we raised a located TileLang error where the published package accepts
  accepted            the test expects an error and we raised none
  source check        an assertion on generated source or IR text
  internal error      any other exception from our package
  timeout             the file ran past its limit

    python benchmarks/conformance.py --repo /path/to/tilelang --out benchmarks/results   # H200
    python benchmarks/conformance.py --repo /path/to/tilelang --mode cpu --out /tmp/conf  # no GPU

--mode cpu emulates CUDA on the CPU backend (see benchmarks/conformance/plugin.py): a
developer's loop, not the measure. Writes <date>_<device>_conformance.{md,json}.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "benchmarks", "conformance")
NA_FILE = os.path.join(HERE, "not_applicable.txt")

CLASSES = ["wrong result", "missing name", "compile error", "rejected", "accepted",
           "source check", "internal error", "timeout"]


def load_not_applicable(path=NA_FILE):
    """Lines `<file>::<test pattern>  # reason`; the pattern may use fnmatch wildcards."""
    rules = []
    if not os.path.exists(path):
        return rules
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        pat, _, reason = line.partition("#")
        rules.append((pat.strip(), reason.strip()))
    return rules


def not_applicable(rules, nodeid):
    for pat, reason in rules:
        if fnmatch.fnmatchcase(nodeid, pat):
            return reason
    return None


_MISSING = re.compile(r"(AttributeError|ImportError|ModuleNotFoundError|NameError)\b|has no attribute|"
                      r"unexpected keyword argument|got an unexpected keyword|cannot import name")
_WRONG = re.compile(r"Mismatched elements|not close|allclose|assert_close|Tensor-likes|"
                    r"elements differ|Max(imum)? (absolute|relative) difference|torch\.equal|"
                    r"assert_similar|cosine similarity|mismatch|lost update|"
                    r"got -?[0-9][0-9.e+-]*,? (but )?expected|expected -?[0-9][0-9.e+-]*,? (but )?got", re.I)
_COMPILE = re.compile(r"CudaCompileError|NVRTC|nvrtc|CompileError|error: |ptxas")
_OURS = re.compile(r"TileLangError|TargetFeatureError|ShapeMismatchError|DTypeMismatchError|UnsupportedConstructError|"
                   r"UnknownNameError|ArgumentError|LoweringError|IndexArityError|NotImplementedError")


def classify(message: str) -> str:
    """The class of a failure, read from its exception line first (the traceback may pass
    through comparison helpers whatever went wrong), then from the whole text."""
    line = _first_line(message)
    if line and line != (message or "").strip():
        c = _classify(line)
        if c != "internal error" or "Error" in line:
            return c
    return _classify(message or "")


def _classify(m: str) -> str:
    if "DID NOT RAISE" in m or "DID NOT WARN" in m:
        return "accepted"
    if _COMPILE.search(m) and "TileLangError" not in m.split("\n")[0]:
        if "CompileError" in m or "NVRTC" in m or "nvrtc" in m or "ptxas" in m:
            return "compile error"
    if _MISSING.search(m):
        return "missing name"
    if _OURS.search(m):
        return "rejected"
    if "AssertionError" in m or m.startswith("assert"):
        if _WRONG.search(m):
            return "wrong result"
        return "source check"
    if _WRONG.search(m):
        return "wrong result"
    return "internal error"


def parse_junit(path, file_rel, rules):
    tests = []
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, FileNotFoundError):
        return tests
    for case in root.iter("testcase"):
        name = case.get("name")
        nodeid = f"{file_rel}::{name}"
        status, msg = "passed", ""
        for tag in ("failure", "error", "skipped"):
            el = case.find(tag)
            if el is not None:
                status = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                msg = (el.get("message") or "") + "\n" + (el.text or "")
                break
        na = not_applicable(rules, nodeid)
        row = {"test": nodeid, "status": status}
        if na and status in ("failed", "error"):   # a skipped test stays skipped
            row["status"] = "not applicable"
            row["reason"] = na
        elif status in ("failed", "error"):
            row["class"] = classify(msg)
            row["message"] = _first_line(msg)
        elif status == "skipped":
            row["message"] = _first_line(msg)
        tests.append(row)
    return tests


def _first_line(msg):
    lines = [ln.strip() for ln in (msg or "").strip().splitlines() if ln.strip()]
    # the most telling line: the exception line pytest marks with 'E', else the first
    for ln in lines:
        if ln.startswith("E ") and ("Error" in ln or "assert" in ln or "Exception" in ln):
            return ln[1:].strip()[:300]
    return (lines[0] if lines else "")[:300]


def run_file(src_path, file_rel, scratch, timeout, mode, rules):
    os.makedirs(os.path.dirname(os.path.join(scratch, file_rel)), exist_ok=True)
    dst = os.path.join(scratch, file_rel)
    shutil.copy(src_path, dst)
    junit = dst + ".junit.xml"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, HERE, env.get("PYTHONPATH", "")])
    env["PYTHONUNBUFFERED"] = "1"
    env["TL_CONFORMANCE_MODE"] = mode
    # a kernel cache of this run's own: every kernel is compiled (and CUDA-checked in cpu mode)
    env["TILELANG_CACHE_DIR"] = os.path.join(scratch, "kernel_cache")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "plugin",
           "--noconftest", "--rootdir", scratch, "-c", os.path.join(scratch, "pytest.ini"),
           "--tb=short", "-o", "junit_family=xunit1", f"--junitxml={junit}", os.path.basename(dst)]
    t0 = time.time()
    timed_out = False
    try:
        proc = subprocess.run(cmd, cwd=os.path.dirname(dst), env=env, capture_output=True, text=True,
                              timeout=timeout)
        log = proc.stdout + proc.stderr
        rc = proc.returncode
    except subprocess.TimeoutExpired as e:
        timed_out, rc = True, "timeout"
        log = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
    tests = parse_junit(junit, file_rel, rules)
    if timed_out:
        tests.append({"test": f"{file_rel}::<rest of file>", "status": "failed", "class": "timeout",
                      "message": f"the file ran past {timeout} s"})
    elif not tests:   # collection failed before junit recorded anything
        na = not_applicable(rules, f"{file_rel}::<collection>")
        row = {"test": f"{file_rel}::<collection>", "status": "not applicable" if na else "error"}
        if na:
            row["reason"] = na
        else:
            tail = "\n".join(log.strip().splitlines()[-30:])
            row["class"] = classify(tail)
            row["message"] = _first_line(tail)
        tests.append(row)
    return {"file": file_rel, "rc": rc, "seconds": round(time.time() - t0, 1), "tests": tests, "log": log}


def summarize(files):
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0, "not applicable": 0}
    classes = {c: 0 for c in CLASSES}
    for f in files:
        for t in f["tests"]:
            counts[t["status"]] = counts.get(t["status"], 0) + 1
            if "class" in t:
                classes[t["class"]] += 1
    ran = counts["passed"] + counts["failed"] + counts["error"]
    return counts, classes, ran


def device_name(mode):
    if mode == "cpu":
        return "cpu (CUDA emulated on the CPU backend)"
    try:
        import torch
        return torch.cuda.get_device_name(0)
    except Exception:  # noqa: BLE001
        return "unknown"


def commit():
    if os.environ.get("TL_COMMIT"):
        return os.environ["TL_COMMIT"]
    try:
        return subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True).strip()
    except Exception:  # noqa: BLE001
        return "unknown"


def write_report(files, args, published):
    counts, classes, ran = summarize(files)
    total = ran + counts["not applicable"]
    date = datetime.date.today().isoformat()
    dev = device_name(args.mode)
    tag = "h200" if "H200" in dev and args.mode != "cpu" else args.mode if args.mode == "cpu" else "gpu"
    stem = os.path.join(args.out, f"{date}_{tag}_conformance")
    meta = {"commit": commit(), "date": date, "device": dev, "mode": args.mode, "published": published,
            "counts": counts, "classes": classes,
            "pass_rate": round(counts["passed"] / total, 4) if total else 0.0,
            # the measure: passed among the tests that apply (n/a: listed with a reason)
            "applicable_pass_rate": round(counts["passed"] / ran, 4) if ran else 0.0,
            "not_applicable_share": round(counts["not applicable"] / total, 4) if total else 0.0}
    slim = [{k: v for k, v in f.items() if k != "log"} for f in files]
    with open(stem + ".json", "w") as fh:
        json.dump({"meta": meta, "files": slim}, fh, indent=1)
    with open(stem + ".md", "w") as fh:
        fh.write(f"# Published TileLang tests on our package: {counts['passed']} of {total} pass "
                 f"({100 * meta['pass_rate']:.1f}%; {100 * meta['applicable_pass_rate']:.1f}% of the "
                 f"{ran} that apply)\n\n")
        fh.write(f"commit {meta['commit']}, {date}, {dev}, tests from {published}; "
                 f"`python benchmarks/conformance.py --repo <tilelang checkout> --mode {args.mode}`\n\n")
        fh.write("| passed | failed | error | not applicable | skipped |\n|---|---|---|---|---|\n")
        fh.write(f"| {counts['passed']} | {counts['failed']} | {counts['error']} | {counts['not applicable']} "
                 f"| {counts['skipped']} |\n\n")
        fh.write("Failures by reason: " + ", ".join(f"{c} {n}" for c, n in classes.items() if n) + "\n\n")
        fh.write("| file | passed | failed/error | n/a | skipped | seconds |\n|---|---|---|---|---|---|\n")
        for f in sorted(files, key=lambda f: f["file"]):
            st = [t["status"] for t in f["tests"]]
            fh.write(f"| {f['file']} | {st.count('passed')} | {st.count('failed') + st.count('error')} | "
                     f"{st.count('not applicable')} | {st.count('skipped')} | {f['seconds']} |\n")
        fh.write("\n## Failures\n\n| test | class | message |\n|---|---|---|\n")
        for f in sorted(files, key=lambda f: f["file"]):
            for t in f["tests"]:
                if t["status"] in ("failed", "error"):
                    msg = t.get("message", "").replace("|", "\\|")[:200]
                    fh.write(f"| {t['test']} | {t['class']} | {msg} |\n")
    return stem, meta


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", required=True, help="root of a tile-ai/tilelang checkout")
    ap.add_argument("--dirs", nargs="*", default=["language", "kernel"], help="folders of testing/python")
    ap.add_argument("--only", nargs="*", help="file name patterns to run (fnmatch)")
    ap.add_argument("--mode", choices=["device", "cpu"], default="device")
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    ap.add_argument("--timeout", type=int, default=300, help="seconds per test file")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--logs", help="folder for each file's pytest log")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rules = load_not_applicable()
    rev = os.path.join(args.repo, "REVISION")   # a copy without .git says its revision here
    if os.path.exists(rev):
        published = "tile-ai/tilelang " + open(rev).read().strip()
    elif os.path.isdir(os.path.join(args.repo, ".git")):
        published = "tile-ai/tilelang " + subprocess.check_output(
            ["git", "describe", "--tags", "--always"], cwd=args.repo, text=True, stderr=subprocess.DEVNULL).strip()
    else:
        published = "tile-ai/tilelang (unknown revision)"
    todo = []
    for d in args.dirs:
        folder = os.path.join(args.repo, "testing", "python", d)
        for name in sorted(os.listdir(folder)):
            if name.startswith("test_") and name.endswith(".py"):
                if args.only and not any(fnmatch.fnmatch(name, p) for p in args.only):
                    continue
                todo.append((os.path.join(folder, name), f"{d}/{name}"))
    scratch = tempfile.mkdtemp(prefix="tl_conformance_")
    with open(os.path.join(scratch, "pytest.ini"), "w") as fh:
        fh.write("[pytest]\nfilterwarnings = ignore\n")
    files = []
    t0 = time.time()
    with cf.ThreadPoolExecutor(args.jobs) as pool:
        futs = {pool.submit(run_file, p, rel, scratch, args.timeout, args.mode, rules): rel for p, rel in todo}
        for fut in cf.as_completed(futs):
            r = fut.result()
            files.append(r)
            st = [t["status"] for t in r["tests"]]
            print(f"{r['file']}: {st.count('passed')} passed, {st.count('failed') + st.count('error')} failed, "
                  f"{st.count('not applicable')} n/a ({r['seconds']} s)", flush=True)
            if args.logs:
                os.makedirs(args.logs, exist_ok=True)
                with open(os.path.join(args.logs, r["file"].replace("/", "__") + ".log"), "w") as fh:
                    fh.write(r["log"])
            write_report(files, args, published)   # after each file: a device time limit keeps what ran
    stem, meta = write_report(files, args, published)
    c = meta["counts"]
    print(f"{c['passed']} passed, {c['failed']} failed, {c['error']} errors, {c['not applicable']} not applicable, "
          f"{c['skipped']} skipped; pass rate {100 * meta['pass_rate']:.1f}% in {time.time() - t0:.0f} s -> {stem}.md")


if __name__ == "__main__":
    main()
