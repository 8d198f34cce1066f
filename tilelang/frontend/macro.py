"""`@T.macro` (and `T.inline` for methods): helpers whose bodies are rewritten like the
kernel body (frontend/parser.py) and inlined where they are called; `T.Ref` parameters
are passed by reference."""
from __future__ import annotations

import functools
import inspect

from tilelang.frontend.parser import rewritten_function
from tilelang.ir import builder as B
from tilelang.ir.buffer import Buffer, BufferRegion
from tilelang.ir.expr import BufferLoad
from tilelang.ir.errors import located


class Ref:
    """`def helper(x: T.Ref)` in a `@T.macro`: `x` is passed by reference, so assigning to
    it inside the macro writes the caller's variable (a T.alloc_var) or buffer element."""


class Macro:
    """`@T.macro`: a helper whose body is inlined where it is called (with the same
    rewriting of runtime control flow as the kernel body)."""

    def __init__(self, func):
        self.func = func
        functools.update_wrapper(self, func)
        self._rewritten = None
        self._refs = None

    def __call__(self, *args, **kwargs):
        if B.current() is None:
            return self.func(*args, **kwargs)
        if self._rewritten is None:
            self._rewritten = rewritten_function(self.func)
            self._refs = _ref_params(self.func)
        if self._refs:
            args, kwargs = _pass_by_reference(self.func, self._refs, args, kwargs)
        b = B.current()
        b.macro_depth += 1
        try:
            return self._rewritten(*args, **kwargs)
        finally:
            b.macro_depth -= 1

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)


def _ref_params(func):
    """Names of the parameters annotated `T.Ref` (or the published `T.Var`)."""
    out = set()
    for name, p in inspect.signature(func).parameters.items():
        a = p.annotation
        if a is Ref or (isinstance(a, str) and a.split(".")[-1] in ("Ref", "Var")) or \
                (isinstance(a, type) and a.__name__ == "Var" and a.__module__.startswith("tilelang")):
            out.add(name)
    return out


def _pass_by_reference(func, refs, args, kwargs):
    bound = inspect.signature(func).bind(*args, **kwargs)
    for name in refs & set(bound.arguments):
        v = bound.arguments[name]
        if isinstance(v, Buffer) and (v.is_var() or v.scope != "global"):
            continue   # a variable or a buffer: passed as it is
        if isinstance(v, BufferLoad):
            # a fresh load the builder remembers: it reads as the element, and `x = value`
            # in the macro stores to it (frontend/control.py)
            ref = BufferLoad(v.buffer, v.indices)
            B.require("a T.Ref argument").ref_loads[id(ref)] = ref
            bound.arguments[name] = ref
            continue
        if isinstance(v, BufferRegion):
            continue
        raise located(ValueError, f"argument `{name}` of macro `{func.__name__}` is a T.Ref: it must be a "
                      f"variable (T.alloc_var) or a buffer element, got {v!r}",
                      hint="pass the variable itself; a value cannot be written back")
    return bound.args, bound.kwargs


def macro(func=None, *, hygienic=True):
    if func is None:
        return lambda f: Macro(f)
    return Macro(func)


def inline(func):
    """A method (or function) whose body is inlined where it is called, `self` bound:
    `T.macro` for methods that read and write a helper object's buffers."""
    return Macro(func)
