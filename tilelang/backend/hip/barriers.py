"""Where the HIP kernel needs `__syncthreads()`: before a block-level statement that
reads memory written, or writes memory read or written, by the statements since the last
barrier (other threads may still be at them): LDS, and global buffers that the block
both writes and reads (the barrier is also a workgroup fence on AMD GPUs). Loops count their body's accesses as
pending at the top of every iteration (the previous iteration's tail), so the barrier a
producer needs against the consumer of the iteration before lands at the top of the
body; branches merge what either side leaves pending. Reductions and their internal
staging count as touching all of LDS."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk

ALL = "all"


class Accesses:
    def __init__(self, reads=(), writes=()):
        self.reads, self.writes = set(reads), set(writes)

    def empty(self):
        return not self.reads and not self.writes

    def __ior__(self, o):
        self.reads |= o.reads
        self.writes |= o.writes
        return self

    def copy(self):
        return Accesses(self.reads, self.writes)


def _meets(a, b):
    return bool(a and b) and (ALL in a or ALL in b or bool(a & b))


def conflict(pending: Accesses, acc: Accesses) -> bool:
    return _meets(acc.reads, pending.writes) or _meets(acc.writes, pending.writes) or \
        _meets(acc.writes, pending.reads)


def accesses(cg, s) -> Accesses:
    """The LDS buffers statement `s` reads and writes (ids; ALL for reductions)."""
    out = Accesses()

    def lds(b):
        b = cg.storage.get(id(b), b)
        if cg.plan.in_lds(b):
            return cg.plan.lds_key(b)   # buffers sharing LDS bytes (lds_reuse.py) order as one
        return id(b) if b.scope == "global" else None

    def f(n):
        if isinstance(n, TO.Reduce):
            out.reads.add(ALL)
            out.writes.add(ALL)
        elif isinstance(n, TO.Gemm):
            for r in (n.A, n.B):
                k = lds(r.buffer)
                if k is not None:
                    out.reads.add(k)
        elif isinstance(n, S.BufferStore):
            k = lds(n.buffer)
            if k is not None:
                out.writes.add(k)
        elif isinstance(n, E.BufferLoad):
            k = lds(n.buffer)
            if k is not None:
                out.reads.add(k)
        elif isinstance(n, E.Call) and n.name.startswith("atomic_") and n.args and \
                isinstance(n.args[0], E.BufferLoad):
            k = lds(n.args[0].buffer)
            if k is not None:
                out.writes.add(k)
    walk(s, f)
    return out


class BarrierPlanner:
    def __init__(self, cg):
        self.cg = cg
        self.pending = Accesses()

    def sync(self):
        self.cg.emit("__syncthreads();")
        self.pending = Accesses()

    def before(self, s):
        """Emit the barrier `s` needs; returns its accesses."""
        acc = accesses(self.cg, s)
        if conflict(self.pending, acc):
            self.sync()
        return acc

    def after(self, acc):
        self.pending |= acc

    def loop(self, s, emit_body):
        """A block-level loop: its body's accesses are pending at every iteration's top."""
        body = accesses(self.cg, s.body)
        if conflict(self.pending, body):
            self.sync()
        before = self.pending.copy()
        self.pending = before.copy()
        self.pending |= body
        emit_body()
        self.pending |= before   # zero iterations leave what was pending before
        self.pending |= body

    def branch(self, emit_then, emit_else):
        start = self.pending.copy()
        emit_then()
        end_then = self.pending
        self.pending = start.copy()
        if emit_else is not None:
            emit_else()
        self.pending |= end_then
