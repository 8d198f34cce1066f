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
