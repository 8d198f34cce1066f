"""The pass viewer: every kernel a script compiles, as HTML pages of its pass pipeline
(a strip of the passes, width by time, green where a pass changed the IR) and what each
pass changed -- the lower trace's page (tools/trace/html.py), written where you say.

    python -m tilelang.tools.pass_viewer [-o passes/] kernel.py [script args]
    tilelang.tools.pass_viewer.view(prim_func, target="cpu", output="passes.html")

The script runs as `python kernel.py` would (its `__main__` block included); each
compile inside it is traced, the kernel cache notwithstanding. `index.html` in the
output directory lists the kernels."""
from __future__ import annotations

import argparse
import html
import os
import runpy
import sys

from tilelang.tools.trace.html import write_html
from tilelang.transform.lower_trace import tracing


def view(func, target="cpu", output="passes.html", pass_configs=None, out_idx=None):
    """Compile `func` (a PrimFunc) for `target` with every pass traced and write the
    page to `output`; returns its path."""
    from tilelang.jit import compile as compile_kernel
    with tracing() as traces:
        compile_kernel(func, out_idx=out_idx, target=target, pass_configs=pass_configs)
    if not traces:
        raise RuntimeError("pass_viewer: the compile recorded no passes")
    return write_html(traces[-1], output, title=f"passes: {traces[-1].kernel}")


def run_script(script, argv=(), out_dir="passes"):
    """Run `script` with `argv`, tracing every compile; write one page per compiled
    kernel and an index into `out_dir`. Returns the pages' paths."""
    if not os.path.isfile(script):
        raise FileNotFoundError(f"pass_viewer: no such script: {script}")
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [script, *argv]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        with tracing() as traces:
            try:
                runpy.run_path(script, run_name="__main__")
            except SystemExit as e:   # a script's own sys.exit(0) ends it, not the viewer
                if e.code not in (None, 0):
                    raise
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    os.makedirs(out_dir, exist_ok=True)
    paths, seen = [], {}
    for t in traces:
        seen[t.kernel] = seen.get(t.kernel, 0) + 1
        stem = t.kernel if seen[t.kernel] == 1 else f"{t.kernel}_{seen[t.kernel]}"
        paths.append(write_html(t, os.path.join(out_dir, f"{stem}.html"), title=f"passes: {t.kernel}"))
    _write_index(out_dir, traces, paths, script)
    return paths


def _write_index(out_dir, traces, paths, script):
    rows = "".join(
        f"<li><a href='{html.escape(os.path.basename(p))}'>{html.escape(t.kernel)}</a> "
        f"<span>{html.escape(t.target)} &middot; {len(t.pages)} pages</span></li>" for t, p in zip(traces, paths))
    with open(os.path.join(out_dir, "index.html"), "w") as f:
        f.write(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>passes of {html.escape(script)}</title>"
                f"<style>body{{font:14px system-ui,sans-serif;margin:2em}}span{{color:#6b7280}}</style></head>"
                f"<body><h1>kernels compiled by {html.escape(script)}</h1><ol>{rows or '<li>none</li>'}</ol>"
                f"</body></html>\n")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tilelang.tools.pass_viewer",
                                 description="HTML pages of the pass pipeline of every kernel a script compiles")
    ap.add_argument("script", help="the Python file that compiles kernels")
    ap.add_argument("-o", "--output", default="passes", help="directory for the pages (default ./passes)")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    a = ap.parse_args(argv)
    paths = run_script(a.script, a.args, a.output)
    for p in paths:
        print(os.path.abspath(p))
    if not paths:
        print(f"pass_viewer: {a.script} compiled no kernel", file=sys.stderr)
        return 1
    print(f"index: {os.path.abspath(os.path.join(a.output, 'index.html'))}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
