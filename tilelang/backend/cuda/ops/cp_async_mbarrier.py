"""cp.async tracked by an mbarrier (`cp.async.mbarrier.arrive`, sm_80+): the form of a
`T.tma_copy(..., barrier=bar)` that does not run as a bulk copy."""
from __future__ import annotations


def emit_copy_on_mbarrier(cg, nest, bar) -> bool:
    """A T.tma_copy(src, dst, barrier=bar) that does not run as a bulk copy: the threads
    of the range issue it as cp.async and `cp.async.mbarrier.arrive` on `bar` (the form
    that adds one pending arrival and removes it when this thread's copies have landed),
    so the barrier's phase completes only with the data, as a TMA's would, and the
    producer does not wait for its loads (as plain loads and stores it waited twice a
    round in the published vertical-slash sparse attention's K/V producer). False (the
    caller copies synchronously) unless: sm_80+, a global -> shared tile in 4-, 8- or
    16-byte vectors, a kernel whose async-proxy reads of shared memory (wgmma, bulk
    stores: plan/proxy_fences.py) follow a fence after every mbarrier wait (a reader needs
    a fence after the wait, which the writer cannot give: ops/sync_calls.py prints one
    after each wait of a kernel with wgmma, the published sparse MLA's Q tile), and every
    barrier of `bar`'s array counts as many arrivals as the range
    has threads, so that each thread's pending arrival is added before the phase can
    complete (its own arrival follows it)."""
    from tilelang.ir import expr as E
    from tilelang.backend.cuda.analysis.facts import parallel_nest
    from tilelang.backend.cuda.ops.vector_copy import match_copy, vector_width, without_assumes
    from tilelang.backend.cuda.target import arch_number
    if arch_number(cg.target.arch) < 80 or not isinstance(bar, E.BufferLoad):
        return False
    counts = getattr(bar.buffer, "arrive_counts", None)
    if not counts or any(c != cg.range.size for c in counts):
        return False
    vars_, mins, exts, body = parallel_nest(nest)
    m = match_copy(without_assumes(body))
    if m is None:
        return False
    dst, src = m[1].buffer, m[2].buffer
    if src.scope != "global" or getattr(cg.placement(dst), "kind", None) != "smem" or \
            cg.plan.fence_barriers and not cg.plan.uses_wgmma:
        return False
    V = vector_width(cg, vars_, mins, exts, body)
    if not V or V * dst.dtype.itemsize not in (4, 8, 16):
        return False
    cg.async_copy = True
    try:
        cg.cooperative(nest)
    finally:
        cg.async_copy = False
    cg.w(f"tl::cp_async_mbar_arrive<false>(&{cg.access(bar)});")
    return True

