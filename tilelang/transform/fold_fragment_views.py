"""Fold `T.reshape` views of fragments that split the last dimension into their base.

    s = T.alloc_fragment((256, 128), "float32")
    s_reshaped = T.reshape(s, (256, 4, 32))
    for i, q, h in T.Parallel(256, 4, 32):            for i, j in T.Parallel(256, 128):
        s_reshaped[i, q, h] = f(s_reshaped[i, q, h]) ->     s[i, j] = f(s[i, j])   (q = j // 32, h = j % 32)

Every element access of such a view becomes an access of its base (row-major, so
view[..., a, b] is base[..., a * B + b]), and a T.Parallel pair over (A, B) that indexes
the view by those two variables becomes one loop over A * B. A register layout that
holds the base (a gemm accumulator) then reaches the loop unchanged; without the fold
every view moved its base to shared memory (the lightning indexer's 128 KB score tile).
What still names the view afterwards is a tile op (`T.reduce_sum(s_reshaped, dim=-1)`:
a reduction over groups of B columns of the base, layout/fragment.py). Semantics are
unchanged on every backend."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.visitor import Mutator, walk, substitute
from tilelang.arith.simplify import simplify
from tilelang.transform.pass_manager import function_pass


def split_view(buf):
    """(base, A, B) when `buf` is a same-dtype view of a fragment whose shape is the base's
    with the last dimension N split into (A, B), A * B == N (constants); else None."""
    base = getattr(buf, "alias_of", None)
    if base is None or base.scope != "local.fragment" or buf.dtype != base.dtype:
        return None
    if getattr(base, "alias_of", None) is not None or len(buf.shape) != len(base.shape) + 1:
        return None
    vs = [E.const_int_value(d) for d in buf.shape]
    bs = [E.const_int_value(d) for d in base.shape]
    if None in vs or None in bs or vs[:-2] != bs[:-1] or vs[-2] * vs[-1] != bs[-1]:
        return None
    return base, vs[-2], vs[-1]


@function_pass("fold_fragment_views")
def fold_fragment_views(func):
    views = {}

    def note(n):
        if isinstance(n, S.DeclBuffer):
            sv = split_view(n.buffer)
            if sv is not None:
                views[id(n.buffer)] = sv
    walk(func.body, note)
    if not views:
        return func
    return func.with_body(_Fold(views).visit(func.body))


def _split_of(e, op, B):
    return isinstance(e, E.BinOp) and e.op == op and E.const_int_value(e.b) == B


class _Fold(Mutator):
    def __init__(self, views):
        self.views = views

    def _flat(self, buf, indices):
        base, _, B = self.views[id(buf)]
        idx = list(indices)
        q, r = idx[-2], idx[-1]
        if _split_of(q, "//", B) and _split_of(r, "%", B) and q.a is r.a:
            return base, idx[:-2] + [q.a]   # (j // B) * B + j % B is j
        last = simplify(E.binop("+", E.binop("*", idx[-2], E.const(B, idx[-2].dtype)), idx[-1]))
        return base, idx[:-2] + [last]

    def visit_BufferLoad(self, n):
        n = self.generic_visit(n)
        if id(n.buffer) not in self.views:
            return n
        base, idx = self._flat(n.buffer, n.indices)
        out = E.BufferLoad(base, idx)
        out.span = getattr(n, "span", None)
        return out

    def visit_BufferStore(self, n):
        n = self.generic_visit(n)
        if id(n.buffer) not in self.views:
            return n
        base, idx = self._flat(n.buffer, n.indices)
        out = S.BufferStore(base, n.value, idx)
        out.span = getattr(n, "span", None)
        return out

    def visit_For(self, n):
        merged = self._merge(n)
        return self.generic_visit(merged if merged is not None else n)

    def _merge(self, outer):
        """`for a in Parallel(A): for b in Parallel(B): body` indexing a split view by
        [..., a, b] -> `for j in Parallel(A * B): body[a := j // B, b := j % B]`."""
        inner = outer.body
        if not (outer.kind == S.PARALLEL and isinstance(inner, S.For) and inner.kind == S.PARALLEL and
                outer.step is None and inner.step is None and
                E.const_int_value(outer.min) == 0 and E.const_int_value(inner.min) == 0):
            return None
        A, B = E.const_int_value(outer.extent), E.const_int_value(inner.extent)
        a, b = outer.var, inner.var
        hits, others = [], []

        def f(x):
            if isinstance(x, (E.BufferLoad, S.BufferStore)) and id(x.buffer) in self.views:
                ix = x.indices
                ok = len(ix) >= 2 and ix[-2] is a and ix[-1] is b and self.views[id(x.buffer)][1:] == (A, B)
                (hits if ok else others).append(x)
        walk(inner.body, f)
        if not hits or others:
            return None
        j = E.Var(f"{a.name}_{b.name}", a.dtype)
        cb = E.const(B, a.dtype)
        body = substitute(inner.body, {a: E.binop("//", j, cb), b: E.binop("%", j, cb)})
        out = S.For(j, E.const(0, a.dtype), E.const(A * B, a.dtype), S.PARALLEL, body,
                    {**outer.annotations, **inner.annotations})
        out.span = getattr(outer, "span", None)
        return out
