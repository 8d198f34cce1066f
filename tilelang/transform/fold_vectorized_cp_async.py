"""`for i in T.vectorized(n): T.ptx_cp_async(T.access_ptr(S[i]), T.access_ptr(A[i]), k)`
with k elements narrower than one cp.async (4, 8 or 16 bytes) is one cp.async of the
n lanes' bytes from the first lane's addresses (the published package widens it the
same way). The frontend leaves such a narrow copy as a `tl.ptx_cp_async_lane` call
(ir/async_copy.py); one that no vectorized loop folds is a located error."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.async_copy import CP_ASYNC_BYTES, PTX_CP_ASYNC_LANE, cp_async_call
from tilelang.ir.errors import LoweringError
from tilelang.ir.visitor import Mutator, collect_vars, substitute
from tilelang.arith.simplify import linear_form, simplify
from tilelang.transform.pass_manager import function_pass


def _lane_call(body):
    if isinstance(body, S.SeqStmt) and len(body.stmts) == 1:
        body = body.stmts[0]
    if isinstance(body, S.Evaluate) and isinstance(body.value, E.Call) and body.value.name == PTX_CP_ASYNC_LANE:
        return body
    return None


def _steps_by_one(load, v):
    """Only the last index moves with `v`, one element per lane."""
    *outer, last = load.indices
    if any(any(x is v for x in collect_vars(i)) for i in outer):
        return False
    lin = linear_form(simplify(last)) if last.dtype.is_int else None
    if lin is None:
        return False
    coefs = [c for atom, c in lin[0].values() if atom is v]
    others = [atom for atom, c in lin[0].values() if atom is not v]
    return coefs == [1] and not any(any(x is v for x in collect_vars(a)) for a in others)


class _Fold(Mutator):
    def visit_For(self, st):
        ev = _lane_call(st.body)
        n = E.const_int_value(st.extent)
        if ev is None or st.kind != S.VECTORIZED or st.step is not None or n is None:
            return super().generic_visit(st)
        dst_ptr, src_ptr, bits, pred = ev.value.args
        dst, src = E.addressed_load(dst_ptr), E.addressed_load(src_ptr)
        v, total = st.var, n * bits.value
        if total % 8 or total // 8 not in CP_ASYNC_BYTES or not _steps_by_one(dst, v) or \
                not _steps_by_one(src, v) or any(x is v for x in collect_vars(pred)):
            return super().generic_visit(st)
        first = {v: st.min}
        out = S.Evaluate(cp_async_call(substitute(dst_ptr, first), substitute(src_ptr, first), total // 8, pred))
        out.span = ev.span
        return out

    def visit_Evaluate(self, st):
        if isinstance(st.value, E.Call) and st.value.name == PTX_CP_ASYNC_LANE:
            bits = st.value.args[2].value
            raise LoweringError(f"T.ptx_cp_async moves 4, 8 or 16 bytes; this one moves {bits} bits",
                                span=getattr(st, "span", None),
                                hint="copy wider chunks, or call it in a T.vectorized loop whose lanes "
                                     "together copy 4, 8 or 16 consecutive bytes")
        return st


@function_pass("fold_vectorized_cp_async")
def fold_vectorized_cp_async(func, ctx=None):
    body = _Fold().visit(func.body)
    return func if body is func.body else func.with_body(body)
