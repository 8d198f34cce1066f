"""The published `tilelang.tools.lower_trace` API over our trace: `enable()` /
`disable()` trace every later compile (as `TL_LOWER_TRACE` does), and `lower_trace(func,
passes)` applies passes (our pass functions: `tilelang.transform.*`, or any
PrimFunc -> PrimFunc callable) to a function and shows what each changed."""
from __future__ import annotations

import time

from tilelang.tools.trace.diff import page_diffs
from tilelang.tools.trace.html import write_html
from tilelang.tools.trace.terminal import print_trace
from tilelang.transform.lower_trace import LowerTrace, TraceSetting, disable, enable  # noqa: F401
from tilelang.transform.pass_manager import Pass, PassContext


def _named(passes):
    if callable(passes) or (isinstance(passes, tuple) and len(passes) == 2 and isinstance(passes[0], str)):
        passes = [passes]
    out = []
    for p in passes:
        if isinstance(p, tuple):
            out.append(p)
        else:
            out.append((getattr(p, "pass_name", getattr(p, "__name__", type(p).__name__)), p))
    return out


def lower_trace(func_or_mod, passes, *, mode: str = "terminal", context: int = 3,
                html_path: str = "lower_trace_report.html") -> list:
    """Apply `passes` in order to a PrimFunc; print the diffs (`mode="terminal"`), write
    the HTML page (`"html"`) or both. Returns one dict per pass: name, changed, the
    added / deleted line counts and the time in ms."""
    if mode not in ("terminal", "html", "both"):
        raise ValueError(f"lower_trace: mode must be 'terminal', 'html' or 'both', got {mode!r}")
    func = func_or_mod
    if isinstance(func, dict):
        func = next(iter(func.values()))
    trace = LowerTrace(getattr(func, "name", "func"), "", TraceSetting(mode, ""))
    trace.add_ir("input", func)
    ctx = PassContext()
    for name, p in _named(passes):
        t0 = time.perf_counter()
        func = Pass(name, p)(func, ctx)
        trace.add_ir(name, func, time.perf_counter() - t0)
    if mode in ("terminal", "both"):
        print_trace(trace)
    if mode in ("html", "both"):
        write_html(trace, html_path)
    return [{"name": page.name, "changed": d.changed, "add_lines": d.added, "del_lines": d.deleted,
             "time_ms": page.time_s * 1e3}
            for page, d in zip(trace.pages[1:], page_diffs(trace.pages)[1:])]
