"""Numeric evaluation of layout index expressions with numpy.

A layout is defined by IR expressions over placeholder variables; to check it
(bijectivity, bank conflicts, tables for codegen) we evaluate those expressions
on whole index grids at once instead of one point at a time through the
simplifier, which keeps a 128x128 tile check in the millisecond range."""
from __future__ import annotations

import numpy as np

from tilelang.ir import expr as E


def _floordiv(a, b):
    return np.floor_divide(a, b)


def _truncdiv(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((np.sign(a) * np.sign(b)) < 0, -q, q)


_BIN = {
    "+": np.add, "-": np.subtract, "*": np.multiply,
    "//": _floordiv, "%": np.mod,           # IR `//`, `%` are floor division / modulo
    "min": np.minimum, "max": np.maximum,
    "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
    "==": np.equal, "!=": np.not_equal,
    "&&": np.logical_and, "||": np.logical_or,
    "&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor,
    "<<": np.left_shift, ">>": np.right_shift,
}


def evaluate(e, env):
    """Value of expression `e` with variables bound by `env` (id(Var) -> int or
    int array); arrays broadcast, so passing an `np.indices` grid evaluates the
    expression over a whole domain."""
    if isinstance(e, (int, np.integer)):
        return np.int64(e)
    if isinstance(e, E.IntImm):
        return np.int64(int(e.value))
    if isinstance(e, E.FloatImm):
        return np.float64(e.value)
    if isinstance(e, E.Var):
        try:
            return env[id(e)]
        except KeyError:
            raise ValueError(f"layout expression uses the unbound variable `{e.name}`") from None
    if isinstance(e, E.BinOp):
        a, b = evaluate(e.a, env), evaluate(e.b, env)
        if e.op == "/":
            return _truncdiv(a, b) if e.dtype.is_int else np.true_divide(a, b)
        return _BIN[e.op](a, b)
    if isinstance(e, E.Select):
        return np.where(evaluate(e.cond, env), evaluate(e.t, env), evaluate(e.f, env))
    if isinstance(e, E.Not):
        return np.logical_not(evaluate(e.a, env))
    if isinstance(e, E.Cast):
        v = evaluate(e.value, env)
        return np.asarray(v).astype(np.int64) if e.dtype.is_int else np.asarray(v, dtype=np.float64)
    if isinstance(e, E.Call):
        args = [evaluate(a, env) for a in e.args]
        if e.name == "abs":
            return np.abs(args[0])
        if e.name == "truncmod":
            return args[0] - _truncdiv(args[0], args[1]) * args[1]
        raise NotImplementedError(f"cannot evaluate call `{e.name}` in a layout expression")
    raise TypeError(f"cannot evaluate {type(e).__name__} in a layout expression")


def grid(shape):
    """Index arrays (one per dimension) covering `shape`, as int64."""
    return [a.astype(np.int64) for a in np.indices(tuple(shape))]


def const_shape(shape, what="layout"):
    """`shape` as a tuple of Python ints, or a clear error for symbolic extents."""
    out = []
    for d in shape:
        v = E.const_int_value(d)
        if v is None:
            raise ValueError(f"{what} has the symbolic extent `{d}`; this needs a concrete shape")
        out.append(v)
    return tuple(out)


def tidy(e):
    """Light clean-up of index expressions built by composing layouts:
    `x % a % b -> x % b` when b divides a (tiling substitutes `i -> i % ext`
    into expressions that already take `i % b`), then the general simplifier."""
    from tilelang.arith.simplify import simplify
    from tilelang.ir.visitor import Mutator

    class _Tidy(Mutator):
        def visit_BinOp(self, n):
            n = self.generic_visit(n)
            if (n.op == "%" and isinstance(n.a, E.BinOp) and n.a.op == "%" and isinstance(n.b, E.IntImm)
                    and isinstance(n.a.b, E.IntImm) and n.a.b.value % n.b.value == 0):
                return E.BinOp("%", n.a.a, n.b, n.dtype)
            return n
    return simplify(_Tidy().visit(simplify(e)))
