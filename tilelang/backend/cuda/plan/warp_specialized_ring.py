"""The two roles of a warp-specialized TMA-ring loop (plan/warp_specialize.py decides it:
`KernelPlan.warp_specialized`), written into the IR by the pass `pipeline_tma_ring` from
the ring's pieces (`RingParts`, plan/tma_ring_parts.py). For
`for k in T.Pipelined(lo, hi, num_stages=s)` on T user threads, at the kernel's start,
before any code of the user's:

    T.tma_ring_alloc(ring_full, ring_empty, stages=s)
    if tx == 0: prefetch the tensor maps; init ring_full[i] (1 arrival: the producer's, with
        the bytes), ring_empty[i] (one arrival per consumer warp)
    T.sync_threads()  # inserted: the last barrier of all threads ...
    with T.producer_warpgroup(threads=T):               threads T .. T + 127, then they leave
        T.set_max_nreg(24, 0)                          (two consumer warpgroups or more)
        if tx == T:
            for k in T.serial(lo, hi):
                [if not cond(k): continue]             a masked iteration: neither role touches the ring
                T.mbarrier_wait_parity(ring_empty[ring_stage], ring_phase ^ 1)   (a fresh barrier's
                                                       previous phase counts as complete)
                the bytes on ring_full[ring_stage], the loads of iteration k into the slot
                advance ring_stage / ring_phase
    T.set_max_nreg(240, 1)

and in place of the loop, on the consumers (every block barrier of theirs is their named
barrier: emit/ prints the barriers after a T.producer_warpgroup so):

    T.sync_threads()  # inserted: what the consumers wrote before the loop ...
    for k in T.serial(lo, hi):
        [if not cond(k): continue]
        [if ring_prev >= 0 and not T.all_sync(T.mbarrier_test_parity(ring_full[ring_stage], ring_phase)):
             T.warpgroup_wait(0); lane 0: arrive on ring_empty[ring_prev]; ring_prev = -1]
                                                       the slot is not filled yet: release the previous
                                                       one now, so the producer refills it meanwhile
        T.mbarrier_wait_parity(ring_full[ring_stage], ring_phase)
        one gemm (`in_flight`):  the gemm issued only, T.warpgroup_wait(1), lane 0 of each warp
                                 releases ring_prev, ring_prev = ring_stage
        else:                    the body in the slot, lane 0 of each warp releases the slot
        advance
    [T.warpgroup_wait(0); the accumulator's register fence]
    T.sync_threads()  # inserted: the slots are read ...

By default (TILELANG_CUDA_WS_MULTICAST=0: off; a loop keeping its wgmma in flight, no masked iterations) the blocks
run in pairs along a grid axis (ops/tma.py `plan_multicast`), each producer loads half of the tiles
both blocks read for both, "empty" counts both blocks' consumer warps (each release arrives here
and at the peer: `tl.mbarrier_release_slot_cluster`, no cluster-scope fence: the readers are done), `T.cluster_sync()` after the barriers' init, the
consumers release the last slot after the loop and the producer waits for every slot's last round
before it leaves (tests/backend/cuda/plan/test_warp_specialized_multicast.py).
TILELANG_CUDA_WS_EARLY_RELEASE=0 drops the early release. Tests:
tests/backend/cuda/plan/test_warp_specialized_ring.py, tests/backend/cuda/plan/test_warp_specialize.py."""
from __future__ import annotations

import dataclasses

from tilelang.ir import expr as E
from tilelang.ir import mbarrier as M
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir import tensor_core_calls as TC
from tilelang.ir.buffer import Buffer
from tilelang.ir.tma_ring import TmaRing, TmaRingAlloc, TmaPrefetchDescriptors
from tilelang.ir.visitor import Mutator, substitute
from tilelang.ir.cluster import BLOCK_RANK_IN_CLUSTER
from tilelang.backend.cuda.plan.tma_ring_parts import RingParts, slot_of, linear_thread


def schedule_warp_specialized(k, loop, info):
    """The statements that replace `loop`; those that start the kernel go to `k.kernel_head`
    (plan/pipelined_loops.py puts them there)."""
    from tilelang.backend.cuda.ops.tma_pipeline import tma_copies, ring_mode
    from tilelang.backend.cuda.plan.kernel import local_placement
    from tilelang.backend.cuda.plan.tma_ring_wgmma import retire
    from tilelang.backend.cuda.ops.tma import plan_multicast
    ws = k.plan.warp_specialized
    ns, T, var, i32 = ws.stages, ws.consumer_threads, loop.var, loop.var.dtype
    tmas = tma_copies(k, info)
    full, _ = TmaRing.barriers(ns)
    empty = TmaRing.empty_barriers(ns)
    mc = None
    if ws.in_flight and info.guard is None and not getattr(k, "cluster_dims", None):
        mc = plan_multicast(k.launch, loop, tmas, k.options.ws_multicast)
    halves = {i: mc.halves[id(t)] for i, t in enumerate(tmas) if id(t) in mc.halves} if mc else {}
    ring = TmaRing(var, info.copies, info.bufs, full, None, ns, sum(t.nbytes for t in tmas), empty, halves)
    # multicast: each role reads its block's rank in the pair (ranks bound where the role starts)
    p_rank, c_rank = (E.Var("ring_rank", i32), E.Var("ring_rank", i32)) if mc else (None, None)
    # the scalars the producer computes itself (a paged cache's loop count): let-bound names
    # in its code in place of the consumers' T.alloc_var buffers
    lets = [(E.Var(b.name, b.dtype), v) for b, v in ws.producer_scalars]
    own = _ScalarLoads({id(b): x for (b, _), (x, _) in zip(ws.producer_scalars, lets)})
    lets = [(x, own.visit(v)) for x, v in lets]
    p_info = dataclasses.replace(info, copies=[own.visit(c) for c in info.copies],
                                 guard=own.visit(info.guard) if info.guard is not None else None)
    producer, consumer = RingParts(k, loop, p_info, ring, p_rank), RingParts(k, loop, info, ring, c_rank)
    producer.lo, producer.hi = own.visit(producer.lo), own.visit(producer.hi)
    if mc is not None:   # the blocks run in pairs along the axis (the launch's clusters)
        k.cluster_dims = tuple(2 if ax == mc.axis else 1 for ax in range(3))
    tx = k.launch.thread_vars[0]

    s = E.Var("ring_s", i32)
    head = [TmaRingAlloc(ring), S.IfThenElse(producer.first, S.seq([
        TmaPrefetchDescriptors(ring),
        S.For(s, E.IntImm(0, i32), E.IntImm(ns, i32), S.SERIAL, S.seq([
            S.Evaluate(M.call(M.INIT, slot_of(full, s), 1)), S.Evaluate(M.call(M.INIT, slot_of(empty, s), T // 32 * (2 if mc else 1)))])),
        S.Evaluate(M.call(M.FENCE_INIT))])),
        producer.barrier("the TMA ring's mbarriers are initialized; the last barrier of all threads: the producer "
                         "leaves after its loop", False)]
    if mc is not None:   # the peer's barriers are initialized before any copy or arrival reaches them
        head.append(S.Evaluate(M.call(M.CLUSTER_SYNC)))

    # the producer: its own loop variable (the loop's is the consumers')
    kp = E.Var(var.name, i32)
    p_body = []
    if info.guard is not None:   # a masked iteration: neither role touches the ring
        p_body.append(S.IfThenElse(E.Not(substitute(p_info.guard, {var: kp})), S.Continue()))
    p_body += [S.Evaluate(M.call(M.WAIT_PARITY, slot_of(empty, producer.st),
                                 E.binop("^", producer.ph, E.IntImm(1, "uint32")))),
               producer.issue(kp, producer.st, guarded=False)]
    p_loop = S.For(kp, own.visit(loop.min), own.visit(loop.extent), S.SERIAL, S.seq(p_body + producer.advance()))
    roles = [S.DeclBuffer(producer.stage), S.DeclBuffer(producer.phase), p_loop]
    if mc is not None:
        # the producer's tail: every slot's last round released, by this block's consumers and the
        # peer's, so no arrival of the peer reaches this block's barriers after it has exited
        kt = E.Var("ring_t", i32)
        roles.append(S.For(kt, E.IntImm(0, i32), E.IntImm(ns, i32), S.SERIAL, S.seq(
            [S.Evaluate(M.call(M.WAIT_PARITY, slot_of(empty, producer.st),
                               E.binop("^", producer.ph, E.IntImm(1, "uint32"))))] + producer.advance())))
        roles = [S.LetStmt(p_rank, E.Call(BLOCK_RANK_IN_CLUSTER, [], "int32"), S.seq(roles))]
    for x, v in reversed(lets):
        roles = [S.LetStmt(x, v, S.seq(roles))]
    p_stmts = [S.IfThenElse(E.binop("==", tx, E.IntImm(T, tx.dtype)), S.seq(roles))]
    if ws.producer_regs:
        p_stmts.insert(0, S.Evaluate(M.call(M.SET_MAX_NREG, ws.producer_regs, 0)))
    head.append(S.ProducerWarpgroup(T, S.seq(p_stmts)))
    if ws.consumer_regs:
        head.append(S.Evaluate(M.call(M.SET_MAX_NREG, ws.consumer_regs, 1)))

    # the consumers
    C = consumer
    lane0 = E.binop("==", E.binop("%", linear_thread(k.launch), E.IntImm(32, i32)), E.IntImm(0, i32))

    def release(slot):
        if mc is None:
            return S.Evaluate(M.call(M.ARRIVE, slot_of(empty, slot)))
        # the peer block's producer refills its halves of this block's slot too: both hear of it
        peer = E.binop("^", c_rank, E.IntImm(1, i32))
        return S.seq([S.Evaluate(M.call(M.ARRIVE, slot_of(empty, slot))),
                      S.Evaluate(M.call(M.RELEASE_SLOT_CLUSTER, slot_of(empty, slot), peer))])
    body = []
    if info.guard is not None:
        body.append(S.IfThenElse(E.Not(info.guard), S.Continue()))   # the producer skipped it too
    decls = [S.DeclBuffer(C.stage), S.DeclBuffer(C.phase)]
    if ws.in_flight:   # the slot of the previous iteration that ran (-1: none yet)
        prev = Buffer("ring_prev", (1,), "int32", "local.var", init=E.IntImm(-1, "int32"))
        k.plan.placements[id(prev)] = local_placement(prev)
        decls.append(S.DeclBuffer(prev))
        pv = slot_of(prev, E.IntImm(0, i32))
        has_prev = E.binop(">=", pv, E.IntImm(0, i32))
        if k.options.ws_early_release:
            # the slot is not filled yet: release the previous one now (its group done), not once
            # this one has arrived, so the producer refills it while the warp waits
            filled = E.Call("tl.all_sync", [E.IntImm(0xffffffff, "uint32"),
                                            E.Call(M.TEST_PARITY, [slot_of(full, C.st), C.ph], "bool")], "bool")
            body.append(S.IfThenElse(E.binop("&&", has_prev, E.Not(filled)), S.seq([
                S.Evaluate(M.call(TC.WARPGROUP_WAIT, 0)), S.IfThenElse(lane0, release(pv)),
                S.BufferStore(prev, E.IntImm(-1, "int32"), [E.IntImm(0, i32)])])))
    body.append(C.wait_full())
    if ring_mode(k, info) == "barrier" and not (k.options.covered_barriers and info.carried_ordered):
        # the previous iteration's shared writes (a dequantized tile), unless the body's own
        # barriers order them (plan/sync.py: MLA decode's P tile, behind the row reductions')
        body.append(C.top_barrier("the previous iteration's writes to shared memory"))
    tail = []
    if ws.in_flight:
        g = info.rest[-1]
        g.annotations = {**g.annotations, TO.ISSUE_ONLY: True}
        body += [S.StageSlot(info.bufs, C.st, ns, g), S.Evaluate(M.call(TC.WARPGROUP_WAIT, 1)),
                 S.IfThenElse(E.binop("&&", has_prev, lane0), release(pv)),
                 S.BufferStore(prev, C.st, [E.IntImm(0, i32)])]
        tail = retire(k, g)
        if mc is not None:   # the last slot released too: the producers' tails wait for every round
            tail.append(S.IfThenElse(E.binop("&&", has_prev, lane0), release(pv)))
    else:
        body += [S.StageSlot(info.bufs, C.st, ns, S.seq(list(info.rest))), S.IfThenElse(lane0, release(C.st))]
    main = S.For(var, loop.min, loop.extent, S.SERIAL, S.seq(body + C.advance()))
    main.span = loop.span
    k.kernel_head = head
    out = [C.barrier("what the consumers wrote to shared memory before the loop")] + decls + [main] + tail
    if mc is not None:
        out = [S.LetStmt(c_rank, E.Call(BLOCK_RANK_IN_CLUSTER, [], "int32"), S.seq(out))]
    return out + [C.barrier("the slots are read: the code after the loop may reuse them")]


class _ScalarLoads(Mutator):
    """Loads of the given T.alloc_var buffers replaced by expressions (id(buffer) -> expr)."""

    def __init__(self, repl):
        self.repl = repl

    def visit_BufferLoad(self, n):
        x = self.repl.get(id(n.buffer))
        return x if x is not None else self.generic_visit(n)


__all__ = ["schedule_warp_specialized"]
