"""Register prefetch of a serial loop's global loads (`prefetch_serial_loads`, a tile-level
pass before lower_tile_ops): a `T.serial` loop whose body starts by copying a global tile
into a fragment loads the next iteration's tile into a staging fragment (the source's dtype)
before the rest of the current iteration runs.

A chunked row kernel (RMSNorm / softmax with block_N < N) walks the row as

    for k in T.serial(n):
        T.copy(X[bx * bm, k * bn], x)      # global -> registers: one DRAM latency ...
        ... reduce x (shuffles, barriers) ...  # ... that nothing overlaps

so each thread has its chunk's loads in flight only at the top of the iteration, and the
block waits one memory latency per chunk. Rewritten:

    x_next = T.alloc_fragment(x.shape, X.dtype)
    T.copy(X[bx * bm, min * bn], x_next)
    for k in T.serial(n):
        T.copy(x_next, x)
        if k + 1 < n:
            T.copy(X[bx * bm, (k + 1) * bn], x_next)   # in flight during the reduction below
        ... reduce x ...

(the register double buffering of pre-Ampere GEMM main loops). The loads of iteration k + 1
are the ones the original loop issues, so bounds and predicates are unchanged.

A leading copy qualifies when its destination is a whole fragment, its source a global
tensor that the kernel never writes (so reading it an iteration early reads the same values),
its indices read no buffer and it is not a TMA copy; the loop is serial, of constant extent
2 or more. The staging registers are capped (`MAX_STAGED_BYTES` a thread) so that a large
tile does not spill. Switch: TILELANG_CUDA_REGISTER_PREFETCH (on by default)."""
from __future__ import annotations

from tilelang.arith.simplify import simplify
from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.buffer import Buffer, BufferRegion
from tilelang.ir.expr import const_int_value
from tilelang.ir.visitor import Mutator, Substitute, walk
from tilelang.transform.pass_manager import function_pass

MAX_STAGED_BYTES = 64   # staging registers a thread may gain per loop (16 32-bit registers)
STAGED = "register_prefetch"   # Copy annotation on the copies this pass wrote (a later pass may tell them apart)


def _written(root) -> set:
    """id of every buffer a statement under `root` may write: stores, atomics, a copy's
    destination and (conservatively) every buffer another tile op names."""
    out = set()

    def f(n):
        if isinstance(n, S.BufferStore):
            out.add(id(n.buffer))
        elif isinstance(n, E.Call) and n.name.startswith("atomic_") and n.args and isinstance(n.args[0], E.BufferLoad):
            out.add(id(n.args[0].buffer))
        elif isinstance(n, TO.Copy):
            out.add(id(n.dst.buffer) if isinstance(n.dst, BufferRegion) else id(n.dst))
        elif isinstance(n, TO.TileOp):
            for v in vars(n).values():
                for x in (v if isinstance(v, (list, tuple)) else [v]):
                    if isinstance(x, BufferRegion):
                        out.add(id(x.buffer))
                    elif isinstance(x, Buffer):
                        out.add(id(x))
    walk(root, f)
    return out


def _numel(shape):
    n = 1
    for d in shape:
        v = const_int_value(d)
        if v is None:
            return None
        n *= v
    return n


def _whole(region: BufferRegion) -> bool:
    return all(const_int_value(s) == 0 and const_int_value(e) == const_int_value(d) and const_int_value(d) is not None
               for (s, e), d in zip(region.ranges, region.buffer.shape))


def _reads_buffer(region: BufferRegion) -> bool:
    found = []
    for s, e in region.ranges:
        walk(s, lambda n: found.append(n) if isinstance(n, E.BufferLoad) else None)
        walk(e, lambda n: found.append(n) if isinstance(n, E.BufferLoad) else None)
    return bool(found)


def _qualifies(s, kernel_writes) -> bool:
    return (isinstance(s, TO.Copy) and not s.annotations
            and isinstance(s.src, BufferRegion) and isinstance(s.dst, BufferRegion)
            and s.src.buffer.scope == "global" and id(s.src.buffer) not in kernel_writes
            and s.dst.buffer.scope == "local.fragment" and _whole(s.dst) and not _reads_buffer(s.src)
            and _numel(s.dst.buffer.shape) is not None)


def _shifted(region: BufferRegion, var, value) -> BufferRegion:
    """`region` with the loop variable `var` replaced by `value`."""
    out = Substitute({var: value}).visit_region(region)
    return BufferRegion(out.buffer, [(simplify(a), simplify(b)) for a, b in out.ranges])


def _copy(src, dst, span):
    c = TO.Copy(src, dst, {STAGED: True})
    c.span = span
    return c


def _rewrite(loop, kernel_writes, nthreads):
    lo, n = const_int_value(loop.min), const_int_value(loop.extent)
    step = 1 if loop.step is None else const_int_value(loop.step)   # (an Expr: `in` would compare symbolically)
    if loop.kind != S.SERIAL or lo is None or n is None or n < 2 or step != 1:
        return None
    stmts = list(loop.body.stmts) if isinstance(loop.body, S.SeqStmt) else [loop.body]
    lead, budget = [], MAX_STAGED_BYTES * nthreads
    for s in stmts:
        if not _qualifies(s, kernel_writes):
            break
        cost = _numel(s.dst.buffer.shape) * s.src.buffer.dtype.bits // 8
        if cost > budget:
            break
        budget -= cost
        lead.append(s)
    if not lead:
        return None
    decls, prologue, top, ahead = [], [], [], []
    for c in lead:
        dst = c.dst.buffer
        staged = Buffer(f"{dst.name}_next", dst.shape, c.src.buffer.dtype, scope="local.fragment")
        staged.span = dst.span
        whole = BufferRegion(staged, [(E.IntImm(0), d) for d in dst.shape])
        d = S.DeclBuffer(staged)
        d.span = loop.span
        decls.append(d)
        prologue.append(_copy(_shifted(c.src, loop.var, E.IntImm(lo)), whole, c.span))
        top.append(_copy(whole, c.dst, c.span))
        ahead.append(_copy(_shifted(c.src, loop.var, loop.var + 1), whole, c.span))
    guard = S.IfThenElse(loop.var + 1 < lo + n, S.seq(ahead))
    guard.span = loop.span
    body = S.seq(top + [guard] + stmts[len(lead):])
    new = S.For(loop.var, loop.min, loop.extent, loop.kind, body, loop.annotations, loop.step)
    new.span = loop.span
    return S.seq(decls + prologue + [new])


class _Loops(Mutator):
    def __init__(self, kernel_writes, nthreads):
        self.kernel_writes, self.nthreads = kernel_writes, nthreads

    def visit_For(self, n):
        n = self.generic_visit(n)
        new = _rewrite(n, self.kernel_writes, self.nthreads)
        return n if new is None else new


@function_pass("prefetch_serial_loads")
def prefetch_serial_loads(func, ctx=None):
    from tilelang.backend.cuda.plan.plan_kernels import cuda_context
    found = cuda_context(func, ctx)
    if found is None or not found[1].register_prefetch:
        return func
    out, changed = [], False
    for s in found[2]:
        nthreads = _numel(s.threads) if isinstance(s, S.KernelLaunch) else None
        if nthreads:
            nb = _Loops(_written(s.body), nthreads).visit(s.body)
            if nb is not s.body:
                k = S.KernelLaunch(s.grid, s.threads, s.block_vars, s.thread_vars, nb, s.annotations)
                k.span = s.span
                s, changed = k, True
        out.append(s)
    return func.with_body(S.seq(out)) if changed else func


__all__ = ["prefetch_serial_loads", "MAX_STAGED_BYTES", "STAGED"]
