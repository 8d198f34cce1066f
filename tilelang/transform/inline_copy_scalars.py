"""Copies of a `T.Pipelined` body that read per-iteration scalars get the scalars'
defining expressions in their indices (`inline_copy_scalars`), so that the pipeline
planner can issue them iterations ahead.

Paged attention (the published deepseek_mla paged decode) computes where a KV block lives
at the top of every iteration and copies from there:

    for kr in T.Pipelined(n, num_stages=2):
        k = n - 1 - kr                                        # T.alloc_var, stored once
        kv_start = block_table[b, k * N // page] * page + k * N % page
        T.copy(KV[kv_start:kv_start + N, h, :], KV_shared)

The copy's indices read the scalar `kv_start`, whose stored value belongs to the current
iteration, so a copy for a later iteration cannot be issued from them; every copy then ran
synchronously (no prefetch at all). Here each such copy nest reads the defining expression
instead (`block_table[b, (n - 1 - kr) * N // page] * page + ...`), which plan/pipeline.py
re-evaluates for the iteration it issues.

A scalar qualifies when it is a one-element `local.var` buffer declared in the body, stored
exactly once at the top level of the body before any statement reads it, with a value that
reads only the loop variable, the kernel's block indices and parameters, other qualifying
scalars stored before it, scalars the loop never writes, and global tensors the kernel never
writes (a block table), and no thread index; the value has the scalar's type (no conversion
is lost). Only top-level `T.Parallel` nests that store
into a shared buffer are rewritten; other readers keep reading the scalar. Results are
unchanged: the expression has the value the scalar holds where the copy runs."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.visitor import Mutator, walk, collect_vars
from tilelang.transform.pass_manager import function_pass


def _stores(root):
    """id(buffer) -> number of statements under `root` that may write it: stores, atomics,
    and (conservatively) every buffer a kept tile op names."""
    from tilelang.ir import tile_ops as TO
    from tilelang.ir.buffer import Buffer, BufferRegion
    counts = {}

    def add(b):
        counts[id(b)] = counts.get(id(b), 0) + 1

    def f(n):
        if isinstance(n, S.BufferStore):
            add(n.buffer)
        elif isinstance(n, E.Call) and n.name.startswith("atomic_") and n.args and isinstance(n.args[0], E.BufferLoad):
            add(n.args[0].buffer)
        elif isinstance(n, TO.TileOp):
            for v in vars(n).values():
                for x in (v if isinstance(v, (list, tuple)) else [v]):
                    if isinstance(x, BufferRegion):
                        add(x.buffer)
                    elif isinstance(x, Buffer):
                        add(x)
    walk(root, f)
    return counts


class _Inline(Mutator):
    def __init__(self, values):
        self.values = values   # id(scalar buffer) -> its defining expression

    def visit_BufferLoad(self, n):
        v = self.values.get(id(n.buffer))
        return v if v is not None else self.generic_visit(n)


def _reads_only(value, allowed_vars, ok_buffer):
    loads = []
    walk(value, lambda n: loads.append(n.buffer) if isinstance(n, E.BufferLoad) else None)
    return all(ok_buffer(b) for b in loads) and all(id(v) in allowed_vars for v in collect_vars(value))


def _body_stmts(loop):
    b = loop.body
    return list(b.stmts) if isinstance(b, S.SeqStmt) else [b]


def _rewrite_loop(loop, launch, kernel_writes):
    stmts = _body_stmts(loop)
    loop_writes = _stores(loop.body)
    declared = {id(s.buffer) for s in stmts if isinstance(s, S.DeclBuffer)}
    allowed = {id(loop.var)} | {id(v) for v in launch.block_vars}
    values, changed, out = {}, False, []

    def ok_buffer(b):
        if id(b) in values:
            return True
        if b.scope == "global":
            return not kernel_writes.get(id(b))
        return b.scope == "local.var" and not loop_writes.get(id(b)) and id(b) not in declared

    for s in stmts:
        if isinstance(s, S.BufferStore) and id(s.buffer) in declared and s.buffer.scope == "local.var" and \
                loop_writes.get(id(s.buffer)) == 1 and str(s.value.dtype) == str(s.buffer.dtype) and \
                _reads_only(s.value, allowed, ok_buffer):
            values[id(s.buffer)] = _Inline(values).visit(s.value)
            out.append(s)
            continue
        if values and isinstance(s, S.For) and s.kind == S.PARALLEL and _stores_shared(s):
            new = _Inline(values).visit(s)
            changed |= new is not s
            out.append(new)
            continue
        out.append(s)
    if not changed:
        return loop
    new = S.For(loop.var, loop.min, loop.extent, loop.kind, S.seq(out), loop.annotations, loop.step)
    new.span = loop.span
    return new


def _stores_shared(nest):
    found = []
    walk(nest, lambda n: found.append(n.buffer) if isinstance(n, S.BufferStore) else None)
    return bool(found) and all(b.scope in ("shared", "shared.dyn") for b in found)


class _Loops(Mutator):
    def __init__(self, launch, kernel_writes):
        self.launch, self.kernel_writes = launch, kernel_writes

    def visit_For(self, n):
        n = self.generic_visit(n)
        if n.kind != S.PIPELINED:
            return n
        return _rewrite_loop(n, self.launch, self.kernel_writes)


@function_pass("inline_copy_scalars")
def inline_copy_scalars(func, ctx=None):
    body = func.body
    stmts = body.stmts if isinstance(body, S.SeqStmt) else [body]
    out, changed = [], False
    for s in stmts:
        if isinstance(s, S.KernelLaunch):
            loops = []
            walk(s.body, lambda n: loops.append(n) if isinstance(n, S.For) and n.kind == S.PIPELINED else None)
            if loops:
                nb = _Loops(s, _stores(s.body)).visit(s.body)
                if nb is not s.body:
                    k = S.KernelLaunch(s.grid, s.threads, s.block_vars, s.thread_vars, nb, s.annotations)
                    k.span = s.span
                    s, changed = k, True
        out.append(s)
    return func.with_body(S.seq(out)) if changed else func


__all__ = ["inline_copy_scalars"]
