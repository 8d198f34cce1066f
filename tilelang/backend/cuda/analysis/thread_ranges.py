"""Warp-specialized regions: branches on the thread index that hand-written producer/
consumer kernels use (`if tx < 128: ... elif tx < 256: ... else: ...`).

A branch whose condition bounds the (one-dimensional) thread index by constants
runs on a contiguous, warp-aligned range of threads. Inside it, tile ops (gemm,
copies, reductions, T.Parallel nests) are planned and emitted as if the block had
only those threads: thread `lo + t` plays thread `t`, barriers the compiler needs
are named barriers of the range (`bar.sync id, n`), and the ranges hand data to
each other through the user's mbarriers (language/sync.py)."""
from __future__ import annotations

from dataclasses import dataclass

from tilelang.ir import expr as E
from tilelang.ir import stmt as S

WARP = 32


@dataclass(frozen=True)
class ThreadRange:
    lo: int
    hi: int

    @property
    def size(self):
        return self.hi - self.lo


@dataclass
class Regions:
    """`branches`: id(IfThenElse) -> (range of its then-body, range of its else-body
    or None); `of`: id(statement) -> the innermost range it runs in (statements of the
    whole block are absent); `barrier_ids`: range -> named-barrier id."""
    full: ThreadRange
    branches: dict
    of: dict
    barrier_ids: dict

    def range_of(self, st):
        return self.of.get(id(st), self.full)


def _bound(e, tvar, lets=None):
    """(lo, hi) the condition `e` allows for the thread index, or None. It may compare
    the index, or the index floor-divided by a constant (`T.get_warp_group_idx()`,
    `tx // 32`), with constants, possibly through let-bound names; `and` intersects."""
    lets = lets or {}
    if isinstance(e, E.BinOp) and e.op == "&&":
        a, b = _bound(e.a, tvar, lets), _bound(e.b, tvar, lets)
        if a is None or b is None:
            return None
        return max(a[0], b[0]), min(a[1], b[1])
    if not isinstance(e, E.BinOp) or e.op not in ("<", "<=", ">", ">=", "=="):
        return None
    a, b, op = e.a, e.b, e.op
    if _scale(b, tvar, lets) is not None:   # `c < tx` -> `tx > c`
        a, b, op = b, a, {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}[op]
    k = _scale(a, tvar, lets)
    c = E.const_int_value(b)
    if k is None or c is None:
        return None
    inf = 1 << 30
    # k * q <= tx < k * (q + 1) for the quotient q = tx // k
    return {"<": (-inf, c * k), "<=": (-inf, (c + 1) * k), ">": ((c + 1) * k, inf), ">=": (c * k, inf),
            "==": (c * k, (c + 1) * k)}[op]


def _scale(e, tvar, lets):
    """k if `e` is the thread index floor-divided by the constant k (k = 1: the index)."""
    while isinstance(e, E.Cast) or (isinstance(e, E.Var) and id(e) in lets):
        e = e.value if isinstance(e, E.Cast) else lets[id(e)]
    if e is tvar:
        return 1
    if isinstance(e, E.BinOp) and e.op == "//":
        inner, d = _scale(e.a, tvar, lets), E.const_int_value(e.b)
        if inner is not None and d is not None and d > 0:
            return inner * d
    return None


def find_regions(launch: S.KernelLaunch) -> Regions:
    threads = [int(t) for t in launch.threads]
    full = ThreadRange(0, threads[0] if threads else 1)
    out = Regions(full, {}, {}, {})
    if len(threads) != 1 or not launch.thread_vars:
        return out
    tvar = launch.thread_vars[0]
    lets = {}

    def visit(st, cur):
        if st is None:
            return
        if cur != full:
            out.of[id(st)] = cur
        if isinstance(st, S.LetStmt):
            lets[id(st.var)] = st.value
        if isinstance(st, S.IfThenElse):
            b = _bound(st.cond, tvar, lets)
            if b is not None:
                lo, hi = max(cur.lo, b[0]), min(cur.hi, b[1])
                then = ThreadRange(lo, max(lo, hi))
                # the else side is what remains of `cur`, if that is one interval
                if lo <= cur.lo:
                    other = ThreadRange(min(cur.hi, max(hi, cur.lo)), cur.hi)
                elif hi >= cur.hi:
                    other = ThreadRange(cur.lo, lo)
                else:
                    other = None
                aligned = all(x % WARP == 0 for x in (then.lo, then.hi)) and \
                    (other is None or all(x % WARP == 0 for x in (other.lo, other.hi)))
                if aligned and then.size > 0:
                    out.branches[id(st)] = (then, other)
                    visit(st.then_body, then)
                    visit(st.else_body, other if other is not None else cur)
                    return
        for child in _children(st):
            visit(child, cur)
    visit(launch.body, full)
    # one named barrier per range (0 is __syncthreads; ids the kernel names are left alone)
    taken = set()
    from tilelang.ir.visitor import walk
    walk(launch.body, lambda n: taken.add(E.const_int_value(n.barrier_id))
         if isinstance(n, S.Barrier) and n.barrier_id is not None else None)
    free = (i for i in range(1, 16) if i not in taken)
    for then, other in out.branches.values():
        for r in (then, other):
            if r is not None and r.size > 0 and r != full and r not in out.barrier_ids:
                out.barrier_ids[r] = next(free, None)
    return out


def _children(st):
    if isinstance(st, S.SeqStmt):
        return st.stmts
    out = []
    for name in ("body", "then_body", "else_body"):
        c = getattr(st, name, None)
        if isinstance(c, S.Stmt):
            out.append(c)
    return out
