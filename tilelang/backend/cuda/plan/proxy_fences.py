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
    kernel's async-proxy accesses are TMA stores only, and the barrier follows, in the kernel's
    top-level sequence, element-wise nests whose shared tiles do not overlap a stored tile."""
    from tilelang.ir import tile_ops as TO
    from tilelang.ir.visitor import walk as walk_nodes
    from tilelang.backend.cuda.analysis.facts import accesses
    from tilelang.backend.cuda.ops.tma_reduce import has_tma_reduce
    from tilelang.backend.cuda.ops.tma_load_sync import has_tma_load_sync
    from tilelang.backend.cuda.ops.tma_store import is_tma_store
    from tilelang.backend.cuda.plan.copy_form import copy_form
    body = k.launch.body
    if plan.uses_wgmma or plan.gemms or plan.pipelines or plan.warp_specialized is not None or \
            has_tma_reduce(body) or has_tma_load_sync(k):
        return set()
    stored, unknown = [], []

    def store_source(n):
        if not (isinstance(n, S.For) and n.kind == S.PARALLEL):
            return
        form = copy_form(n)
        if form is None and is_tma_store(n, k):
            unknown.append(n)
        elif form is not None and form.kind == "tma_store":
            stored.extend(b for b in accesses(n)[0] if b.scope.startswith("shared"))
    walk_nodes(body, store_source)
    async_ranges = [_smem_range(plan, b) for b in stored]
    if unknown or not stored or None in async_ranges:
        return set()

    def generic_only(st):
        """Whether `st` is a declaration or an element-wise nest whose shared tiles lie outside
        every stored tile."""
        if isinstance(st, S.DeclBuffer):
            return True
        if not (isinstance(st, S.For) and st.kind == S.PARALLEL):
            return False
        inner = []
        walk_nodes(st, lambda n: inner.append(n) if isinstance(n, (S.Barrier, TO.TileOp)) else None)
        if inner or copy_form(st) is None or copy_form(st).kind == "tma_store":
            return False
        reads, writes = accesses(st)
        for b in reads + writes:
            if b.scope == "global" or not b.scope.startswith("shared"):
                continue
            r = _smem_range(plan, b)
            if r is None or any(r[0] < a[1] and a[0] < r[1] for a in async_ranges):
                return False
        return True
    out, region = set(), []
    for st in body.stmts if isinstance(body, S.SeqStmt) else [body]:
        if is_inserted_barrier(st):
            if all(generic_only(x) for x in region):
                out.add(id(st))
            region = []
        else:
            region.append(st)
    return out


__all__ = ["needs_fences", "plan_proxy_fences", "selective_fences"]
