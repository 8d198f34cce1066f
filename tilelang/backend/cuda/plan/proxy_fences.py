"""Proxy fences as a pass (`plan_proxy_fences`, after plan_copy_forms): shared memory
written by ordinary stores or cp.async (the generic proxy) and read next by wgmma or a
bulk copy (the async proxy), or written by a bulk copy and read by threads, needs a
`fence.proxy.async` before the barrier that orders the two. When the kernel has such a
reader (a wgmma gemm, a TMA store, a whole-tile TMA load, a TMA reduction: the forms
plan/copy_forms.py chose), every block barrier fences first: the barriers plan/sync.py
inserted carry it (`T.sync_threads()  # inserted, after a fence.proxy.async: ...`), and
the plan records it (`KernelPlan.fence_barriers`) for the barriers the code generator
prints inside the schedules it still makes itself (pipelines, reductions)."""
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
    from tilelang.backend.cuda.plan.plan_kernels import cuda_context, kernel_plan, with_launches, with_plan
    found = cuda_context(func, ctx)
    if found is None:
        return func
    target, options, stmts = found
    out = []
    for launch in stmts:
        plan = kernel_plan(launch) if isinstance(launch, S.KernelLaunch) else None
        if plan is not None and not plan.fence_barriers and needs_fences(_Kernel(launch, plan, func, target, options)):
            # the barrier nodes are this pipeline's own (plan/sync.py made them)
            walk(launch.body, lambda n: setattr(n, "fence_async_proxy", True) if is_inserted_barrier(n) else None)
            launch = with_plan(launch, dataclasses.replace(plan, fence_barriers=True))
        out.append(launch)
    return with_launches(func, out)


__all__ = ["needs_fences", "plan_proxy_fences"]
