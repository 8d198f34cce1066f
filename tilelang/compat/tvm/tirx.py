"""`tvm.tirx` (alias `tvm.tir`): expression constructors over our IR, with TVM's
argument orders (`reinterpret(dtype, value)`, `Cast(dtype, value)`)."""
from __future__ import annotations

from tilelang.ir.dtypes import as_dtype
from tilelang.ir import expr as _E
from tilelang.ir.expr import (PrimExpr, Var, BufferLoad, Call, Shuffle, convert, literal, call,
                              cast as _cast, select, minimum, maximum)


class _TVMConstructor(type):
    """TVM's immediates take `(dtype, value)`; ours `(value, dtype)`. The compat class
    builds ours in TVM's order, and `isinstance` checks against ours."""

    def __call__(cls, dtype, value, span=None):
        return cls._ours(value, as_dtype(dtype))

    def __instancecheck__(cls, obj):
        return isinstance(obj, cls._ours)


class IntImm(metaclass=_TVMConstructor):
    _ours = _E.IntImm


class FloatImm(metaclass=_TVMConstructor):
    _ours = _E.FloatImm


def const(value, dtype=None) -> PrimExpr:
    """A literal of `dtype` (TVM's default: int32 for ints, float32 for floats)."""
    if dtype is None:
        return convert(value)
    return literal(value, dtype)


def reinterpret(dtype, value) -> PrimExpr:
    """Bit cast of `value` to `dtype` (same width)."""
    from tilelang.language.math import reinterpret as _reinterpret
    return _reinterpret(as_dtype(dtype), value)


def Cast(dtype, value) -> PrimExpr:  # noqa: N802 - TVM's name
    return _cast(convert(value), as_dtype(dtype))


def Select(cond, true_value, false_value) -> PrimExpr:  # noqa: N802
    return select(cond, true_value, false_value)


def Min(a, b) -> PrimExpr:  # noqa: N802
    return minimum(a, b)


def Max(a, b) -> PrimExpr:  # noqa: N802
    return maximum(a, b)


def call_extern(dtype, func_name, *args) -> PrimExpr:
    from tilelang.language.extern import call_extern as _call_extern
    return _call_extern(dtype, func_name, *args)


def And(a, b) -> PrimExpr:  # noqa: N802
    from tilelang.language.math import And as _and
    return _and(a, b)


def Or(a, b) -> PrimExpr:  # noqa: N802
    from tilelang.language.math import Or as _or
    return _or(a, b)


def Not(a) -> PrimExpr:  # noqa: N802
    from tilelang.language.math import Not as _not
    return _not(a)


def all(*conds) -> PrimExpr:  # noqa: A001 - TVM's name
    """The conjunction of `conds` (TVM's `tirx.all`)."""
    out = conds[0]
    for c in conds[1:]:
        out = And(out, c)
    return out


def any(*conds) -> PrimExpr:  # noqa: A001
    out = conds[0]
    for c in conds[1:]:
        out = Or(out, c)
    return out


# `tvm.tirx.expr`: the expression classes and constructors, as TVM's submodule names them
import types as _types  # noqa: E402
expr = _types.ModuleType("tvm.tirx.expr")
for _n in ("PrimExpr", "Var", "IntImm", "FloatImm", "BufferLoad", "Call", "And", "Or", "Not", "Cast", "Select"):
    setattr(expr, _n, globals()[_n])

__all__ = ["And", "Or", "Not", "all", "any", "expr", "PrimExpr", "Var", "IntImm", "FloatImm", "BufferLoad", "Call", "const", "reinterpret", "Cast", "Select",
           "Min", "Max", "call_extern"]


def decl_buffer(shape, dtype="float32", name="buffer", data=None, strides=None, elem_offset=None,
                scope="", data_alignment=-1, offset_factor=0, buffer_type="", axis_separators=None, span=None):
    """A buffer declared outside a kernel body (TVM's `tirx.decl_buffer`), e.g. to ask a
    layout factory or a descriptor helper about a tile. Only shape, dtype, name, strides
    and scope mean something here."""
    from tilelang.ir.buffer import Buffer
    from tilelang.ir.errors import TileLangError
    if data is not None or elem_offset not in (None, 0):
        raise TileLangError("tvm.tirx.decl_buffer: `data` and `elem_offset` are not supported; declare "
                            "kernel buffers with T.alloc_shared / T.Tensor")
    return Buffer(name, shape, dtype, scope or "global", strides=strides)
