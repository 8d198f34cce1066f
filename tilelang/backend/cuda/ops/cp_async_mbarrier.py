"""cp.async tracked by an mbarrier (`cp.async.mbarrier.arrive`, sm_80+): the form of a
`T.tma_copy(..., barrier=bar)` that does not run as a bulk copy."""
from __future__ import annotations


def mbarrier_copy_width(k, nest, bar, async_readers) -> int:
    """Elements per cp.async of a T.tma_copy(src, dst, barrier=bar) that does not run as a
    bulk copy, when the threads of the range can issue it as cp.async and
    `cp.async.mbarrier.arrive` on `bar` (the form that adds one pending arrival and
    removes it when this thread's copies have landed), so the barrier's phase completes
    only with the data, as a TMA's would, and the producer does not wait for its loads (as
    plain loads and stores it waited twice a round in the published vertical-slash sparse
    attention's K/V producer); 0 (the threads copy synchronously) unless: sm_80+, a
    global -> shared tile in 4-, 8- or 16-byte vectors, a kernel whose async-proxy reads of
    shared memory follow a fence after every mbarrier wait (`async_readers`: such reads
    without that fence, e.g. bulk stores, plan/proxy_fences.py: a reader needs a fence
    after the wait, which the writer cannot give; ops/sync_calls.py prints one after each
    wait of a kernel with wgmma, the published sparse MLA's Q tile), and every barrier of
    `bar`'s array counts as many arrivals as the range has threads, so that each thread's
    pending arrival is added before the phase can complete (its own arrival follows it).
    `k`: plan/copy_forms.py's view of the kernel (target, range, placements)."""
    from tilelang.ir import expr as E
    from tilelang.backend.cuda.analysis.facts import parallel_nest
    from tilelang.backend.cuda.ops.vector_copy import match_copy, vector_width, without_assumes
    from tilelang.backend.cuda.target import arch_number
    if arch_number(k.target.arch) < 80 or not isinstance(bar, E.BufferLoad) or async_readers:
        return 0
    counts = getattr(bar.buffer, "arrive_counts", None)
    if not counts or any(c != k.range.size for c in counts):
        return 0
    vars_, mins, exts, body = parallel_nest(nest)
    m = match_copy(without_assumes(body))
    if m is None:
        return 0
    dst, src = m[1].buffer, m[2].buffer
    if src.scope != "global" or getattr(k.placement(dst), "kind", None) != "smem":
        return 0
    V = vector_width(k, vars_, mins, exts, body)
    return V if V and V * dst.dtype.itemsize in (4, 8, 16) else 0


def emit_copy_on_mbarrier(cg, nest, bar, form, split):
    """The copy nest of a T.tma_copy that plan/copy_forms.py planned as cp.async on its
    mbarrier (`mbarrier_copy_width`; `form`, its CopyForm): the range's threads issue it,
    `split` over them (plan/thread_splits.py, recorded on the op), then arrive."""
    from tilelang.backend.cuda.plan.copy_form import COPY_FORM, CopyForm
    from tilelang.backend.cuda.plan.thread_splits import THREAD_SPLIT
    if split is None:
        raise AssertionError("CUDA codegen: a T.tma_copy planned as cp.async on its mbarrier has no thread split "
                             "(plan_thread_splits did not reach it)")
    nest.annotations = {**nest.annotations, COPY_FORM: CopyForm("cp_async", form.width, form.nbytes),
                        THREAD_SPLIT: split}
    cg.async_copy = True
    try:
        cg.cooperative(nest)
    finally:
        cg.async_copy = False
    cg.w(f"tl::cp_async_mbar_arrive<false>(&{cg.access(bar)});")
