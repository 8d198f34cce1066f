"""Whether a kernel reads or writes shared memory through the async proxy (wgmma, TMA
stores, whole-tile TMA loads, TMA reductions): then a generic-proxy write and such an
access need a `fence.proxy.async` between them. Read by the pass plan_proxy_fences (which
fences every block barrier of such a kernel) and by plan_copy_forms (a form that cannot
give that fence is not chosen there: ops/cp_async_mbarrier.py)."""
from __future__ import annotations


def needs_fences(k) -> bool:
    """Whether the kernel `k` (plan/copy_forms.py's view of one kernel) has an async-proxy
    access of shared memory that block barriers must order."""
    from tilelang.backend.cuda.ops.tma_reduce import has_tma_reduce
    from tilelang.backend.cuda.ops.tma_store import has_tma_store
    from tilelang.backend.cuda.ops.tma_load_sync import has_tma_load_sync
    return k.plan.uses_wgmma or has_tma_reduce(k.launch.body) or has_tma_store(k) or has_tma_load_sync(k)


__all__ = ["needs_fences"]
