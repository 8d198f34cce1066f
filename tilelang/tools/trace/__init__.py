"""Renderers of a finished lower trace (transform/lower_trace.py records it): a coloured
diff per pass in the terminal (`terminal.py`), one self-contained HTML page (`html.py`).
`finish(ctx)` is called once per compile by `tilelang.compile` / `tilelang.jit` /
`tilelang.lower`, also when the compile failed (the pages recorded until then)."""
from __future__ import annotations

import os
import sys

from tilelang.tools.trace.html import write_html
from tilelang.tools.trace.terminal import print_trace

_written: set = set()


def report_path(trace) -> str:
    """`<TL_LOWER_TRACE_DIR>/<script>/<kernel>.html`; a kernel compiled again in the same
    process (another shape) gets `<kernel>_2.html`, ..."""
    script = os.path.splitext(os.path.basename(sys.argv[0] or ""))[0] or "kernel"
    stem = os.path.join(trace.setting.directory, script, trace.kernel)
    path, n = stem + ".html", 1
    while path in _written:
        n += 1
        path = f"{stem}_{n}.html"
    _written.add(path)
    return path


def finish(ctx):
    """Render the compile's trace as its setting asks (a directory trace is written
    already); returns the HTML path when one was written."""
    trace = getattr(ctx, "trace", None)
    if trace is None or trace.finished:
        return None
    trace.finished = True
    if trace.setting.collected is not None:
        trace.setting.collected.append(trace)
    if trace.setting.mode in ("terminal", "both"):
        print_trace(trace)
    if trace.setting.mode in ("html", "both") and trace.pages:
        path = write_html(trace, report_path(trace))
        print(f"[lower_trace] HTML report: {os.path.abspath(path)}", file=sys.stderr)
        return path
    return None
