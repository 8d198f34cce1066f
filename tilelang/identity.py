"""Stable descriptions of Python values and functions, for cache keys (kernel
post-processing hooks, autotuning problems)."""
from __future__ import annotations

import inspect


def normalize(value):
    """A stable, hashable description of a problem argument (tensors by shape/dtype)."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return ("tensor", str(value.dtype), tuple(int(s) for s in value.shape))
    if isinstance(value, (list, tuple)):
        return tuple(normalize(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), normalize(v)) for k, v in value.items()))
    if isinstance(value, (int, float, str, bool, type(None))):
        return value
    return repr(value)


def callable_identity(fn):
    """Source text of a function (or its bytecode and constants when the source is
    not available), with the values its closure captures."""
    if fn is None:
        return None
    fn = getattr(fn, "func", fn)  # functools.partial / our wrappers
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        src = repr((code.co_code, code.co_consts)) if code is not None else repr(fn)
    cells = []
    code = getattr(fn, "__code__", None)
    for name, cell in zip(code.co_freevars if code else (), getattr(fn, "__closure__", None) or ()):
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        cells.append((name, callable_identity(v) if callable(v) else normalize(v)))
    return (getattr(fn, "__qualname__", ""), src, tuple(cells))
