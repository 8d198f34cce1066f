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


def caller_span() -> Span | None:
    """The span of the innermost frame outside this package: the user's line that called
    into tilelang (for errors raised outside a kernel body, e.g. in a signature)."""
    import os
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    f = sys._getframe(1)
    while f is not None:
        if not os.path.abspath(f.f_code.co_filename).startswith(root + os.sep):
            return Span(f.f_code.co_filename, f.f_lineno, 0, None)
        f = f.f_back
    return None
