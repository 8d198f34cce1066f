"""Barriers between nests that hand every element to the same thread, dropped, as a pass
(`drop_private_barriers`, right after plan_thread_splits: every nest's thread mapping is
fixed by then).

plan/sync.py places a block barrier between two nests that share a buffer before the
copies and loops have their forms, so it cannot know which thread runs which element. The
published elementwise example loads a 32 x 32 tile into shared memory by 16-byte vectors
and reads it back in a loop over a register tile of the same shape:

    A_shared <- A[...]           vector x4, thread t copies elements 4 (j * 128 + t) ...
    T.sync_threads()             (A_shared)
    C_local = A_shared + ...     ThreadTile<32, 32, T=128, V=4>: the same elements on t

Every element is written and read by one thread, in its own program order: the barrier
orders nothing, and it makes every warp wait for the slowest warp's loads (the published
package drops it: its barrier pass runs on the per-thread code). This pass drops an inserted
block barrier of the kernel's top-level sequence when

- the statements since the barrier before it (or the kernel's start) and up to the next
  barrier (or the kernel's end) are all T.Parallel nests that analysis/element_threads.py
  models (cooperative vector or scalar forms, loops over register fragments), and
- no element that one of them writes is reached by another thread in them (a buffer only
  read is no hazard; a global tensor written there with an index that names the block keeps
  the barrier; so do two buffers that share shared memory storage, plan/kernel.py).

A barrier that the planner put there for an asynchronous reader (fenced toward the async
proxy) or a user's own `T.sync_threads()` is kept. Barriers inside loops and branches are
kept: what one iteration leaves to the next is not modelled here.
TILELANG_CUDA_PRIVATE_BARRIERS=1 turns the pass on (opt-in: on the H200 the elementwise example
ran no faster without its barrier, benchmarks/results/2026-12-04_h200_session23_smem_sharing_dc1f52e.md)."""
from __future__ import annotations

from tilelang.ir import stmt as S
from tilelang.transform.pass_manager import function_pass
from tilelang.backend.cuda.analysis.element_threads import element_threads, shared_by_threads
from tilelang.backend.cuda.plan.sync import is_inserted_barrier


def _top_sequence(body):
    """The statement sequence that runs once per block at the top of a kernel body: through
    the lets around it (never a loop or a branch), or None."""
    while True:
        if isinstance(body, S.SeqStmt):
            return body
        if isinstance(body, S.LetStmt):
            body = body.body
            continue
        return None


def _is_block_barrier(st):
    return isinstance(st, S.Barrier) and not st.is_partial


def droppable(plan, stmts, k) -> bool:
    """Whether the inserted barrier `stmts[k]` orders nothing (module docstring)."""
    b = stmts[k]
    if not is_inserted_barrier(b) or b.is_partial or b.fence_async_proxy:
        return False
    lo = k
    while lo > 0 and not _is_block_barrier(stmts[lo - 1]):
        lo -= 1
    hi = k + 1
    while hi < len(stmts) and not _is_block_barrier(stmts[hi]):
        hi += 1
    span = [s for s in stmts[lo:k] + stmts[k + 1:hi] if not isinstance(s, S.DeclBuffer)]
    touches = {}
    for st in span:
        t = element_threads(plan, st)
        if t is None:
            return False
        for key, touch in t.items():
            touches.setdefault(key, []).append(touch)
    if _storage_shared(plan, touches):
        return False
    return not any(shared_by_threads(ts) for ts in touches.values())


def _storage_shared(plan, touches) -> bool:
    """Whether two of the buffers, one of them written, occupy the same shared memory."""
    from tilelang.backend.cuda.plan.kernel import smem_range
    spans = []
    for ts in touches.values():
        r = smem_range(plan, ts[0].buffer)
        if r is not None:
            spans.append((r, any(t.writes.any() for t in ts)))
    return any(a[0] < b[1] and b[0] < a[1] and (wa or wb)
               for i, (a, wa) in enumerate(spans) for b, wb in spans[i + 1:])


@function_pass("drop_private_barriers")
def drop_private_barriers(func, ctx=None):
    from tilelang.backend.cuda.plan.plan_kernels import map_planned_launches

    def rewrite(launch, plan, target, options):
        if not options.private_barriers:
            return launch
        seq = _top_sequence(launch.body)
        if seq is None:
            return launch
        k = 0
        while k < len(seq.stmts):   # in place: the nodes are the CUDA passes' own (plan_kernels)
            if droppable(plan, seq.stmts, k):
                del seq.stmts[k]
            else:
                k += 1
        return launch
    return map_planned_launches(func, ctx, rewrite)


__all__ = ["drop_private_barriers", "droppable"]
