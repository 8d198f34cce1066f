"""The schedule of a TMA-ring GEMM loop that keeps one wgmma group in flight, written into
the IR by the pass `pipeline_tma_ring` (plan/tma_ring_pipeline.py, which shares the ring's
pieces, plan/tma_ring_parts.py, with its slot-by-slot schedule).

The loop: a body of one wgmma gemm reading both operands from ring slots into a register
accumulator, at least three stages (plan/pipeline.py `overlapped_wgmma`), or such a gemm
followed by register work that reads the accumulator only on some iterations (the fp8
"2xAcc" GEMM: ops/wgmma_deferred_wait.py `plan_deferred_wait`). For
`for k in T.Pipelined(lo, hi, num_stages=s)`:

    T.tma_ring_alloc(ring_full, ring_released, stages=s)   (ring_empty: multicast, REFILL=wait)
    if <thread 0>: prefetch the tensor maps, init the barriers (and counters)
    T.sync_threads()  # inserted: ...
    [ring_rank = T.block_rank_in_cluster(); T.cluster_sync()]     multicast: the pair's barriers are ready
    if <thread 0>: the prologue, iterations lo .. lo + s - 1
    for k in T.serial(lo, hi):
        T.mbarrier_wait_parity(ring_full[ring_stage], ring_phase)
        with T.stage_slot(A_s, B_s, slot=ring_stage, stages=s):
            [statements before the gemm]
            T.gemm(A_s, B_s, C)  # issued only: ...           (annotation `issue_only`)
        T.warpgroup_wait(1)                                   group k - 1 retired: its slot is free
        if k > lo:
            ring_prev = the slot before ring_stage
            if T.tma_slot_release_last(ring_released[ring_prev], warps) and k - 1 + s < hi:
                the loads of iteration k - 1 + s into slot ring_prev      (the warp completing the round)
            -- or, with "empty" barriers: lane 0 of each warp arrives on ring_empty[ring_prev] (and on
               the peer block's: multicast), thread 0 waits for the round and refills
        [with T.stage_slot(...): the statements after the gemm, T.warpgroup_wait(0) and a register
         fence before the first that touches the accumulator on each path]
        advance ring_stage / ring_phase
    T.warpgroup_wait(0); T.warpgroup_fence_operand(C)
    T.sync_threads()  /  T.cluster_sync()   every copy was consumed (and every peer's arrival came)
    if <thread 0>: T.tma_ring_invalidate(ring_full[, ring_empty])

Multicast (opt-in, TILELANG_CUDA_TMA_MULTICAST=1; ops/tma.py `plan_multicast`): the blocks run
in pairs along one grid axis (the pass sets the launch's `cluster_dims`), each loads half of
the tiles both need for both (`T.tma_load(..., multicast="strips"|"rows", rank=ring_rank)`).
TILELANG_CUDA_TMA_REFILL=wait: thread 0 waits on the "empty" barriers instead of the warp
completing a round refilling the slot. Tests: tests/backend/cuda/plan/test_tma_ring_wgmma.py."""
from __future__ import annotations

from tilelang.arith.simplify import simplify
from tilelang.ir import expr as E
from tilelang.ir import mbarrier as M
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir import tensor_core_calls as TC
from tilelang.ir.cluster import BLOCK_RANK_IN_CLUSTER
from tilelang.ir.tma_ring import TmaRing, SLOT_RELEASE_LAST
from tilelang.backend.cuda.plan.tma_ring_parts import RingParts, slot_of, linear_thread


def retire(k, gemm):
    """Wait for every wgmma group, then fence the accumulator's registers (the compiler
    must not move their reads above the wait)."""
    C = gemm.C.buffer
    regs = k.plan.gemms[id(gemm)].regs
    first = E.BufferLoad(C, [E.IntImm(0, "int32") for _ in C.shape])
    return [S.Evaluate(M.call(TC.WARPGROUP_WAIT, 0)),
            S.Evaluate(M.call(TC.WARPGROUP_FENCE_OPERAND, E.access_ptr(first, 3), regs))]


def schedule_in_flight(k, loop, info, deferred=None):
    """The statements that replace `loop` (module docstring); `deferred`: the
    DeferredWait of ops/wgmma_deferred_wait.py, or None for a body of the gemm alone."""
    from tilelang.backend.cuda.ops.tma import plan_multicast
    from tilelang.backend.cuda.ops.tma_pipeline import tma_copies
    from tilelang.backend.cuda.ops.wgmma_deferred_wait import place_waits
    ns, var = info.stages, loop.var
    i32 = var.dtype
    nwarps = k.plan.nthreads // 32
    g = deferred.gemm if deferred is not None else info.rest[0]
    tmas = tma_copies(k, info)
    mc = None
    if deferred is None and not getattr(k, "cluster_dims", None):
        mc = plan_multicast(k.launch, loop, tmas, k.options.tma_multicast)
    waits = deferred is None and (mc is not None or k.options.tma_refill_wait)
    full, released = TmaRing.barriers(ns)
    empty = None
    if waits:
        released, empty = None, TmaRing.empty_barriers(ns)
    halves = {i: mc.halves[id(t)] for i, t in enumerate(tmas) if id(t) in mc.halves} if mc else {}
    ring = TmaRing(var, info.copies, info.bufs, full, released, ns, sum(t.nbytes for t in tmas), empty, halves)
    rank = E.Var("ring_rank", i32) if mc is not None else None
    R = RingParts(k, loop, info, ring, rank)
    st, ph, lo, hi = R.st, R.ph, R.lo, R.hi
    if mc is not None:   # the blocks run in pairs along the axis (the launch's clusters)
        k.cluster_dims = tuple(2 if ax == mc.axis else 1 for ax in range(3))

    g.annotations = {**g.annotations, TO.ISSUE_ONLY: True}
    before = list(deferred.before) if deferred is not None else []
    body = [R.wait_full(), S.StageSlot(info.bufs, st, ns, S.seq(before + [g])),
            S.Evaluate(M.call(TC.WARPGROUP_WAIT, 1))]
    prev = E.Var("ring_prev", i32)
    refill = simplify(var + (ns - 1))   # the iteration that refills the previous slot
    lane0 = E.binop("==", E.binop("%", linear_thread(k.launch), E.IntImm(32, i32)), E.IntImm(0, i32))
    if not waits:
        release = [S.IfThenElse(
            E.binop("&&", E.Call(SLOT_RELEASE_LAST, [slot_of(released, prev), E.IntImm(nwarps, i32)], "bool"),
                    E.binop("<", refill, hi)),
            R.issue(refill, prev))]
    else:
        arrive = [S.Evaluate(M.call(M.ARRIVE, slot_of(empty, prev)))]
        if mc is not None:   # the peer block's warps read this block's halves too
            peer = E.binop("^", rank, E.IntImm(1, i32))
            arrive.append(S.Evaluate(M.call(M.ARRIVE_CLUSTER, slot_of(empty, prev), peer)))
        # a round's releases complete the phase of the previous slot's last fill
        parity = E.Select(E.binop("==", st, E.IntImm(0, i32)), E.binop("^", ph, E.IntImm(1, "uint32")), ph)
        release = [S.IfThenElse(lane0, S.seq(arrive)),
                   S.IfThenElse(E.binop("&&", R.first, E.binop("<", refill, hi)), S.seq([
                       S.Evaluate(M.call(M.WAIT_PARITY, slot_of(empty, prev), parity)), R.issue(refill, prev)]))]
    last = E.Select(E.binop("==", st, E.IntImm(0, i32)), E.IntImm(ns - 1, i32), E.binop("-", st, E.IntImm(1, i32)))
    body.append(S.IfThenElse(E.binop(">", var, lo), S.LetStmt(prev, last, S.seq(release))))
    if deferred is not None:   # the wait for the group goes before the accumulator is touched
        after, _ = place_waits(k, deferred.after, g.C.buffer, lambda: retire(k, g))
        body.append(S.StageSlot(info.bufs, st, ns, S.seq(after)))
    tail = retire(k, g)
    if mc is not None:
        tail.append(S.Evaluate(M.call(M.CLUSTER_SYNC)))
    else:
        tail.append(R.barrier(f"every copy of the ring into {R.names} was consumed; its mbarriers may be "
                              f"initialized again", False))
    tail.append(R.invalidate())
    loop_part = R.loop_over(body + R.advance()) + tail
    head = R.init(nwarps * (2 if mc is not None else 1) if waits else None)
    if mc is None:
        return head + [R.prologue()] + loop_part
    # the peer's barriers are initialized before any copy or arrival reaches them
    return head + [S.LetStmt(rank, E.Call(BLOCK_RANK_IN_CLUSTER, [], "int32"), S.seq(
        [S.Evaluate(M.call(M.CLUSTER_SYNC)), R.prologue()] + loop_part))]


__all__ = ["schedule_in_flight", "retire"]
