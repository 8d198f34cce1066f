"""Statements. Every node records the user's source span where it was built."""
from __future__ import annotations

from tilelang.ir.span import current_span


class Stmt:
    def _init(self):
        self.span = current_span()

    def __repr__(self):
        from tilelang.ir.printer import stmt_str
        return stmt_str(self)


class SeqStmt(Stmt):
    def __init__(self, stmts):
        self._init()
        self.stmts = list(stmts)


class Evaluate(Stmt):
    def __init__(self, value):
        self._init()
        self.value = value


class BufferStore(Stmt):
    def __init__(self, buffer, value, indices):
        self._init()
        self.buffer, self.value, self.indices = buffer, value, list(indices)


class DeclBuffer(Stmt):
    """Allocation of a non-global buffer; visible to the statements after it."""

    def __init__(self, buffer):
        self._init()
        self.buffer = buffer


# loop kinds
SERIAL, PARALLEL, PIPELINED, UNROLL, VECTORIZED = "serial", "parallel", "pipelined", "unroll", "vectorized"


class For(Stmt):
    def __init__(self, var, min, extent, kind, body, annotations=None, step=None):
        self._init()
        self.var, self.min, self.extent, self.kind = var, min, extent, kind
        self.body = body
        self.annotations = dict(annotations or {})
        self.step = step  # None means 1


class IfThenElse(Stmt):
    def __init__(self, cond, then_body, else_body=None):
        self._init()
        self.cond, self.then_body, self.else_body = cond, then_body, else_body


class While(Stmt):
    def __init__(self, cond, body):
        self._init()
        self.cond, self.body = cond, body


class Break(Stmt):
    def __init__(self):
        self._init()


class Continue(Stmt):
    def __init__(self):
        self._init()


class LetStmt(Stmt):
    """Binds `var = value` for the statements that follow (in `body`)."""

    def __init__(self, var, value, body):
        self._init()
        self.var, self.value, self.body = var, value, body


class KernelLaunch(Stmt):
    """`with T.Kernel(...)`: the body runs once per block of `threads` threads."""

    def __init__(self, grid, threads, block_vars, thread_vars, body, annotations=None):
        self._init()
        self.grid = list(grid)          # extents, x first
        self.threads = list(threads)    # block dims, x first
        self.block_vars = list(block_vars)
        self.thread_vars = list(thread_vars)
        self.body = body
        self.annotations = dict(annotations or {})


class SBlock(Stmt):
    """`with T.sblock(name):` (TVM's block): a named scope. `reads`/`writes` are the regions
    the user declared with `T.reads`/`T.writes` (hints; nothing here relies on them);
    `annotations` hold what applies to the whole scope, e.g. the safe values of
    `T.annotate_safe_value` (ir/safe_values.py). The blocks are spliced into their parents
    once those are consumed (transform/flatten_sblocks.py)."""

    def __init__(self, name, body, reads=(), writes=(), annotations=None):
        self._init()
        self.name, self.body = name, body
        self.reads, self.writes = list(reads), list(writes)
        self.annotations = dict(annotations or {})


class Assert(Stmt):
    def __init__(self, cond, message):
        self._init()
        self.cond, self.message = cond, message


class Assume(Stmt):
    """`T.assume(cond)`: the program promises `cond` from here to the end of the enclosing
    block; passes may rely on it (e.g. drop bounds checks it implies). Conditions over
    kernel parameters alone are checked on the host at each call."""

    def __init__(self, cond):
        self._init()
        self.cond = cond


class Print(Stmt):
    """`T.print(value or buffer, msg)`."""

    def __init__(self, obj, msg=""):
        self._init()
        self.obj, self.msg = obj, msg


class Barrier(Stmt):
    """`T.sync_threads()` and friends: a block-wide barrier (a no-op on the CPU).
    `T.sync_threads(barrier_id, arrive_count)` is a named barrier that only the
    `arrive_count` threads reaching it take part in (the others do not wait).
    `kind="warp"` (`T.sync_warp(mask)`): the lanes of `mask` in the calling warp.
    `reason`: set on a barrier a backend pass inserted (what it orders, for the printed IR);
    None for the user's own. `fence_async_proxy`: an inserted barrier first makes the
    shared-memory writes before it visible to the async proxy (wgmma, bulk copies);
    `fence_when`: only where this condition holds (a loop's first iteration), else always."""

    def __init__(self, kind="block", barrier_id=None, arrive_count=None, mask=None, reason=None,
                 fence_async_proxy=False, fence_when=None):
        self._init()
        self.kind = kind
        self.barrier_id = barrier_id
        self.arrive_count = arrive_count
        self.mask = mask
        self.reason = reason
        self.fence_async_proxy = fence_async_proxy
        self.fence_when = fence_when

    @property
    def is_partial(self) -> bool:
        """Whether threads outside the barrier are not ordered by it."""
        return self.arrive_count is not None or self.kind == "warp"


class StageSlot(Stmt):
    """Inside `body`, each buffer of `buffers` (a multi-buffered shared tile of a software
    pipeline: `stages` copies of the tile side by side) means its copy number `slot`. Made by
    a backend's pipelining pass (backend/cuda/plan/cp_async_pipeline.py); prints as
    `with T.stage_slot(A_s, B_s, slot=..., stages=3):`."""

    def __init__(self, buffers, slot, stages, body):
        self._init()
        self.buffers, self.slot, self.stages, self.body = list(buffers), slot, int(stages), body


class ProducerWarpgroup(Stmt):
    """The producer of a warp-specialized loop: the warpgroup of threads `lo` .. `lo` + 127,
    launched after the user's threads, runs `body` and leaves the kernel; the code after
    it runs on the user's threads only. Made by a backend's pipelining pass
    (backend/cuda/plan/warp_specialized_ring.py); prints as
    `with T.producer_warpgroup(threads=256):`."""

    def __init__(self, lo, body):
        self._init()
        self.lo, self.body = int(lo), body


class ThreadAllReduce(Stmt):
    """`T.tvm_thread_allreduce`: every thread of a group, the threads that differ only
    in `thread_vars`, gets the combination of the group's `value`s (threads whose `cond`
    is false contribute `identity`) in `dst`. `combine` is an expression in `lhs` and
    `rhs` (an associative, commutative operator). All threads of the block execute it."""

    def __init__(self, lhs, rhs, combine, identity, value, cond, dst, thread_vars):
        self._init()
        self.lhs, self.rhs, self.combine, self.identity = lhs, rhs, combine, identity
        self.value, self.cond, self.dst = value, cond, dst
        self.thread_vars = list(thread_vars)


def seq(stmts):
    flat = []
    for s in stmts:
        if isinstance(s, SeqStmt):
            flat.extend(s.stmts)
        elif s is not None:
            flat.append(s)
    if len(flat) == 1:
        return flat[0]
    return SeqStmt(flat)
