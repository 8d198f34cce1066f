"""The lower trace in the terminal: a coloured unified diff for every pass that changed
the IR, with its time; one line for each backend page."""
from __future__ import annotations

import difflib
import os
import sys

from tilelang.tools.trace.diff import page_diffs

_RED, _GREEN, _CYAN, _BOLD, _DIM, _RESET = "\033[31m", "\033[32m", "\033[36m", "\033[1m", "\033[2m", "\033[0m"


def _colour(line, on):
    if not on:
        return line
    if line.startswith(("+++", "---")):
        return _BOLD + line + _RESET
    if line.startswith("@@"):
        return _CYAN + line + _RESET
    if line.startswith("+"):
        return _GREEN + line + _RESET
    if line.startswith("-"):
        return _RED + line + _RESET
    return line


def _time(p):
    return f"{p.time_s * 1e3:.2f} ms" if p.time_s is not None else "-"


def format_trace(trace, colour=False, context=3) -> str:
    pages = trace.pages
    out = [f"[lower_trace] {trace.kernel} ({trace.target}): {len(pages)} pages"]
    unchanged = []
    for i, (p, d) in enumerate(zip(pages, page_diffs(pages))):
        if p.kind != "ir":
            took = f", {_time(p)}" if p.time_s is not None else ""
            out.append(_colour(f"@@ {i:02d} {p.name} ({p.stage}{took}): {len(p.text.splitlines())} lines of {p.kind}",
                               colour))
            continue
        if d.prev is None:
            continue
        if not d.changed:
            unchanged.append(p.name)
            continue
        head = f"{i:02d} {p.name} ({_time(p)}) +{d.added} -{d.deleted}"
        out.append((_BOLD + head + _RESET) if colour else head)
        diff = difflib.unified_diff(pages[d.prev].text.splitlines(), p.text.splitlines(),
                                    f"{d.prev:02d}_{pages[d.prev].name}", f"{i:02d}_{p.name}", n=context, lineterm="")
        out.extend(_colour(line, colour) for line in diff)
    if unchanged:
        note = f"unchanged: {', '.join(unchanged)}"
        out.append((_DIM + note + _RESET) if colour else note)
    return "\n".join(out)


def print_trace(trace, stream=None):
    stream = stream or sys.stdout
    colour = "NO_COLOR" not in os.environ
    print(format_trace(trace, colour=colour), file=stream)
