"""Debugging and hints: `T.print`, `T.device_assert`, `T.annotate_layout`,
`T.sync_threads`, `T.macro`, `T.call_extern`, `T.evaluate`."""
from __future__ import annotations

import functools

from tilelang.frontend import builder as B
from tilelang.ir import stmt as S
from tilelang.ir.buffer import Buffer, BufferRegion
from tilelang.ir.expr import convert, as_bool, PrimExpr, call, StringImm
from tilelang.ir.errors import TileLangError


def print(obj, msg: str = "", warp_group_id=0, warp_id=0):  # noqa: A001 - published name
    b = B.require("T.print")
    if isinstance(obj, Buffer) and obj.is_var():
        obj = obj.load()
    if isinstance(obj, BufferRegion):
        obj = obj.buffer
    if not isinstance(obj, (Buffer, PrimExpr)):
        obj = convert(obj)
    b.emit(S.Print(obj, msg))


def device_assert(cond, msg: str = ""):
    b = B.require("T.device_assert")
    if isinstance(cond, bool):
        if not cond:
            raise TileLangError(f"T.device_assert is always false: {msg}")
        return
    b.emit(S.Assert(as_bool(convert(cond)), msg))


def annotate_layout(layout_map: dict, allow_reannotation=False, allow_buffer_region=False):
    """Fix the layout of shared/fragment buffers (used by the GPU backend; no effect
    on results)."""
    for buf, layout in layout_map.items():
        if isinstance(buf, Buffer):
            buf.layout = layout


def annotate_padding(*a, **k):
    return None


def annotate_l2_hit_ratio(*a, **k):
    return None


def annotate_safe_value(*a, **k):
    return None


def sync_threads(*a, **k):
    b = B.require("T.sync_threads")
    b.emit(S.Barrier("block"))


def sync_warp(*a, **k):
    return None


def sync_global(*a, **k):
    return None


def no_set_max_nreg(*a, **k):
    return None


def set_max_nreg(*a, **k):
    return None


def disable_warp_group_reg_alloc(*a, **k):
    return None


def evaluate(value):
    B.require("T.evaluate").emit(S.Evaluate(convert(value)))


def call_extern(dtype, name, *args):
    return call(name, [a if isinstance(a, PrimExpr) else convert(a) for a in args], dtype)


class Macro:
    """`@T.macro`: a helper whose body is inlined where it is called (with the same
    rewriting of runtime control flow as the kernel body)."""

    def __init__(self, func):
        self.func = func
        functools.update_wrapper(self, func)
        self._rewritten = None

    def __call__(self, *args, **kwargs):
        if B.current() is None:
            return self.func(*args, **kwargs)
        if self._rewritten is None:
            from tilelang.frontend.parser import rewritten_function
            self._rewritten = rewritten_function(self.func)
        return self._rewritten(*args, **kwargs)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)


def macro(func=None, *, hygienic=True):
    if func is None:
        return lambda f: Macro(f)
    return Macro(func)
