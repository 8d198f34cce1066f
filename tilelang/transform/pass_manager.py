"""A small pass manager: every pass is a named function PrimFunc -> PrimFunc; each
run is timed, and the IR after every pass can be dumped (the lower trace).

- `TL_LOWER_TRACE=<dir>` (or pass config `tl.lower_trace`) writes `NN_<pass>.py`
  files with the printed IR after each pass.
- `TILELANG_PASS_PROFILE=1` prints a per-pass timing table after each pipeline.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field


@dataclass
class Pass:
    name: str
    fn: object

    def __call__(self, func, ctx):
        return self.fn(func, ctx) if _wants_ctx(self.fn) else self.fn(func)


def _wants_ctx(fn):
    code = getattr(fn, "__code__", None)
    return code is not None and code.co_argcount >= 2


def function_pass(name):
    """Decorator naming a pass function."""
    def deco(fn):
        fn.pass_name = name
        return fn
    return deco


_config_stack: list = []


def push_pass_configs(config: dict):
    """`with tvm.transform.PassContext(config=...)`: configs for the compiles inside."""
    _config_stack.append(dict(config))


def pop_pass_configs():
    _config_stack.pop()


def current_pass_configs() -> dict:
    out = {}
    for c in _config_stack:
        out.update(c)
    return out


@dataclass
class PassContext:
    config: dict = field(default_factory=dict)
    target: object = None
    timings: list = field(default_factory=list)

    def get(self, key, default=None):
        return self.config.get(key, default)


def trace_dir(ctx):
    d = ctx.get("tl.lower_trace") or os.environ.get("TL_LOWER_TRACE")
    return d or None


def run_passes(func, passes, ctx: PassContext, stage=""):
    tdir = trace_dir(ctx)
    if tdir:
        os.makedirs(tdir, exist_ok=True)
        _dump(tdir, len(ctx.timings), f"{stage}input", func)
    for p in passes:
        name = getattr(p, "pass_name", getattr(p, "__name__", str(p)))
        t0 = time.perf_counter()
        func = Pass(name, p)(func, ctx)
        dt = time.perf_counter() - t0
        ctx.timings.append((name, dt))
        if tdir:
            _dump(tdir, len(ctx.timings), name, func)
    if os.environ.get("TILELANG_PASS_PROFILE") == "1":
        print(format_timings(ctx.timings, title=f"pass timings{(' (' + stage + ')') if stage else ''}"),
              file=sys.stderr)
    return func


def _dump(d, i, name, func):
    text = func.script() if hasattr(func, "script") else str(func)
    with open(os.path.join(d, f"{i:02d}_{name}.py"), "w") as f:
        f.write(text)


def format_timings(timings, title="pass timings"):
    total = sum(t for _, t in timings) or 1e-12
    w = max([len(n) for n, _ in timings] + [4])
    lines = [title, f"{'pass'.ljust(w)}  {'ms':>8}  {'%':>5}"]
    for n, t in timings:
        lines.append(f"{n.ljust(w)}  {t * 1e3:8.3f}  {100 * t / total:5.1f}")
    lines.append(f"{'total'.ljust(w)}  {total * 1e3:8.3f}")
    return "\n".join(lines)
