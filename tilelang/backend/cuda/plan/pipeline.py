"""Software pipelining of `T.Pipelined(n, num_stages=s)` loops (s >= 2, sm_80+).

The tile copies global -> shared at the top level of the loop body whose element
copies vectorize to 4, 8 or 16 bytes become `cp.async` copies into an s-deep ring
of the shared buffer: the prologue issues iterations 0 .. s-2; iteration k waits
for its own group (`cp.async.wait_group s-2`), synchronizes the block, issues the
copies of iteration k+s-1 into the slot that iteration k-1 read, and runs the rest
of the body on slot k % s. A copy is hoisted only when that cannot change results:
its shared buffer is written by nothing else and not touched earlier in the body,
its global source is never written by the kernel, and its indices read no buffer
but the source.

A body that is one `if cond:` without `else` (block-sparse GEMM: `if BlockMask[by, bx, k]:`)
is pipelined the same way when every thread of the block agrees on `cond` and `cond` reads
nothing the kernel writes: the copies of iteration j are issued under `cond(j)`, the rest of
iteration k runs under `cond(k)`, and every iteration still closes its cp.async group (empty
when skipped) so that the waits count the same groups."""
from __future__ import annotations

from dataclasses import dataclass, field

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk
from tilelang.backend.cuda.analysis.facts import parallel_nest, accesses
from tilelang.backend.cuda.target import arch_number


@dataclass
class PipelineInfo:
    stages: int
    copies: list = field(default_factory=list)   # the T.Parallel copy nests issued asynchronously
    bufs: list = field(default_factory=list)     # the shared buffers they fill (multi-buffered)
    rest: list = field(default_factory=list)     # the other statements of the body, in order
    guard: object = None                         # `cond` of a body `if cond:` (per iteration), or None


def body_stmts(loop):
    b = loop.body
    return list(b.stmts) if isinstance(b, S.SeqStmt) else [b]


def _guarded_body(loop, plan, writes):
    """(cond, statements) when the loop body is one `if cond:` (no else) whose condition
    every thread evaluates alike and that reads only global tensors the kernel never
    writes; else (None, the body's statements)."""
    stmts = body_stmts(loop)
    if len(stmts) != 1 or not isinstance(stmts[0], S.IfThenElse) or stmts[0].else_body is not None:
        return None, stmts
    cond = stmts[0].cond
    loads = []
    walk(cond, lambda n: loads.append(n.buffer) if isinstance(n, E.BufferLoad) else None)
    if plan.depends(cond) or any(b.scope != "global" or writes.get(id(b), 0) for b in loads):
        return None, stmts
    then = stmts[0].then_body
    return cond, list(then.stmts) if isinstance(then, S.SeqStmt) else [then]


def _writes_in(root):
    """id(buffer) -> number of statements that store to it (stores, atomics, tile ops)."""
    counts = {}

    def f(n):
        if isinstance(n, S.BufferStore):
            counts[id(n.buffer)] = counts.get(id(n.buffer), 0) + 1
        elif isinstance(n, E.Call) and n.name.startswith("atomic_") and n.args and \
                isinstance(n.args[0], E.BufferLoad):
            counts[id(n.args[0].buffer)] = counts.get(id(n.args[0].buffer), 0) + 1
    walk(root, f)
    from tilelang.ir import tile_ops as TO

    def g(n):
        if isinstance(n, TO.TileOp):
            for _, w in [(None, b) for b in accesses(n)[1]]:
                counts[id(w)] = counts.get(id(w), 0) + 1
    walk(root, g)
    return counts


def _only_loads_of(nest, src):
    bad = []
    walk(nest, lambda n: bad.append(n) if isinstance(n, E.BufferLoad) and n.buffer is not src else None)
    return not bad


def find_pipelines(launch, plan, arch, vector_width, max_stages=None):
    """{id(loop): PipelineInfo}. `vector_width(vars, mins, exts, body)` -> elements
    per vector or None, as the codegen will vectorize the copy."""
    out = {}
    if arch is None or arch_number(arch) < 80 or plan.nthreads % 32:
        return out
    loops = []
    walk(launch.body, lambda n: loops.append(n) if isinstance(n, S.For) and n.kind == S.PIPELINED else None)
    if not loops:
        return out
    writes = _writes_in(launch.body)
    aliased = set()
    walk(launch.body, lambda n: aliased.add(id(n.buffer.alias_of)) if isinstance(n, S.DeclBuffer) and
         getattr(n.buffer, "alias_of", None) is not None else None)
    for loop in loops:
        stages = int(loop.annotations.get("num_stages", 0) or 0)
        if max_stages is not None:
            stages = min(stages, max_stages)
        if stages < 2 or loop.step is not None or plan.depends(loop.min) or plan.depends(loop.extent):
            continue
        guard, stmts = _guarded_body(loop, plan, writes)
        info = PipelineInfo(stages, guard=guard)
        seen = []   # statements before the current one
        for st in stmts:
            if _is_async_copy(st, plan, writes, aliased, seen, vector_width):
                vars_, mins, exts, inner = parallel_nest(st)
                info.copies.append(st)
                info.bufs.append(inner.buffer)
            else:
                info.rest.append(st)
            seen.append(st)
        if info.copies:
            out[id(loop)] = info
    return out


def _is_async_copy(st, plan, writes, aliased, seen, vector_width):
    from tilelang.backend.cuda.ops.vector_copy import match_copy
    if not (isinstance(st, S.For) and st.kind == S.PARALLEL):
        return False
    vars_, mins, exts, inner = parallel_nest(st)
    m = match_copy(inner)
    if m is None:
        return False
    guard, store, load, sel = m
    dst, src = store.buffer, load.buffer
    p = plan.placements.get(id(dst))
    if guard is not None or p is None or p.kind != "smem" or src.scope != "global":
        return False
    if writes.get(id(dst), 0) != 1 or writes.get(id(src), 0) or id(dst) in aliased:
        return False
    if any(plan.depends(e) for e in exts + mins):
        return False
    if not _only_loads_of(inner, src):
        return False
    for prev in seen:
        r, w = accesses(prev)
        if any(b is dst for b in r + w):
            return False
    V = vector_width(vars_, mins, exts, inner)
    return V is not None and V * dst.dtype.itemsize >= 4


def overlapped_wgmma(cg, info):
    """The body is one wgmma gemm on ring buffers into a register accumulator (`cg`: the
    code generator or the copy planner, plan/copy_forms.py)."""
    from tilelang.ir import tile_ops as TO
    if info.stages < 3 or len(info.rest) != 1 or not isinstance(info.rest[0], TO.Gemm):
        return False
    g = info.rest[0]
    cfg = cg.plan.gemms.get(id(g))
    return getattr(cfg, "kind", "") == "wgmma" and not cfg.a_regs and \
        cg.placement(g.C.buffer).kind == "acc" and id(g) not in cg.barrier_before
