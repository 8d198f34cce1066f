"""Constant bounds of integer expressions by interval arithmetic, given ranges of the
variables (loop variables, block indices). Used to prove accesses in bounds."""
from __future__ import annotations

from tilelang.ir import expr as E


def bound(e, ranges):
    """(lo, hi), inclusive, for an integer expression, or None when unknown.
    `ranges` maps id(Var) -> (lo, hi)."""
    if isinstance(e, int):
        return e, e
    if isinstance(e, E.IntImm):
        return int(e.value), int(e.value)
    if isinstance(e, E.Var):
        cv = getattr(e, "const_value", None)
        if cv is not None:
            return cv, cv
        return ranges.get(id(e))
    if isinstance(e, E.Cast) and e.dtype.is_int and e.value.dtype.is_int:
        return bound(e.value, ranges)
    if isinstance(e, E.Select):
        a, b = bound(e.t, ranges), bound(e.f, ranges)
        return None if a is None or b is None else (min(a[0], b[0]), max(a[1], b[1]))
    if not isinstance(e, E.BinOp) or not e.dtype.is_int:
        return None
    a = bound(e.a, ranges)
    b = bound(e.b, ranges)
    op = e.op
    if op == "%" and b is not None and b[0] == b[1] and b[0] > 0:
        if a is not None and 0 <= a[0] and a[1] < b[0]:
            return a
        return 0, b[0] - 1
    if a is None or b is None:
        return None
    if op == "+":
        return a[0] + b[0], a[1] + b[1]
    if op == "-":
        return a[0] - b[1], a[1] - b[0]
    if op == "*":
        c = [x * y for x in a for y in b]
        return min(c), max(c)
    if op == "//" and b[0] == b[1] and b[0] > 0:
        return a[0] // b[0], a[1] // b[0]
    if op == "/" and b[0] == b[1] and b[0] > 0 and a[0] >= 0:
        return a[0] // b[0], a[1] // b[0]
    if op == "min":
        return min(a[0], b[0]), min(a[1], b[1])
    if op == "max":
        return max(a[0], b[0]), max(a[1], b[1])
    if op == ">>" and b[0] == b[1] and b[0] >= 0 and a[0] >= 0:
        return a[0] >> b[0], a[1] >> b[0]
    return None
