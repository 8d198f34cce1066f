"""Facts about a kernel body that the CUDA planning and codegen share: the flattened form
of a T.Parallel nest, and which buffers a statement reads and writes (which variables
depend on the thread index: ir/thread_dependence.py)."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.buffer import BufferRegion
from tilelang.ir.visitor import Visitor, walk
from tilelang.backend.cuda.layout import REGISTER_FRAGMENT_KINDS

# memory that every thread of the block sees (needs barriers); registers don't
SHARED_SCOPES = ("shared", "global")


def parallel_nest(loop: S.For):
    """A perfect nest of T.Parallel loops as ([vars], [mins], [extents], body)."""
    vars_, mins, exts = [], [], []
    cur = loop
    while isinstance(cur, S.For) and cur.kind == S.PARALLEL and cur.step is None:
        vars_.append(cur.var)
        mins.append(cur.min)
        exts.append(cur.extent)
        cur = cur.body
    return vars_, mins, exts, cur


class _Access(Visitor):
    def __init__(self):
        self.reads, self.writes = [], []

    def visit_BufferLoad(self, n):
        self.reads.append(n.buffer)
        for i in n.indices:
            self.visit(i)

    def visit_BufferStore(self, n):
        self.writes.append(n.buffer)
        self.visit(n.value)
        for i in n.indices:
            self.visit(i)

    def visit_Call(self, n):
        if n.name.startswith("atomic_") and n.args and isinstance(n.args[0], E.BufferLoad):
            self.writes.append(n.args[0].buffer)
        ld = E.addressed_load(n)
        if ld is not None and E.access_mask(n) & 2:  # extern code writes through it
            self.writes.append(ld.buffer)
        self.generic_visit(n)

    def visit_ThreadAllReduce(self, n):
        self.writes.append(n.dst.buffer)
        for e in (n.value, n.cond, n.identity, *n.dst.indices):
            self.visit(e)

    def _region(self, r, write=False):
        if isinstance(r, BufferRegion):
            (self.writes if write else self.reads).append(r.buffer)
            for s, e in r.ranges:
                self.visit(s)
                self.visit(e)
        elif r is not None and not isinstance(r, (int, float)):
            self.visit(r)

    def visit_Gemm(self, n):
        self._region(n.A)
        self._region(n.B)
        self._region(n.C)
        self._region(n.C, write=True)

    def visit_Reduce(self, n):
        self._region(n.src)
        self._region(n.dst)
        self._region(n.dst, write=True)

    def visit_Copy(self, n):
        self._region(n.src)
        self._region(n.dst, write=True)

    def visit_Fill(self, n):
        self._region(n.dst, write=True)

    def visit_Atomic(self, n):   # a kept tile atomic (ops/tma_reduce.py): reads its value, updates dst
        self._region(n.value)
        self._region(n.dst)
        self._region(n.dst, write=True)

    def visit_OperandOp(self, n):  # ops that list what they read and write (ir/operand_op.py)
        self.reads.extend(n.reads())
        self.writes.extend(n.writes())
        self.generic_visit(n)

    def visit_Print(self, n):
        from tilelang.ir.buffer import Buffer
        if isinstance(n.obj, Buffer):
            self.reads.append(n.obj)
        else:
            self.generic_visit(n)


def accesses(stmt):
    """(read buffers, written buffers) of a statement, duplicates removed by identity."""
    a = _Access()
    a.visit(stmt)
    uniq = lambda bs: list({id(b): b for b in bs}.values())  # noqa: E731
    return uniq(a.reads), uniq(a.writes)


def all_loads_stores(stmt, buf):
    """Every index list used to access `buf` inside stmt (loads and stores)."""
    out = []

    def f(n):
        if isinstance(n, E.BufferLoad) and n.buffer is buf:
            out.append(n.indices)
        elif isinstance(n, S.BufferStore) and n.buffer is buf:
            out.append(n.indices)
    walk(stmt, f)
    return out


def _placement(plan, buf):
    return plan.placements.get(id(buf))


def registers_only(plan, st):
    """A T.Parallel nest that works on per-thread arrays (kernel plan `plan`; read by the
    code generator and the copy planner): it stores only into them
    (`T.clear` of a `T.alloc_local` array), or it moves data of one whose contents
    differ between threads (a `T.copy` of a thread's registers to memory) and no
    register fragment. Every thread runs all of it on its own registers; splitting
    it over the threads would give each a few elements. (A local array that holds
    the same value in every thread, e.g. a block index read into a scalar, is just
    an operand of an ordinary, shared-out loop.)"""
    from tilelang.ir.visitor import walk
    kinds, private, fragments = [], [], []

    def f(n):
        if isinstance(n, (S.BufferStore, E.BufferLoad)):
            kind = getattr(_placement(plan, n.buffer), "kind", None)
            if kind == "local" and id(n.buffer) in plan.td_bufs:
                private.append(n)
            elif kind in REGISTER_FRAGMENT_KINDS:
                fragments.append(n)
        if isinstance(n, S.BufferStore):
            kinds.append(getattr(_placement(plan, n.buffer), "kind", None))
        elif isinstance(n, E.Call) and n.name.startswith("atomic_"):
            kinds.append("atomic")
    walk(st, f)
    if kinds and all(k in ("local", "var") for k in kinds):
        return True
    return bool(private) and not fragments
