"""Tiny performance-regression helpers (`process_func`, `regression`): run a
benchmark function, record its latency by name, print the table."""
from __future__ import annotations

import inspect

_RESULTS: list = []


def process_func(func, *args, name=None, **kwargs):
    """Call `func(*args, **kwargs)`; a returned number is recorded as its latency (ms)."""
    out = func(*args, **kwargs)
    if isinstance(out, (int, float)):
        _RESULTS.append((name or getattr(func, "__name__", "func"), float(out)))
    return out


def regression(prefixes=("regression_",)):
    """Run every `regression_*` function of the calling module and print latencies."""
    frame = inspect.stack()[1].frame
    for n, f in list(frame.f_globals.items()):
        if callable(f) and n.startswith(tuple(prefixes)):
            f()
    for n, t in _RESULTS:
        print(f"{n}: {t}")
    return list(_RESULTS)
