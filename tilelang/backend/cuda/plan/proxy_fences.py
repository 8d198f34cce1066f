"""Proxy fences as a pass (`plan_proxy_fences`, after plan_copy_forms): shared memory
written by ordinary stores or cp.async (the generic proxy) and read next by wgmma or a
bulk copy (the async proxy), or written by a bulk copy and read by threads, needs a
`fence.proxy.async` before the barrier that orders the two. When the kernel has such a
reader (a wgmma gemm, a TMA store, a whole-tile TMA load, a TMA reduction: the forms
plan/copy_forms.py chose), every block barrier fences first: the barriers plan/sync.py
inserted carry it (`T.sync_threads()  # inserted, after a fence.proxy.async: ...`), and
the plan records it (`KernelPlan.fence_barriers`) for the barriers the code generator
prints inside the schedules it still makes itself (pipelines, reductions).

The fence orders the executing thread's generic accesses of shared memory with async-proxy
accesses of the same memory; a barrier whose threads touched, since the previous barrier, only
shared memory that no async-proxy access reaches has nothing to fence. Where a kernel's only
async-proxy accesses are TMA stores (an epilogue tile: the published elementwise example's
`C_shared`), the barriers in the kernel's top-level sequence that follow element-wise nests on
other shared tiles (its `A_shared`, `B_shared`) are left unfenced (`selective_fences`;
TILELANG_CUDA_SELECTIVE_PROXY_FENCES=0 fences every barrier). Anything else between two such
barriers (a tile op, a loop, a branch) keeps the fence.

Kernels with gemms (TILELANG_CUDA_GEMM_SELECTIVE_FENCES, default on): wgmma's shared operands
count as async-proxy tiles too, and since every async-proxy access admitted here is a read, a
barrier fences only when a thread may have written one of those tiles since the barrier it
passed last (`_regions_without_async_writes`). Those statements are followed through loops and
`let`s: the published sparse MLA backward stages dKV through shared tiles and adds it to global
memory with atomics, three barriers per half tile, none of which orders a tile wgmma reads
(its fence.proxy.async is a MEMBAR.ALL.CTA, which orders all of the thread's earlier memory
operations, plus a FENCE.VIEW.ASYNC.S: 14 of each in its SASS before, 7 after). cp.async copies
that land on an mbarrier (no wait group in the kernel) are no write a barrier of the issuing
thread can fence: their reader fences after its mbarrier wait (opt-in,
TILELANG_CUDA_UNFENCED_MBARRIER_CP_ASYNC=1: the sparse MLA forward's producer ran slower without
those fences on the H200, 0.0360 -> 0.0386 ms)."""
from __future__ import annotations

import dataclasses

from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk
from tilelang.transform.pass_manager import function_pass
from tilelang.backend.cuda.plan.async_proxy import needs_fences
from tilelang.backend.cuda.plan.sync import is_inserted_barrier
from tilelang.backend.cuda.plan.kernel import smem_range


@function_pass("plan_proxy_fences")
def plan_proxy_fences(func, ctx=None):
    from tilelang.backend.cuda.plan.copy_forms import _Kernel
    from tilelang.backend.cuda.plan.plan_kernels import map_planned_launches, with_plan

    def rewrite(launch, plan, target, options):
        k = _Kernel(launch, plan, func, target, options)
        if not plan.fence_barriers and needs_fences(k):
            # the barrier nodes are this pipeline's own (plan/sync.py made them)
            first_only = {}
            bare = selective_fences(k, plan, first_only) if options.selective_proxy_fences else set()

            def mark(n):
                if is_inserted_barrier(n) and id(n) not in bare:
                    n.fence_async_proxy = True
                    n.fence_when = first_only.get(id(n))
            walk(launch.body, mark)
            launch = with_plan(launch, dataclasses.replace(plan, fence_barriers=True))
        return launch
    return map_planned_launches(func, ctx, rewrite)


def selective_fences(k, plan, first_only=None) -> set:
    """ids of the inserted barriers of kernel `k` that need no fence (module docstring): the
    kernel's async-proxy accesses of shared memory are TMA stores and (options.gemm_selective_fences)
    wgmma's shared operands, and the statements since the barrier before it are element-wise nests
    whose shared tiles overlap none of those. `first_only` (a dict) gets {id(barrier): condition}
    for the barriers that fence only in their loop's first iteration."""
    first_only = {} if first_only is None else first_only
    from tilelang.ir import tile_ops as TO
    from tilelang.ir.visitor import walk as walk_nodes
    from tilelang.ir.tensor_core_calls import WGMMA_SS, WGMMA_RS
    from tilelang.ir import expr as E
    from tilelang.backend.cuda.analysis.facts import accesses
    from tilelang.backend.cuda.ops.tma_reduce import has_tma_reduce
    from tilelang.backend.cuda.ops.tma_load_sync import has_tma_load_sync
    from tilelang.backend.cuda.ops.tma_store import is_tma_store
    from tilelang.backend.cuda.plan.copy_form import copy_form
    from tilelang.backend.cuda.plan.kernel import _buffers_in
    body = k.launch.body
    with_gemms = plan.options.gemm_selective_fences
    if (plan.uses_wgmma or plan.gemms) and not with_gemms or plan.pipelines or \
            plan.warp_specialized is not None or has_tma_reduce(body) or has_tma_load_sync(k):
        return set()
    stored, unknown, gemms = [], [], []

    def async_source(n):
        if isinstance(n, TO.Gemm):
            gemms.append(n)
        elif isinstance(n, E.Call) and n.name in (WGMMA_SS, WGMMA_RS):
            unknown.append(n)   # hand-written wgmma: its operands are not known here
        if not (isinstance(n, S.For) and n.kind == S.PARALLEL):
            return
        form = copy_form(n)
        if form is None and is_tma_store(n, k):
            unknown.append(n)
        elif form is not None and form.kind == "tma_store":
            stored.extend(b for b in accesses(n)[0] if b.scope.startswith("shared"))
    walk_nodes(body, async_source)
    for g in gemms:   # wgmma reads its shared operands through the async proxy
        cfg = plan.gemms.get(id(g))
        if getattr(cfg, "kind", "") == "wgmma":
            stored.extend(r.buffer for r in ((g.B,) if cfg.a_regs else (g.A, g.B)))
    async_ranges = [smem_range(plan, b) for b in stored]
    if unknown or not stored or None in async_ranges:
        return set()

    def generic_only(st):
        """Whether `st` is a declaration or an element-wise nest (no barrier, tile op or bulk
        copy inside) whose shared tiles lie outside every async-proxy tile."""
        if isinstance(st, S.DeclBuffer):
            return True
        if not (isinstance(st, S.For) and st.kind == S.PARALLEL):
            return False
        inner = []
        walk_nodes(st, lambda n: inner.append(n) if isinstance(n, (S.Barrier, TO.TileOp)) else None)
        form = copy_form(st)
        if inner or (form is None if not with_gemms else form is None and is_tma_store(st, k)) or \
                form is not None and form.tma:
            return False
        for i in _buffers_in(st):   # every buffer the nest mentions (atomics' operands too)
            p = plan.placements.get(i)
            if p is None or p.kind not in ("smem", "view"):
                continue
            if p.kind == "view":
                return False
            r = (p.offset, p.offset + p.stage_bytes * p.stages)
            if any(r[0] < a[1] and a[0] < r[1] for a in async_ranges):
                return False
        return True

    if not with_gemms:
        out, region = set(), []
        for st in body.stmts if isinstance(body, S.SeqStmt) else [body]:
            if is_inserted_barrier(st):
                if all(generic_only(x) for x in region):
                    out.add(id(st))
                region = []
            else:
                region.append(st)
        return out
    return _regions_without_async_writes(body, k, plan, async_ranges, first_only)


def _regions_without_async_writes(body, k, plan, async_ranges, first_only) -> set:
    """The inserted barriers before which no thread wrote, since the barrier it passed last, a
    shared tile the async proxy reads (every async-proxy access selective_fences admits is a
    read: wgmma operands, TMA stores' tiles). The statements between two barriers are followed
    through sequences, `let`s and loops: a loop body's first barrier is preceded by the previous
    iteration's tail and, in the first iteration, by what ran before the loop."""
    from tilelang.ir import expr as E
    from tilelang.ir import tile_ops as TO
    from tilelang.ir.buffer import Buffer
    from tilelang.ir.visitor import walk as walk_nodes
    from tilelang.backend.cuda.ops.tma_store import is_tma_store
    from tilelang.backend.cuda.plan.copy_form import copy_form

    def overlaps(buf):
        r = smem_range(plan, buf)
        return r is not None and any(r[0] < a[1] and a[0] < r[1] for a in async_ranges)

    # cp.async whose completion only an mbarrier observes (T.cp_async_barrier_noinc, no wait
    # group anywhere: the sparse MLA forward's producer): the copies land after the issuing
    # thread's barriers, so no fence of its can order them; their reader waits on the mbarrier
    # and fences after the wait (ops/sync_calls.py)
    from tilelang.ir import mbarrier as M
    from tilelang.ir.async_copy import is_cp_async
    calls = set()
    walk_nodes(body, lambda n: calls.add(n.name) if isinstance(n, E.Call) else None)
    landed_on_mbarrier = M.CP_ASYNC_ARRIVE in calls and M.CP_ASYNC_WAIT not in calls and \
        getattr(plan.options, "unfenced_mbarrier_cp_async", False)

    def writes_async(st):
        """Whether `st` may write an async-proxy tile (conservative: a buffer passed to a call
        counts as written; a tile op other than a gemm, a bulk copy or a user barrier counts)."""
        bad, landing = [], set()

        def f(n):
            if landed_on_mbarrier and is_cp_async(n):
                landing.add(id(n.args[0]))   # its destination (walked next, pre-order)
            if isinstance(n, S.BufferStore) and overlaps(n.buffer):
                bad.append(n)
            elif isinstance(n, E.Call) and not is_cp_async(n) and id(n) not in landing:
                for a in n.args:
                    walk_nodes(a, lambda x: bad.append(x) if isinstance(x, E.BufferLoad) and overlaps(x.buffer)
                               or isinstance(x, Buffer) and overlaps(x) else None)
            elif isinstance(n, TO.Gemm):
                if overlaps(n.C.buffer):   # (its shared operands it only reads)
                    bad.append(n)
            elif isinstance(n, TO.TileOp) or isinstance(n, S.Barrier):
                bad.append(n)
            elif isinstance(n, S.For) and n.kind == S.PARALLEL:
                form = copy_form(n)
                if form is not None and form.tma or form is None and is_tma_store(n, k):
                    bad.append(n)
        walk_nodes(st, f)
        return bool(bad)

    def has_barrier(st):
        found = []
        walk_nodes(st, lambda n: found.append(n) if isinstance(n, S.Barrier) else None)
        return bool(found)

    out = set()

    def scan(stmts, region, later=None):
        """Decide the barriers of `stmts`; `region`: the statements run since the last barrier
        when `stmts` starts (None: not known). `later`: (the region in the iterations after a
        loop's first, the condition of its first iteration) for a loop body's first barrier, which
        then fences in the first iteration only where only what ran before the loop needs it.
        Returns the region where `stmts` ends."""
        for st in stmts:
            if is_inserted_barrier(st):
                if region is not None and not any(writes_async(x) for x in region):
                    out.add(id(st))
                elif later is not None and later[0] is not None and not any(writes_async(x) for x in later[0]):
                    first_only[id(st)] = later[1]
                region, later = [], None
                continue
            if not has_barrier(st):
                if region is not None:
                    region = region + [st]
                if later is not None and later[0] is not None:
                    later = (later[0] + [st], later[1])
            elif isinstance(st, S.SeqStmt):
                region, later = scan(st.stmts, region, later), None
            elif isinstance(st, S.LetStmt):
                let = [S.Evaluate(st.value)]
                inner = None if later is None or later[0] is None else (later[0] + let, later[1])
                region, later = scan([st.body], None if region is None else region + let, inner), None
            elif isinstance(st, S.For) and st.kind != S.PARALLEL:
                body = [st.body]
                tail = scan(body, None)   # (decides every barrier but the body's first)
                runs = E.const_int_value(st.extent)
                entry = None if region is None or tail is None else region + tail
                scan(body, entry, (tail, E.binop("==", st.var, st.min)) if plan.options.fence_first_iteration else None)
                region, later = (tail if runs is not None and runs >= 1 else None), None
            else:   # branches, parallel loops, while loops with barriers: not followed
                for x in (getattr(st, "then_body", None), getattr(st, "else_body", None), getattr(st, "body", None)):
                    if x is not None:
                        scan([x], None)
                region, later = None, None
        return region
    scan([body], [])
    return out


def writes_fenced_within(body) -> bool:
    """Whether the statements `body` (a pipelined loop's body, before a ring schedule adds
    its barrier at the top of every iteration) write no shared memory after their last
    fenced barrier: the barrier at the top of the next iteration then has no generic write
    to publish to the async proxy, and needs no fence of its own. A fence.proxy.async is a
    MEMBAR.ALL.CTA, which waits for all of the thread's earlier memory operations: at the
    top of FlashAttention backward's iteration, for the previous iteration's dQ atomics."""
    from tilelang.backend.cuda.analysis.facts import accesses
    stmts = list(body)
    last = max((i for i, s in enumerate(stmts) if is_inserted_barrier(s) and s.fence_async_proxy), default=None)
    if last is None:
        return False
    return not any(b.scope.startswith("shared") for s in stmts[last + 1:] for b in accesses(s)[1])


__all__ = ["needs_fences", "plan_proxy_fences", "selective_fences", "writes_fenced_within"]

