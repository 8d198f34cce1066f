"""What a fuzz run leaves behind: a summary table (status counts per family), and for
each failing program a standalone repro file: the rendered kernel module, headed by
comments that say how it failed, runnable as `python repro.py [cpu|cuda|sm_90a]`."""
from __future__ import annotations

import collections
import json
import os

from tilelang.testing.fuzz.render import render
from tilelang.testing.fuzz.run import STATUSES


def repro_source(result, target, note=""):
    head = [f"# tilelang fuzz repro: {result.family}, seed {result.program.seed}, target {target}: {result.status}"]
    if note:
        head.append(f"# {note}")
    for line in result.detail.strip().splitlines()[:40]:
        head.append(f"#   {line}"[:400])
    return "\n".join(head) + "\n" + render(result.program)


def write_repro(result, directory, name, target, note=""):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(repro_source(result, target, note))
    return path


def table(results):
    """A Markdown table of status counts per family."""
    counts = collections.defaultdict(collections.Counter)
    for r in results:
        counts[r.family][r.status] += 1
    cols = [s for s in STATUSES if any(c[s] for c in counts.values())]
    lines = ["| family | programs | " + " | ".join(cols) + " |", "|---|---:|" + "---:|" * len(cols)]
    for fam in sorted(counts):
        c = counts[fam]
        lines.append(f"| {fam} | {sum(c.values())} | " + " | ".join(str(c[s]) for s in cols) + " |")
    total = collections.Counter(r.status for r in results)
    lines.append(f"| all | {len(results)} | " + " | ".join(str(total[s]) for s in cols) + " |")
    return "\n".join(lines)


def write_summary(results, directory, meta, minimized=()):
    """summary.md (the table, failures, minimized repros) and summary.json."""
    os.makedirs(directory, exist_ok=True)
    failures = [r for r in results if not r.ok]
    known = meta.get("known_failures_left_out", [])
    title = meta.get("target", "") + (f" (compile only, {meta.get('arch')})" if meta.get("compile_only") else "")
    md = [f"# tilelang fuzz: {title}",
          "", " ".join(f"{k}={v}" for k, v in meta.items() if k != "known_failures_left_out"), "",
          table(results), ""]
    if known:
        md += ["## left out (known failures; `--include-known` tests them)", ""] + [f"- {k}" for k in known] + [""]
    if failures:
        md += ["## failures", ""] + [f"- `{r.headline()}`" for r in failures] + [""]
    if minimized:
        md += ["## minimized", ""] + [f"- {m}" for m in minimized] + [""]
    with open(os.path.join(directory, "summary.md"), "w") as f:
        f.write("\n".join(md))
    data = {"meta": meta, "counts": collections.Counter(r.status for r in results),
            "seconds": sum(r.seconds for r in results),
            "failures": [{"family": r.family, "seed": r.program.seed, "status": r.status,
                          "detail": r.detail[:2000], "program": repr(r.program)} for r in failures]}
    with open(os.path.join(directory, "summary.json"), "w") as f:
        json.dump(data, f, indent=1)
    return os.path.join(directory, "summary.md")


def repro_name(index, result, prefix="fail"):
    return f"{prefix}_{index:05d}_{result.family.lower()}_{result.status}.py"

