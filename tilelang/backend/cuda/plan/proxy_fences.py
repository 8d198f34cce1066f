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
barriers (a tile op, a loop, a branch) keeps the fence."""
from __future__ import annotations

import dataclasses

from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk
from tilelang.transform.pass_manager import function_pass
from tilelang.backend.cuda.plan.async_proxy import needs_fences
from tilelang.backend.cuda.plan.sync import is_inserted_barrier


@function_pass("plan_proxy_fences")
def plan_proxy_fences(func, ctx=None):
    from tilelang.backend.cuda.plan.copy_forms import _Kernel
    from tilelang.backend.cuda.plan.plan_kernels import map_planned_launches, with_plan

    def rewrite(launch, plan, target, options):
        k = _Kernel(launch, plan, func, target, options)
        if not plan.fence_barriers and needs_fences(k):
            # the barrier nodes are this pipeline's own (plan/sync.py made them)
            bare = selective_fences(k, plan) if options.selective_proxy_fences else set()
            walk(launch.body, lambda n: setattr(n, "fence_async_proxy", True)
                 if is_inserted_barrier(n) and id(n) not in bare else None)
            launch = with_plan(launch, dataclasses.replace(plan, fence_barriers=True))
        return launch
    return map_planned_launches(func, ctx, rewrite)


def _root(buf):
    while getattr(buf, "alias_of", None) is not None:
        buf = buf.alias_of
    return buf


def _smem_range(plan, buf):
    """The byte range of `buf`'s shared storage, or None when it is not in shared memory."""
    p = plan.placements.get(id(_root(buf)))
    if p is None or p.kind != "smem":
        return None
    return p.offset, p.offset + p.stage_bytes * p.stages


def selective_fences(k, plan) -> set:
    """ids of the inserted barriers of kernel `k` that need no fence (module docstring): the
    kernel's async-proxy accesses of shared memory are TMA stores and (options.gemm_selective_fences)
    wgmma's shared operands, and the statements since the barrier before it are element-wise nests
    whose shared tiles overlap none of those."""
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
    async_ranges = [_smem_range(plan, b) for b in stored]
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

    out = set()

    def scan(seq, top):
        """The barriers of one statement sequence; a barrier's region starts at the barrier
        before it in the same sequence (or, at the kernel's top level, at the start); the first
        barrier of a nested sequence (a loop body: the previous iteration's end precedes it)
        keeps its fence."""
        region = [] if top else None
        for st in seq:
            if is_inserted_barrier(st):
                if region is not None and all(generic_only(x) for x in region):
                    out.add(id(st))
                region = []
            elif region is not None:
                region.append(st)
    scan(body.stmts if isinstance(body, S.SeqStmt) else [body], True)
    if with_gemms:
        walk_nodes(body, lambda n: scan(n.stmts, False) if isinstance(n, S.SeqStmt) and n is not body else None)
    return out


__all__ = ["needs_fences", "plan_proxy_fences", "selective_fences"]
