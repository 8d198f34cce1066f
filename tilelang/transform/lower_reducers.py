"""Reduction epochs (`T.reducer_init` / `T.reducer_update` / `T.finalize_reducer(acc, dst)`)
are checked, then lowered to the legacy reducer form every backend runs.

Rules (each violation is an error at the user's line):
- `T.reducer_update` comes after a `T.reducer_init` of its reducer, inside a T.Parallel
  loop (each iteration contributes once; outside one, whether every thread or one thread
  contributes would be ambiguous);
- an epoch is opened once (no second init before the finalize) and finalized, by a
  finalize in the init's own scope or in branches nested in it -- never in a loop the
  init is not in (it would combine already-combined partials again);
- the reducer itself is neither read, written nor filled: results are read from `dst`.

Lowering: init -> fill with the op's identity (and the starting value, if any, saved in
a per-thread variable at the init); update -> `acc[i] = op(acc[i], v)`; finalize ->
the in-place combine followed by `dst[i] = op(acc[i], start)` over the output shape.
A reducer that no epoch op touches keeps the legacy form as written."""
from __future__ import annotations

import itertools

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.buffer import Buffer
from tilelang.ir.errors import LoweringError
from tilelang.ir.visitor import Mutator, walk
from tilelang.transform.pass_manager import function_pass


def combine(op, a, b):
    if op == "sum":
        return E.binop("+", a, b)
    if op in ("max", "min"):
        return E.binop(op, a, b)
    return E.binop({"bitand": "&", "bitor": "|", "bitxor": "^"}[op], a, b)


def identity(op, dtype):
    from tilelang.transform.lower_tile_ops import _reduce_init
    return _reduce_init(op, dtype)


def epoch_reducers(body):
    """id -> buffer of the reducers an epoch op touches."""
    out = {}

    def f(n):
        if isinstance(n, (TO.ReducerInit, TO.ReducerUpdate)) or (isinstance(n, TO.FinalizeReducer) and
                                                                 n.dst is not None):
            out[id(n.buffer)] = n.buffer
    walk(body, f)
    return out


class _Check:
    """Walks the body in program order with the stack of enclosing loops and branches."""

    def __init__(self, reducers):
        self.reducers = reducers
        self.ctx = []                       # enclosing For / While / IfThenElse nodes
        self.open = {}                      # id(reducer) -> (init node, its context)
        self.seen_init = set()

    def err(self, node, msg, hint=None):
        raise LoweringError(msg, span=getattr(node, "span", None), hint=hint)

    def name(self, buf):
        return f"`{buf.name}`"

    def visit(self, s):
        if s is None:
            return
        if isinstance(s, S.SeqStmt):
            for x in s.stmts:
                self.visit(x)
        elif isinstance(s, (S.For, S.While)):
            self.exprs(s)
            self.ctx.append(s)
            self.visit(s.body)
            self.ctx.pop()
        elif isinstance(s, S.IfThenElse):
            self.exprs(S.Evaluate(s.cond))
            self.ctx.append(s)
            self.visit(s.then_body)
            self.visit(s.else_body)
            self.ctx.pop()
        elif isinstance(s, (S.LetStmt, S.KernelLaunch, S.SBlock)):
            self.exprs(S.Evaluate(s.value) if isinstance(s, S.LetStmt) else None)
            self.visit(s.body)
        elif isinstance(s, TO.ReducerInit):
            self.init(s)
        elif isinstance(s, TO.ReducerUpdate):
            self.update(s)
        elif isinstance(s, TO.FinalizeReducer) and id(s.buffer) in self.reducers:
            self.finalize(s)
        else:
            self.exprs(s)

    def exprs(self, s):
        """Reads, stores and fills of an epoch reducer anywhere in `s` are errors."""
        if s is None:
            return

        def f(n):
            if isinstance(n, E.BufferLoad) and id(n.buffer) in self.reducers:
                self.err(s, f"illegal read of reducer {self.name(n.buffer)}: its partial results are combined only "
                            f"by T.finalize_reducer", hint="read the finalize's destination fragment instead")
            if isinstance(n, S.BufferStore) and id(n.buffer) in self.reducers:
                self.err(n, f"illegal store to reducer {self.name(n.buffer)}",
                         hint="contribute with T.reducer_update(acc[i], value) inside a T.Parallel loop")
            if isinstance(n, TO.Fill) and id(n.dst.buffer) in self.reducers:
                self.err(n, f"illegal fill of reducer {self.name(n.dst.buffer)}: T.reducer_init opens its epoch")
        walk(s, f)

    def init(self, s):
        key = id(s.buffer)
        if s.init is not None:
            self.exprs(S.Evaluate(s.init))
        if key in self.open:
            self.err(s, f"double T.reducer_init of {self.name(s.buffer)}: its epoch is already open",
                     hint="finalize it with T.finalize_reducer before opening another epoch")
        self.open[key] = (s, list(self.ctx))
        self.seen_init.add(key)

    def update(self, s):
        for x in s.indices + [s.value]:
            self.exprs(S.Evaluate(x))
        if id(s.buffer) not in self.open:
            self.err(s, f"T.reducer_update of {self.name(s.buffer)} before T.reducer_init",
                     hint="open the epoch with T.reducer_init(acc) first")
        if not any(isinstance(c, S.For) and c.kind == S.PARALLEL for c in self.ctx):
            self.err(s, f"T.reducer_update of {self.name(s.buffer)} outside any T.Parallel loop",
                     hint="contribute from the iterations of a T.Parallel loop")

    def finalize(self, s):
        key = id(s.buffer)
        if key not in self.open:
            self.err(s, f"T.finalize_reducer of {self.name(s.buffer)} without an open epoch (T.reducer_init)")
        init, ictx = self.open.pop(key)
        extra = self.ctx[len(ictx):]
        if self.ctx[:len(ictx)] != ictx or any(not isinstance(c, S.IfThenElse) for c in extra):
            self.err(s, f"T.finalize_reducer of {self.name(s.buffer)} is not in the scope of its T.reducer_init",
                     hint="finalize in the block that opened the epoch (or a branch inside it), not in "
                          "another loop")

    def done(self):
        for init, _ in self.open.values():
            self.err(init, f"the epoch of reducer {self.name(init.buffer)} is never finalized",
                     hint="call T.finalize_reducer(acc, dst) before its results are needed")


class _Lower(Mutator):
    def __init__(self, reducers):
        self.reducers = reducers
        self.starts = {}         # id(reducer) -> the local variable holding the epoch's start value
        self.names = itertools.count()

    def visit_ReducerInit(self, n):
        acc = n.buffer
        fill = TO.Fill(_whole(acc), identity(acc.reducer_op, acc.dtype))
        fill.span = n.span
        if n.init is None:
            self.starts.pop(id(acc), None)
            return fill
        start = Buffer(f"{acc.name}_start", (1,), acc.dtype, "local.var")
        self.starts[id(acc)] = start
        keep = S.BufferStore(start, n.init, [E.IntImm(0)])
        return S.seq([S.DeclBuffer(start), keep, fill])

    def visit_ReducerUpdate(self, n):
        acc = n.buffer
        out = S.BufferStore(acc, combine(acc.reducer_op, E.BufferLoad(acc, n.indices), n.value), n.indices)
        out.span = n.span
        return out

    def visit_FinalizeReducer(self, n):
        if n.dst is None:
            return n
        acc = n.buffer
        combine_in_place = TO.FinalizeReducer(acc, acc.reducer_op, None, n.batch)
        combine_in_place.span = n.span
        idx = [E.Var(f"r{k}") for k in range(acc.ndim)]
        val = E.BufferLoad(acc, idx)
        start = self.starts.get(id(acc))
        if start is not None:
            val = combine(acc.reducer_op, val, E.BufferLoad(start, [E.IntImm(0)]))
        dst = n.dst
        didx = [E.binop("+", s, i) if E.const_int_value(s) != 0 else i
                for s, i in zip(dst.starts[-acc.ndim:], idx)]
        didx = list(dst.starts[:-acc.ndim]) + didx if len(dst.starts) > acc.ndim else didx
        body = S.BufferStore(dst.buffer, val, didx)
        for v, ext in reversed(list(zip(idx, acc.shape))):
            body = S.For(v, E.IntImm(0), E.convert(ext), S.PARALLEL, body)
        body.span = n.span
        return S.seq([combine_in_place, body])


def _whole(buf):
    from tilelang.ir.buffer import full_region
    return full_region(buf)


@function_pass("lower_reducers")
def lower_reducers(func, ctx=None):
    reducers = epoch_reducers(func.body)
    if not reducers:
        return func
    check = _Check(reducers)
    check.visit(func.body)
    check.done()
    return func.with_body(_Lower(reducers).visit(func.body))
