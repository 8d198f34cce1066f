"""`tvm.tirx` (alias `tvm.tir`): expression constructors over our IR, with TVM's
argument orders (`reinterpret(dtype, value)`, `Cast(dtype, value)`)."""
from __future__ import annotations

from tilelang.ir.dtypes import as_dtype
from tilelang.ir import expr as _E
from tilelang.ir.expr import (PrimExpr, Var, BufferLoad, Call, convert, literal, call,
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


__all__ = ["PrimExpr", "Var", "IntImm", "FloatImm", "BufferLoad", "Call", "const", "reinterpret", "Cast", "Select",
           "Min", "Max", "call_extern"]
