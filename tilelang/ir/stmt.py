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


class Assert(Stmt):
    def __init__(self, cond, message):
        self._init()
        self.cond, self.message = cond, message


class Print(Stmt):
    """`T.print(value or buffer, msg)`."""

    def __init__(self, obj, msg=""):
        self._init()
        self.obj, self.msg = obj, msg


class Barrier(Stmt):
    """`T.sync_threads()` and friends: a block-wide barrier (a no-op on the CPU)."""

    def __init__(self, kind="block"):
        self._init()
        self.kind = kind


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
