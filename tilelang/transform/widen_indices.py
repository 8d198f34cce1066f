"""Indices into tensors that can hold 2**31 elements or more are computed in int64.

`x[bx * 512 + i]` into a tensor whose extent `n` is an int64 dimension
(`T.symbolic("n", "int64")`) or whose constant size reaches 2**31 would overflow int32
before it reaches the address: every index of such a tensor is rebuilt with its int32
leaves (variables, constants) widened first, so the arithmetic itself is 64-bit."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.dtypes import int64
from tilelang.ir.visitor import Mutator
from tilelang.transform.pass_manager import function_pass

_INT32_MAX = 2 ** 31 - 1


def needs_wide_indices(buf) -> bool:
    dims = [d for d in buf.shape]
    if any(isinstance(d, E.PrimExpr) and d.dtype.bits == 64 for d in dims):
        return True
    n = E.const_int_value(buf.numel())
    return n is not None and n > _INT32_MAX


def widen(e):
    """`e` (an integer index) recomputed in int64."""
    if not isinstance(e, E.PrimExpr) or not e.dtype.is_int or e.dtype.bits >= 64:
        return e
    if isinstance(e, E.IntImm):
        return E.IntImm(e.value, int64)
    if isinstance(e, E.BinOp) and e.op in ("+", "-", "*", "//", "%", "min", "max"):
        return E.binop(e.op, widen(e.a), widen(e.b))
    if isinstance(e, E.Select):
        return E.Select(e.cond, widen(e.t), widen(e.f))
    return E.cast(e, int64)


class _Widen(Mutator):
    def visit_BufferLoad(self, n):
        n = self.generic_visit(n)
        if not needs_wide_indices(n.buffer):
            return n
        return E.BufferLoad(n.buffer, [widen(i) for i in n.indices])

    def visit_BufferStore(self, n):
        n2 = self.generic_visit(n)
        if not needs_wide_indices(n2.buffer):
            return n2
        out = S.BufferStore(n2.buffer, n2.value, [widen(i) for i in n2.indices])
        out.span = n.span
        return out

    def visit_region(self, r):
        r = super().visit_region(r)
        if not needs_wide_indices(r.buffer):
            return r
        from tilelang.ir.buffer import BufferRegion
        out = BufferRegion(r.buffer, [(widen(s), e) for s, e in r.ranges])
        out.span = r.span
        return out


@function_pass("widen_indices")
def widen_indices(func, ctx=None):
    return func.with_body(_Widen().visit(func.body))
