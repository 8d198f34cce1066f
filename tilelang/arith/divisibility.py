"""Divisibility that a kernel promises with `T.assume(n % c == 0)`: vectorization uses
it to know that a runtime stride or extent `n` keeps every vector of c (or a divisor
of c) elements aligned. Only promises the kernel makes unconditionally count (at the
top level of the kernel body, not under a branch or a loop), and only about
variables that do not change while it runs (parameters, dynamic shapes), so each
holds wherever the kernel is."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S


def _facts(cond, out, immutable):
    for c in E.conjuncts(cond):
        if not (isinstance(c, E.BinOp) and c.op == "==" and E.const_int_value(c.b) == 0):
            continue
        m = c.a
        if isinstance(m, E.BinOp) and m.op in ("%", "floormod", "truncmod") and isinstance(m.a, E.Var) \
                and immutable(m.a):
            d = E.const_int_value(m.b)
            if d is not None and d > 0:
                k = id(m.a)
                out[k] = d * out[k] // _gcd(d, out[k]) if k in out else d


def _gcd(a, b):
    while b:
        a, b = b, a % b
    return a


def assumed_divisors(body, immutable) -> dict:
    """{id(var): d} for every `T.assume(var % d == 0)` that `body` reaches on every
    path; `immutable(var)` says which variables keep one value for the whole kernel."""
    out = {}
    todo = [body]
    while todo:
        st = todo.pop()
        if isinstance(st, S.SeqStmt):
            todo.extend(st.stmts)
        elif isinstance(st, S.Assume):
            _facts(st.cond, out, immutable)
        elif isinstance(st, S.KernelLaunch):
            todo.append(st.body)
    return out


def multiple_of(atom, coef, divisors) -> int:
    """What `coef * atom` is known to be a multiple of."""
    return coef * divisors.get(id(atom), 1) if isinstance(atom, E.Var) else coef
