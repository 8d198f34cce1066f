"""`with set_autotune_inputs(A, B, ...)`: the tensors every tuning candidate runs on."""
from __future__ import annotations

import contextlib
import threading

_local = threading.local()


def _stack():
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


@contextlib.contextmanager
def set_autotune_inputs(*tensors):
    """Tune on these inputs (the kernel's non-output arguments, in order) instead of
    generated ones. A single list or tuple argument is taken as the inputs."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    _stack().append(list(tensors))
    try:
        yield
    finally:
        _stack().pop()


def get_autotune_inputs():
    """The innermost captured inputs on this thread, or None."""
    s = _stack()
    return s[-1] if s else None
