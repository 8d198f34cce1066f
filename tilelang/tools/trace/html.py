"""The lower trace as one self-contained HTML page (no network: CSS and JS inline). The
page lists the pipeline's pages with their times, shows the IR after a pass, its diff
against the previous pass (side by side or unified), links every printed statement back
to the user's source line, and searches all pages. `#pass=<n or name>&view=split|unified|ir`
in the URL selects a page, `&q=<regex>` searches, `&src=<file index>:<line>` opens the
source panel (the browser tests use them)."""
from __future__ import annotations

import html
import json
import os
from importlib import resources

from tilelang.tools.trace.diff import page_diffs


def trace_data(trace) -> dict:
    """The page's data: the trace with its diffs (opcodes; the page's JS expands them)."""
    sources = trace.sources()
    files = list(sources)
    pages = []
    for p, d in zip(trace.pages, page_diffs(trace.pages)):
        pages.append({
            "name": p.name, "kind": p.kind, "stage": p.stage, "text": p.text,
            "ms": None if p.time_s is None else round(p.time_s * 1e3, 4),
            "spans": {str(k): [files.index(f), ln] for k, (f, ln) in p.spans.items() if f in sources},
            "prev": d.prev, "ops": d.opcodes, "added": d.added, "deleted": d.deleted,
        })
    return {"kernel": trace.kernel, "target": trace.target, "pages": pages,
            "sources": [[f, sources[f]] for f in files]}


def render_html(trace, title=None) -> str:
    template = resources.files("tilelang.tools.trace").joinpath("page.html").read_text()
    data = json.dumps(trace_data(trace)).replace("</", "<\\/")   # cannot close the <script>
    title = title or f"lower trace: {trace.kernel}"
    return template.replace("{{TITLE}}", html.escape(title)).replace("{{DATA}}", data)


def write_html(trace, path, title=None) -> str:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(render_html(trace, title))
    return path
