"""Source spans. The frontend installs a provider that reads the user's current
source position; IR nodes record it when they are built."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    file: str
    line: int
    col: int = 0
    end_col: int | None = None

    def __str__(self):
        return f"{self.file}:{self.line}:{self.col + 1}"


_provider = None


def set_span_provider(fn):
    global _provider
    _provider = fn


def current_span() -> Span | None:
    return _provider() if _provider is not None else None


_positions_cache: dict = {}


def frame_span(f) -> Span:
    """The span of the expression a Python frame is executing (line and columns)."""
    code = f.f_code
    pos = _positions_cache.get(code)
    if pos is None:
        pos = list(code.co_positions()) if hasattr(code, "co_positions") else []
        _positions_cache[code] = pos
    i = f.f_lasti // 2
    if 0 <= i < len(pos) and pos[i][0] is not None:
        line, _, col, end_col = pos[i]
        end = end_col if pos[i][1] == line else None
        return Span(code.co_filename, line, col or 0, end)
    return Span(code.co_filename, f.f_lineno, 0, None)


def caller_span(depth: int = 1) -> Span | None:
    """The span of the innermost frame outside this package: the user's expression that
    called into tilelang (for errors raised outside a kernel body: a signature, a call)."""
    import sys
    f = sys._getframe(depth)
    while f is not None and f.f_globals.get("__name__", "").startswith("tilelang."):
        f = f.f_back
    return frame_span(f) if f is not None else None
