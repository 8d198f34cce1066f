"""The lower trace as data: one page per pass (the printed IR after it, its time, the
user's source line of every printed statement), then the pages a backend adds (its plan,
the generated source, PTX, SASS). The pass manager and the backends record pages here;
`tilelang.tools.trace` renders a finished trace (terminal diff, HTML page).

The switch, as published (`TL_LOWER_TRACE` or the pass config `tl.lower_trace`):
`0`/off, `1`/`on`/`html`, `terminal`, `both`; any other value is a directory that gets one
file per page as it is recorded (this package's older form, kept: the files survive a
compile that fails half way). HTML reports go under `TL_LOWER_TRACE_DIR` (default
`./tmp/lower_trace_dir`)."""
from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass, field

OFF_VALUES = ("", "0", "false", "no", "off")
HTML_VALUES = ("1", "true", "yes", "on", "html")
MODES = ("terminal", "html", "both")
DEFAULT_DIR = os.path.join(".", "tmp", "lower_trace_dir")


@dataclass(frozen=True)
class TraceSetting:
    """What a `TL_LOWER_TRACE` value asks for: a rendering `mode` (terminal / html /
    both) or `mode == "dir"` with the directory that receives one file per page;
    `mode == "collect"` hands finished traces to the list `collected` (the pass viewer)."""
    mode: str
    directory: str
    collected: list | None = field(default=None, compare=False)


def parse_setting(value, trace_dir=None) -> TraceSetting | None:
    """The setting of one `TL_LOWER_TRACE` value (None: tracing is off)."""
    if value is None or value is False:
        return None
    text = str(value).strip()
    low = text.lower()
    if low in OFF_VALUES:
        return None
    out_dir = trace_dir or os.environ.get("TL_LOWER_TRACE_DIR") or DEFAULT_DIR
    if low in HTML_VALUES:
        return TraceSetting("html", out_dir)
    if low in MODES:
        return TraceSetting(low, out_dir)
    return TraceSetting("dir", text)


_override: list = []


@contextlib.contextmanager
def tracing(mode="collect", directory=None):
    """Trace every compile inside the block whatever the environment says; yields the
    list that collects the finished traces in "collect" mode (the pass viewer)."""
    collected = [] if mode == "collect" else None
    _override.append(TraceSetting(mode, directory or DEFAULT_DIR, collected))
    try:
        yield collected
    finally:
        _override.pop()


_enabled: list = []   # enable(): a process-wide setting (published tilelang.tools.lower_trace.enable)


def enable(mode="html", directory=None):
    """Trace every later compile of this process (until `disable()`)."""
    setting = parse_setting(mode, directory)
    if setting is None:
        raise ValueError(f"lower trace: mode must be 'html', 'terminal' or 'both', got {mode!r}")
    _enabled[:] = [setting]


def disable():
    _enabled.clear()


def current_setting(config=None) -> TraceSetting | None:
    """The setting of a compile: an enclosing `tracing()` block, else `enable()`, else the
    pass config `tl.lower_trace`, else the environment."""
    if _override:
        return _override[-1]
    if _enabled:
        return _enabled[0]
    value = (config or {}).get("tl.lower_trace")
    if value in (None, ""):
        value = os.environ.get("TL_LOWER_TRACE")
    return parse_setting(value)


@dataclass
class TracePage:
    """One page: `kind` is "ir" for the IR after a pass, else the language of a backend
    page ("plan", "cuda", "ptx", "sass", "cpp"). `spans` maps a 0-based line of `text`
    to the user's (file, line) that the printed statement came from."""
    name: str
    kind: str
    text: str
    time_s: float | None = None
    stage: str = ""
    spans: dict = field(default_factory=dict)
    layouts: list = field(default_factory=list)   # a plan page: the LayoutRecords of its buffers


@dataclass(frozen=True)
class LayoutRecord:
    """Where a backend put one tile buffer (the layout pictures of tools/plot_layout.py):
    `layout` is a register layout with `regs` and `row(t, r)` / `col(t, r)` over
    `threads` threads (None for shared memory); `swizzle` names a shared-memory swizzle."""
    name: str
    scope: str
    shape: tuple
    dtype: str
    layout: object = None
    threads: int = 0
    swizzle: str | None = None


_EXT = {"ir": "py", "cuda": "cu", "plan": "txt", "ptx": "ptx", "sass": "sass", "cpp": "cpp"}


@dataclass
class LowerTrace:
    """The pages of one compile, in order."""
    kernel: str
    target: str
    setting: TraceSetting
    pages: list = field(default_factory=list)
    finished: bool = False

    def add(self, page: TracePage):
        self.pages.append(page)
        if self.setting.mode == "dir":   # written at once: a failing compile keeps its pages
            os.makedirs(self.setting.directory, exist_ok=True)
            n = len([f for f in os.listdir(self.setting.directory) if f[:2].isdigit()])
            name = re.sub(r"[^A-Za-z0-9._-]", "_", page.name)
            with open(os.path.join(self.setting.directory, f"{n:02d}_{name}.{_EXT.get(page.kind, 'txt')}"), "w") as f:
                f.write(page.text)

    def add_ir(self, name, func, time_s=None, stage=""):
        text, spans = printed_with_spans(func)
        self.add(TracePage(name, "ir", text, time_s, stage, spans))

    def sources(self) -> dict:
        """{file: text} of the user's files the pages' spans point into (readable ones)."""
        out = {}
        for p in self.pages:
            for file, _ in p.spans.values():
                if file not in out:
                    try:
                        with open(file) as f:
                            out[file] = f.read()
                    except OSError:
                        out[file] = None
        return {k: v for k, v in out.items() if v is not None}


def printed_with_spans(func):
    """The printed IR of `func` and {line: (file, line)} of the statements it prints."""
    if not hasattr(func, "script"):
        return str(func), {}
    from tilelang.ir.printer import func_str_with_spans
    text, spans = func_str_with_spans(func)
    return text, {i: (s.file, s.line) for i, s in spans.items()}


def trace_of(ctx, func=None):
    """The trace a compile records into (created on first use when the setting asks for
    one; None when tracing is off)."""
    trace = getattr(ctx, "trace", None)
    if trace is None:
        setting = current_setting(ctx.config)
        if setting is None:
            return None
        target = getattr(ctx, "target", None)
        trace = ctx.trace = LowerTrace(getattr(func, "name", "kernel"), str(target) if target else "", setting)
    return trace
