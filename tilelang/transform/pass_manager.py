"""A small pass manager: every pass is a named function PrimFunc -> PrimFunc; each
run is timed (`ctx.timings`), and under the lower trace the IR after every pass is
recorded as a page of `ctx.trace` (transform/lower_trace.py; rendered by
tilelang.tools.trace).

`TILELANG_PASS_PROFILE=1` (or pass config `tl.pass_profile`) prints the timings once per
compile, from the kernel cache too (the JIT layer calls `print_profile`).
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
    trace: object = None      # the LowerTrace this compile records into (lower_trace.trace_of)

    def get(self, key, default=None):
        return self.config.get(key, default)


def trace_dir(ctx):
    """The lower-trace setting of a compile, or None (kept name: callers ask whether to
    trace at all)."""
    from tilelang.transform.lower_trace import current_setting
    return current_setting(ctx.config)


def run_passes(func, passes, ctx: PassContext, stage=""):
    from tilelang.transform.lower_trace import trace_of
    trace = trace_of(ctx, func)
    if trace is not None:
        trace.add_ir("input", func, stage=stage)
    for p in passes:
        name = getattr(p, "pass_name", getattr(p, "__name__", str(p)))
        t0 = time.perf_counter()
        func = Pass(name, p)(func, ctx)
        dt = time.perf_counter() - t0
        ctx.timings.append((name, dt))
        if trace is not None:
            trace.add_ir(name, func, dt, stage)
    return func


def run_target_passes(func, passes, target, ctx=None, keep_tile_ops=(), stage=""):
    """A backend's pass list over `func` for `target` (a GPU backend's `lower`): `ctx` a
    PassContext, a dict of pass configs or None; `keep_tile_ops` the tile ops its code
    generator lowers itself (unless the configs name others)."""
    if ctx is None:
        ctx = PassContext()
    elif isinstance(ctx, dict):
        ctx = PassContext(config=dict(ctx))
    ctx.config.setdefault("_keep_tile_ops", keep_tile_ops)
    ctx.target = target
    return run_passes(func, passes, ctx, stage=stage)


def profile_setting(config=None):
    """The pass-profile threshold in ms when profiling is on (TILELANG_PASS_PROFILE or
    pass config tl.pass_profile; TILELANG_PASS_PROFILE_THRESHOLD_MS or
    tl.pass_profile_threshold_ms hides faster passes), else None."""
    config = config or {}
    on = config.get("tl.pass_profile")
    if on is None:
        on = os.environ.get("TILELANG_PASS_PROFILE", "0").strip().lower() in ("1", "true", "yes", "on")
    if not on:
        return None
    th = config.get("tl.pass_profile_threshold_ms")
    if th is None:
        th = os.environ.get("TILELANG_PASS_PROFILE_THRESHOLD_MS", "0").strip() or "0"
    try:
        return max(0.0, float(th))
    except ValueError:
        raise ValueError(f"TILELANG_PASS_PROFILE_THRESHOLD_MS / tl.pass_profile_threshold_ms must be a "
                         f"number of milliseconds, got {th!r}") from None


def print_profile(timings, config=None, title="pass timings", cached=False):
    """Print a compile's timing table to stderr when profiling is on."""
    threshold = profile_setting(config)
    if threshold is None or not timings:
        return
    if cached:
        title += " (from the kernel cache: the timings of the compile that stored it)"
    print(format_timings(timings, title=title, threshold_ms=threshold), file=sys.stderr)


def format_timings(timings, title="pass timings", threshold_ms=0.0):
    """The timing table; passes faster than `threshold_ms` are left out (and counted)."""
    total = sum(t for _, t in timings) or 1e-12
    shown = [(n, t) for n, t in timings if t * 1e3 >= threshold_ms]
    w = max([len(n) for n, _ in shown] + [5])
    lines = [title, f"{'pass'.ljust(w)}  {'ms':>8}  {'%':>5}"]
    for n, t in shown:
        lines.append(f"{n.ljust(w)}  {t * 1e3:8.3f}  {100 * t / total:5.1f}")
    if len(shown) < len(timings):
        lines.append(f"({len(timings) - len(shown)} passes under {threshold_ms:g} ms not shown)")
    lines.append(f"{'total'.ljust(w)}  {total * 1e3:8.3f}")
    return "\n".join(lines)
