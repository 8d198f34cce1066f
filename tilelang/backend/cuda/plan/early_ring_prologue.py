"""A TMA ring's prologue issued before the tile loads that precede its loop, as a pass
(`issue_ring_prologue_early`, right after pipeline_tma_ring).

FlashAttention's forward loads Q into shared memory right before its pipelined loop over K and
V, with vector loads and stores (a round trip to memory), and the ring's head follows:

    Q_shared <- Q[...]                          every thread: loads, then stores
    acc_o, l_i, m_i <- constants
    T.tma_ring_alloc(...); if <thread 0>: mbarrier init; T.sync_threads()
    if <thread 0>: the prologue's bulk copies of K and V
    for k: wait for the slot; ... reads Q_shared, K_shared, V_shared

so the first tiles of K and V start only after Q has arrived: two memory latencies before the
first product, most of the time of a kernel of two or three iterations (the regression
configurations of the published flash_attention examples; the published package issues Q by
TMA beside K and V). This pass moves the ring's head (its allocation, the barrier
initialisation, the barrier after it and the prologue) above the run of loop nests right
before it, when that run loads a tile from global memory: the bulk copies are then in flight
while Q is loaded. A moved-over nest must not touch a ring buffer or shared storage a ring
buffer occupies (buffers with disjoint lifetimes share it: plan/kernel.py), write what the
head reads, or hold a barrier or a call (anything but plain loads and stores). Where the moved-over nests
write shared memory, a barrier takes the place the initialisation's barrier had for them
(before the loop; fenced toward the async proxy as that one was).
TILELANG_CUDA_EARLY_RING_PROLOGUE=0 keeps the head where the ring's schedule put it (A/B)."""
from __future__ import annotations

from tilelang.ir import stmt as S
from tilelang.ir.tma_ring import TmaRingAlloc, _RingOp
from tilelang.ir.visitor import walk
from tilelang.transform.pass_manager import function_pass
from tilelang.ir.buffer import storage_root

INIT_REASON = "the TMA ring's mbarriers"   # how RingParts.init's barrier reason begins


def _holds(node, pred) -> bool:
    found = []
    walk(node, lambda n: found.append(n) if pred(n) else None)
    return bool(found)


def _head_part(st) -> bool:
    """Whether `st` belongs to a ring's head as plan/tma_ring_parts.py writes it."""
    if isinstance(st, TmaRingAlloc):
        return True
    if isinstance(st, S.Barrier):
        return (st.reason or "").startswith(INIT_REASON)
    return isinstance(st, S.IfThenElse) and st.else_body is None and \
        _holds(st.then_body, lambda n: isinstance(n, _RingOp)) and \
        not _holds(st.then_body, lambda n: isinstance(n, S.Barrier))


def _plain_nest(st) -> bool:
    """A loop nest of loads and stores only (no barrier, call statement or ring operation)."""
    return isinstance(st, S.For) and not _holds(
        st, lambda n: isinstance(n, (S.Barrier, S.Evaluate, _RingOp, S.DeclBuffer)))


def _loads_a_tile(st) -> bool:
    """Whether nest `st` reads global memory into shared memory."""
    from tilelang.backend.cuda.analysis.facts import accesses
    r, w = accesses(st)
    return any(b.scope == "global" for b in r) and any(b.scope.startswith("shared") for b in w)


def _overlaps(plan, bufs, ring):
    """Whether the shared storage of one of `bufs` overlaps that of a buffer of `ring`."""
    from tilelang.backend.cuda.plan.kernel import smem_range
    spans = [s for s in (smem_range(plan, b) for b in ring) if s is not None]
    return any(lo < z and a < hi for b in bufs for lo, hi in [smem_range(plan, b) or (0, 0)] for a, z in spans)


def hoist(seq, plan) -> bool:
    """Move every ring head of sequence `seq` above the plain nests right before it (in
    place); whether one moved."""
    from tilelang.backend.cuda.analysis.facts import accesses
    stmts, moved, i = seq.stmts, False, 0
    while i < len(stmts):
        if not isinstance(stmts[i], TmaRingAlloc):
            i += 1
            continue
        end = i + 1
        while end < len(stmts) and _head_part(stmts[end]) and not isinstance(stmts[end], TmaRingAlloc):
            end += 1
        head = stmts[i:end]
        if not any(_holds(s, lambda n: n.__class__.__name__ == "TmaRingLoad") for s in head):
            i = end
            continue
        reads = {id(storage_root(b)) for s in head for b in accesses(s)[0]}
        ring_bufs = [b for s in head for b in accesses(s)[1]]
        ring = {id(storage_root(b)) for b in ring_bufs}
        start = i
        while start > 0 and _plain_nest(stmts[start - 1]):
            r, w = accesses(stmts[start - 1])
            if any(id(storage_root(b)) in ring for b in r + w) or any(id(storage_root(b)) in reads for b in w) or \
                    _overlaps(plan, r + w, ring_bufs):
                break
            start -= 1
        over = stmts[start:i]
        if not any(_loads_a_tile(s) for s in over):
            i = end
            continue
        shared = sorted({b.name for s in over for b in accesses(s)[1] if b.scope.startswith("shared")})
        after = [S.Barrier("block", reason=f"{', '.join(shared)} written before the TMA ring's loop "
                                           f"(its prologue issued first)", fence_async_proxy=plan.fence_barriers)] \
            if shared else []
        stmts[start:end] = head + over + after
        moved, i = True, end + len(after)
    return moved


@function_pass("issue_ring_prologue_early")
def issue_ring_prologue_early(func, ctx=None):
    from tilelang.backend.cuda.plan.pipelined_loops import parents
    from tilelang.backend.cuda.plan.plan_kernels import map_planned_launches

    def rewrite(launch, plan, target, options):
        if not options.early_ring_prologue:
            return launch
        for seq in {id(p): p for p, _ in parents(launch) if isinstance(p, S.SeqStmt)}.values():
            hoist(seq, plan)   # in place, as the pipelining passes change the kernel's tree
        return launch
    return map_planned_launches(func, ctx, rewrite)


__all__ = ["issue_ring_prologue_early", "hoist"]
