"""Software pipelining of `T.Pipelined(n, num_stages=s)` loops (s >= 2, sm_80+).

The tile copies global -> shared at the top level of the loop body whose element
copies vectorize to 4, 8 or 16 bytes become `cp.async` copies into an s-deep ring
of the shared buffer: the prologue issues iterations 0 .. s-2; iteration k waits
for its own group (`cp.async.wait_group s-2`), synchronizes the block, issues the
copies of iteration k+s-1 into the slot that iteration k-1 read, and runs the rest
of the body on slot k % s. A copy is hoisted only when that cannot change results:
its shared buffer is written by nothing else and not touched earlier in the body,
its global source is never written by the kernel, and its indices read no buffer
but the source. (This module decides; plan/cp_async_pipeline.py writes the cp.async schedule
into the IR, ops/tma_pipeline.py prints the TMA ring's.)

A body that is one `if cond:` without `else` (block-sparse GEMM: `if BlockMask[by, bx, k]:`)
is pipelined the same way when every thread of the block agrees on `cond` and `cond` reads
nothing the kernel writes: the copies of iteration j are issued under `cond(j)`, the rest of
iteration k runs under `cond(k)`, and every iteration still closes its cp.async group (empty
when skipped) so that the waits count the same groups.

`num_stages=1` is a pipeline too, as in the published package (its pipeline planning gives
the copies stage 0 and their readers stage 1, and its buffer versioning keeps one version,
since no copy is issued before a reader of the same iteration): each shared buffer keeps
one version, and the copy of iteration k+1 is issued right after the last statement of
iteration k that reads it, so that it overlaps the rest of that iteration (FlashAttention:
K(k+1) loads during softmax(k) and P·V(k), V(k+1) during Q·K(k+1)). The body then lists,
besides its statements, a `PREFETCH_WAIT` marker before the first reader of each group of
copies (where the group must have landed) and a `PREFETCH_ISSUE` marker after its last
reader (where the next iteration's copies are issued); plan/sync.py puts the barriers
around them and plan/cp_async_pipeline.py replaces them by `cp.async.wait_group` and the
copies. A loop whose copies would overlap nothing (a GEMM body: copy, copy, gemm) is not
pipelined, with a note. `num_stages=0` is a plain loop. A deeper loop whose ring does not fit
in shared memory (plan/kernel.py caps its stages) falls back to this one-version schedule
rather than to the plain loop."""
from __future__ import annotations

from dataclasses import dataclass, field

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk
from tilelang.ir.pipeline_spec import PipelineSpec, pipeline_spec
from tilelang.backend.cuda.analysis.facts import parallel_nest, accesses
from tilelang.backend.cuda.target import arch_number


@dataclass
class PipelineInfo:
    stages: int                                  # the depth used: spec.depth, capped to fit shared memory
    spec: PipelineSpec = PipelineSpec()          # the loop's T.Pipelined arguments
    notes: list = field(default_factory=list)    # what of the spec this plan could not follow
    copies: list = field(default_factory=list)   # the T.Parallel copy nests issued asynchronously
    bufs: list = field(default_factory=list)     # the shared buffers they fill (multi-buffered)
    rest: list = field(default_factory=list)     # the other statements of the body, in order
    guard: object = None                         # `cond` of a body `if cond:` (per iteration), or None
    # num_stages=1 (module docstring): the copies in groups, each issued after its last reader;
    # `rest` then holds the PREFETCH_WAIT / PREFETCH_ISSUE markers of the groups
    groups: list = field(default_factory=list)   # [[copy nests]] in the order they are issued
    # the body's own barriers order every shared/global access one iteration carries to the next
    # (plan/sync.py, TILELANG_CUDA_COVERED_BARRIERS): a warp-specialized ring, whose slots the
    # mbarriers hand over, then needs no barrier at the top of its iterations
    carried_ordered: bool = False

    @property
    def issue_after_use(self) -> bool:
        """Whether the copies are issued after their last reader into one buffer version
        (num_stages=1), rather than at the top of the iteration into an s-slot ring."""
        return bool(self.groups)


PREFETCH_WAIT = "tl.pipeline_prefetch_wait"     # (group): the group's copies have landed (num_stages=1)
PREFETCH_ISSUE = "tl.pipeline_prefetch_issue"   # (group): issue the group for the next iteration


def prefetch_marker(st):
    """(PREFETCH_WAIT or PREFETCH_ISSUE, group index) of a marker statement, else None."""
    v = getattr(st, "value", None) if isinstance(st, S.Evaluate) else None
    if isinstance(v, E.Call) and v.name in (PREFETCH_WAIT, PREFETCH_ISSUE):
        return v.name, E.const_int_value(v.args[0])
    return None


def body_stmts(loop):
    b = loop.body
    return list(b.stmts) if isinstance(b, S.SeqStmt) else [b]


def _guarded_body(loop, plan, writes):
    """(cond, statements) when the loop body is one `if cond:` (no else) whose condition
    every thread evaluates alike and that reads only global tensors the kernel never
    writes; else (None, the body's statements)."""
    stmts = body_stmts(loop)
    if _guard_refusal(loop, plan, writes) is not None:
        return None, stmts
    then = stmts[0].then_body
    return stmts[0].cond, list(then.stmts) if isinstance(then, S.SeqStmt) else [then]


def _guard_refusal(loop, plan, writes):
    """Why the body's one `if cond:` cannot be lifted out of the pipelined iterations (its
    copies are issued ahead only where `cond` holds for the iteration they are for); None
    when it can, "" when the body is not one `if` without an else."""
    stmts = body_stmts(loop)
    if len(stmts) != 1 or not isinstance(stmts[0], S.IfThenElse) or stmts[0].else_body is not None:
        return ""
    cond = stmts[0].cond
    loads = []
    walk(cond, lambda n: loads.append(n.buffer) if isinstance(n, E.BufferLoad) else None)
    if plan.depends(cond):
        return "its condition differs between threads"
    bad = [b.name for b in loads if b.scope != "global" or writes.get(id(b), 0)]
    if bad:
        return (f"its condition reads {', '.join(dict.fromkeys(bad))}, which is not a global tensor the kernel "
                f"never writes")
    return None


def _unpipelined_if_note(loop, plan, writes, after_use):
    """The plan report's note for a T.Pipelined loop whose body is one `if` and that issues no
    copy ahead (the published block-sparse attention examples: `if block_mask[k] != 0:`)."""
    why = _guard_refusal(loop, plan, writes)
    if why == "":
        return None
    if after_use:
        why = ("num_stages=1 issues the next iteration's copies after their last readers in this one, "
               "inside the `if`, where the next iteration's condition is not known")
    elif why is None:
        return None
    return f"T.Pipelined over {loop.var.name}: not pipelined: its body is one `if` ({why})"


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


def _only_loads_of(nest, src, invariant=frozenset(), writes=None):
    """The nest reads `src` and, in its indices, only the block-uniform scalars of
    `invariant` (ids of local.var buffers the loop does not write: varlen attention's
    `kv_start_idx`, read from cu_seqlens before the loop) and global tensors the kernel
    never writes (a paged KV cache's block table, tilelang/transform/inline_copy_scalars.py),
    which a copy issued iterations ahead reads with the same value."""
    bad = []
    walk(nest, lambda n: bad.append(n) if isinstance(n, E.BufferLoad) and n.buffer is not src and
         id(n.buffer) not in invariant and not (writes is not None and n.buffer.scope == "global" and
                                                 not writes.get(id(n.buffer))) else None)
    return not bad


def _invariant_scalars(loop, plan, writes_in_loop):
    """ids of the local.var scalars the loop body reads but never writes, whose values
    are the same in every thread (plan.depends: not thread-dependent)."""
    out = set()

    def f(n):
        if isinstance(n, E.BufferLoad) and n.buffer.scope == "local.var" and \
                not writes_in_loop.get(id(n.buffer)) and not plan.depends(n):
            out.add(id(n.buffer))
    walk(loop.body, f)
    return out


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
        spec = pipeline_spec(loop)
        stages = spec.depth
        if max_stages is not None:
            stages = min(stages, max_stages)
        # num_stages=1 without a manual schedule: the copies are issued after their last reader
        # (also a deeper loop capped to one stage to fit shared memory: it needs no second version)
        after_use = stages == 1 and spec.num_stages >= 1 and spec.stage is None and \
            getattr(plan.options, "one_stage_prefetch", True)
        if (stages < 2 and not after_use) or loop.step is not None or plan.depends(loop.min) or \
                plan.depends(loop.extent):
            continue
        # a manual schedule (order/stage) names the body's own statements: no `if cond:` lifting then
        # (nor for num_stages=1, whose issue points are statements inside the `if`)
        guard, stmts = _guarded_body(loop, plan, writes) if spec.stage is None and not after_use \
            else (None, body_stmts(loop))
        info = PipelineInfo(stages, spec=spec, guard=guard)
        sched = _scheduled(stmts, spec, info.notes)   # body index -> index in order/stage
        seen = []   # statements before the current one
        invariant = _invariant_scalars(loop, plan, _writes_in(loop.body))
        for k, st in enumerate(stmts):
            ahead = k not in sched or spec.stage[sched[k]] < max(spec.stage)
            if ahead and _is_async_copy(st, plan, writes, aliased, seen, vector_width, invariant):
                vars_, mins, exts, inner = parallel_nest(st)
                info.copies.append(st)
                info.bufs.append(inner.buffer)
            else:
                if ahead and k in sched:
                    info.notes.append(f"statement {sched[k]} (stage {spec.stage[sched[k]]}) runs in its own "
                                      f"iteration: only global -> shared copies the ring can hold are issued ahead")
                info.rest.append(st)
            seen.append(st)
        _note_schedule(info, stmts, sched)
        if after_use and info.copies:
            _issue_after_use(info, plan)
        if info.copies:
            out[id(loop)] = info
        else:   # not pipelined: what it could not follow goes to the kernel's notes
            why = _unpipelined_if_note(loop, plan, writes, after_use)
            plan.notes.extend(n for n in info.notes + ([why] if why else []) if n not in plan.notes)
    return out


def _issue_after_use(info, plan):
    """Group the copies by their last reader in the body and put the PREFETCH markers into
    `info.rest` (module docstring); when a copy is read by nothing in the body, or the groups
    would overlap no other work, the loop is not pipelined (noted)."""

    def reads(st, buf):
        return any(b is buf for b in accesses(st)[0])
    rest, firsts, lasts = info.rest, {}, {}
    for c, buf in zip(info.copies, info.bufs):
        readers = [j for j, st in enumerate(rest) if reads(st, buf)]
        if readers:
            firsts[id(c)], lasts[id(c)] = readers[0], _after_chain(rest, readers[-1])
    by_last = sorted({lasts[id(c)] for c in info.copies if id(c) in lasts})
    groups = [[c for c in info.copies if lasts.get(id(c)) == j] for j in by_last]
    work = [j for j, st in enumerate(rest) if not isinstance(st, (S.DeclBuffer, S.Barrier))]
    first_of = [min(firsts[id(c)] for c in g) for g in groups]
    # the work a group overlaps: after its last reader, and before its first reader next time
    overlapped = any(j > last or j < first for first, last in zip(first_of, by_last) for j in work)
    unread = [b.name for c, b in zip(info.copies, info.bufs) if id(c) not in lasts]
    if unread or not overlapped:
        why = (f"nothing in the body reads {', '.join(unread)}" if unread else
               "the copies would overlap no other work of the body (their readers are all it does)")
        plan.notes.append(f"num_stages=1 over {', '.join(b.name for b in info.bufs)}: not pipelined, {why}")
        info.copies, info.bufs = [], []
        return
    info.groups = groups
    marked = []
    for j, st in enumerate(rest):
        marked += [_marker(PREFETCH_WAIT, g) for g, first in enumerate(first_of) if first == j]
        marked.append(st)
        marked += [_marker(PREFETCH_ISSUE, g) for g, last in enumerate(by_last) if last == j]
    info.rest = marked


def _after_chain(rest, j):
    """The last of the gemms into the same accumulator that follow statement j back to back:
    plan/kernel.py may chain them (wgmma), the first leaving its group, and with it its
    reads of shared memory, in flight until the last one waits."""
    from tilelang.ir import tile_ops as TO
    while j + 1 < len(rest) and isinstance(rest[j], TO.Gemm) and isinstance(rest[j + 1], TO.Gemm) and \
            rest[j + 1].C.buffer is rest[j].C.buffer:
        j += 1
    return j


def _marker(name, group):
    return S.Evaluate(E.Call(name, [E.IntImm(group)], "handle"))


def _scheduled(stmts, spec, notes):
    """{body index: index into spec.order / spec.stage} of the scheduled statements
    (declarations and the barriers plan/sync.py inserted take no entry); empty without a
    manual schedule, or when a pass has rewritten the body into a different number of
    statements (then noted)."""
    if spec.stage is None:
        return {}
    ks = [k for k, st in enumerate(stmts) if not isinstance(st, S.DeclBuffer) and
          not (isinstance(st, S.Barrier) and getattr(st, "reason", None) is not None)]
    if len(ks) != len(spec.stage):
        notes.append(f"stage={list(spec.stage)} not applied: the lowered loop body has {len(ks)} statements; "
                     f"every eligible copy is issued ahead")
        return {}
    return {k: j for j, k in enumerate(ks)}


def _note_schedule(info, stmts, sched):
    """Notes for the parts of a manual schedule this pipeliner does not follow (they
    change when work is issued, never the results)."""
    spec, copies = info.spec, {id(c) for c in info.copies}
    if sched and len({spec.stage[sched[k]] for k, st in enumerate(stmts) if id(st) in copies}) > 1:
        info.notes.append(f"copies of stages {sorted({spec.stage[sched[k]] for k, st in enumerate(stmts) if id(st) in copies})} "
                          f"are all issued {info.stages - 1} iteration{'s' * (info.stages != 2)} ahead")
    if sched:
        ours = [k for k in sched if id(stmts[k]) in copies] + [k for k in sched if id(stmts[k]) not in copies]
        if [spec.order[sched[k]] for k in ours] != list(range(len(ours))):
            info.notes.append(f"order={list(spec.order)} not followed: the copies for later iterations are "
                              f"issued first, then the rest of the body in program order (results are those "
                              f"of the plain loop either way)")
    if spec.sync is not None or spec.group is not None:
        info.notes.append("sync= / group= have no effect: barriers are placed by plan/sync.py, "
                          "copies are grouped per iteration")


# annotation on a copy nest of a pipelined loop's schedule (plan/cp_async_pipeline.py):
# ("load" | "store", tag): only that half of a converting copy, the loaded vectors held in
# registers in between (the tag names the pair); emit/kernel.py `cooperative` prints it
STAGED = "tl.staged_copy"


def converting_copy(st):
    """Whether the copy nest converts its elements (`T.copy` of a bf16 tensor into a float32
    tile): no cp.async moves it, so a pipelined loop issues it as the threads' own vector
    loads, conversions and stores, in the ring slot of a later iteration all the same."""
    from tilelang.backend.cuda.ops.vector_copy import match_cast_copy, without_assumes
    return isinstance(st, S.For) and match_cast_copy(without_assumes(parallel_nest(st)[3])) is not None


def staged_converting_copies(plan) -> bool:
    """Whether the pipelined loops of `plan`'s kernel issue their converting copies ahead,
    staged through registers (`converting_copy`). Only a kernel that runs a gemm: its blocks
    are few an SM and the staged loads overlap its gemms. A streaming kernel (copies and
    elementwise work only) has other resident blocks to run while its loads are in flight,
    and the registers a staged tile holds cost it those blocks (DeepSeek mHC's fused pre
    kernel: 104 registers a thread staged, 64 in place, 0.0356 -> 0.0300 ms on the H200,
    `benchmarks/results/2026-12-03_h200_mhc_pre_kernels_aa8095d.md`); the published package
    runs such copies in place. TILELANG_CUDA_CONVERTING_COPY_PIPELINE=0 keeps them in place
    everywhere (A/B)."""
    return getattr(plan.options, "converting_copy_pipeline", True) and bool(plan.gemms)


def _is_async_copy(st, plan, writes, aliased, seen, vector_width, invariant=frozenset()):
    from tilelang.backend.cuda.ops.vector_copy import match_copy, match_cast_copy
    if not (isinstance(st, S.For) and st.kind == S.PARALLEL):
        return False
    vars_, mins, exts, inner = parallel_nest(st)
    m = match_copy(inner)
    if m is None:
        c = match_cast_copy(inner) if staged_converting_copies(plan) else None
        if c is None:
            return False
        m = (c[0], c[1], c[2], None)
    guard, store, load, sel = m
    dst, src = store.buffer, load.buffer
    p = plan.placements.get(id(dst))
    if guard is not None or p is None or p.kind != "smem" or src.scope != "global":
        return False
    if writes.get(id(dst), 0) != 1 or writes.get(id(src), 0) or id(dst) in aliased:
        return False
    if any(plan.depends(e) for e in exts + mins):
        return False
    if not _only_loads_of(inner, src, invariant, writes):
        return False
    for prev in seen:
        r, w = accesses(prev)
        if any(b is dst for b in r + w):
            return False
    V = vector_width(vars_, mins, exts, inner)
    return V is not None and V * min(dst.dtype.itemsize, src.dtype.itemsize) >= 4


def overlapped_wgmma(cg, info):
    """The body is one wgmma gemm on ring buffers into a register accumulator (`cg`: the
    code generator or the copy planner, plan/copy_forms.py). (No barrier goes before the
    first statement of a pipelined body: plan/sync.py starts it with nothing pending.)"""
    from tilelang.ir import tile_ops as TO
    if info.stages < 3 or len(info.rest) != 1 or not isinstance(info.rest[0], TO.Gemm):
        return False
    g = info.rest[0]
    cfg = cg.plan.gemms.get(id(g))
    return getattr(cfg, "kind", "") == "wgmma" and not cfg.a_regs and \
        cg.placement(g.C.buffer).kind == "acc"
