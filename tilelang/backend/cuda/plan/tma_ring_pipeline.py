"""The TMA ring of a `T.Pipelined` loop as an IR-to-IR pass (`pipeline_tma_ring`, last).

plan/pipeline.py decides which copies of the body are issued ahead (`PipelineInfo`);
plan/copy_forms.py decides that they run as bulk tensor copies on the ring (`TMA ring`).
For a loop whose body runs on the ring slot by slot (attention, MLA decode, a guarded
block-sparse GEMM: ops/tma_pipeline.py `ring_mode`), this pass writes the schedule into
the IR, so that the lower trace shows it and emit/ only prints it. For
`for k in T.Pipelined(lo, hi, num_stages=s)`:

    T.tma_ring_alloc(ring_full, ring_released, stages=s)   s mbarriers (the copies' bytes), s release counters
    if <thread 0>:
        T.tma_prefetch_descriptors(...)
        for ring_s in T.serial(s): mbarrier_init(ring_full[ring_s], 1); ring_released[ring_s] = 0
        T.mbarrier_fence_init()
    T.sync_threads()  # inserted: ...
    if <thread 0>:                                     the prologue: iterations lo .. lo + s - 1
        for ring_p in T.serial(s):
            if lo + ring_p < hi:
                ring_k = lo + ring_p
                T.mbarrier_arrive_expect_tx(ring_full[ring_p], bytes)
                T.tma_load(A[...], A_s, slot=ring_p, barrier=ring_full[ring_p])  ...
    ring_stage = 0; ring_phase = 0
    for k in T.serial(lo, hi):
        T.mbarrier_wait_parity(ring_full[ring_stage], ring_phase)
        [T.sync_threads()  # inserted: ...]            ring_mode "barrier": the body writes memory
        with T.stage_slot(A_s, ..., slot=ring_stage, stages=s):
            [if cond(k):] the body
        if T.tma_slot_release_last(ring_released[ring_stage], warps) && k + s < hi:
            the loads of iteration k + s into slot ring_stage    (the warp completing the round refills)
        ring_stage += 1; wrap: ring_stage = 0, ring_phase ^= 1
    T.sync_threads()  # inserted: ...
    if <thread 0>: T.tma_ring_invalidate(ring_full)

A body under `if cond:` (info.guard) loads iteration j only where cond(j); a skipped round
still completes its slot's phase (`T.mbarrier_arrive` without bytes). Opt-in ping-pong
(TILELANG_CUDA_PINGPONG=1, ops/tma_pipeline.py `pingpong`): the two warpgroups take turns
at the first gemm through two named barriers. TILELANG_CUDA_TMA_L2_PREFETCH=n: each
load also prefetches iteration +n into L2.

The GEMM loops that keep a wgmma group in flight (one gemm per iteration, optionally with
TMA multicast; or the fp8 2xAcc loop whose wait is deferred) get the schedule of
plan/tma_ring_wgmma.py from this pass, and the warp-specialized loop (plan/warp_specialize.py)
its producer warpgroup and consumers from plan/warp_specialized_ring.py, and the attention
overlap (plan/overlap.py) K and V on two rings from plan/attention_overlap_ring.py; all are made of
the same pieces (`RingParts`, plan/tma_ring_parts.py)."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import mbarrier as M
from tilelang.ir import stmt as S
from tilelang.ir.tma_ring import TmaRing, SLOT_RELEASE_LAST
from tilelang.arith.simplify import simplify
from tilelang.transform.pass_manager import function_pass
from tilelang.backend.cuda.plan.copy_form import copy_form
from tilelang.backend.cuda.plan.tma_ring_parts import RingParts, slot_of, linear_thread
from tilelang.backend.cuda.target import arch_number


def runs_on_tma_ring(k, loop, info) -> bool:
    """Whether the pipelined `loop` gets this pass's schedule (`k`: plan/copy_forms.py's
    view of the kernel): its copies were planned for the TMA ring, it is not the
    warp-specialized loop (`is_warp_specialized`: its own schedule), and it is not the attention
    overlap (plan/overlap.py; its schedule: plan/attention_overlap_ring.py)."""
    from tilelang.backend.cuda.ops.tma_pipeline import tma_copies
    from tilelang.backend.cuda.plan.pipeline import overlapped_wgmma
    from tilelang.backend.cuda.plan.overlap import plan_overlap
    ws = k.plan.warp_specialized
    if ws is not None and ws.loop == id(loop):
        return False
    if not info.copies or any(getattr(copy_form(c), "kind", None) != "tma_ring" for c in info.copies):
        return False
    if tma_copies(k, info) is None:
        return False   # emit/ reports the mismatch
    if info.guard is not None or overlapped_wgmma(k, info):
        return True
    return not (arch_number(k.target.arch) >= 90 and plan_overlap(k, info) is not None)


def is_warp_specialized(k, loop, info) -> bool:
    """Whether `loop` is the warp-specialized loop of the kernel plan (plan/warp_specialize.py)."""
    from tilelang.backend.cuda.ops.tma_pipeline import tma_copies
    ws = k.plan.warp_specialized
    if ws is None or ws.loop != id(loop):
        return False
    if tma_copies(k, info) is None:
        raise AssertionError("CUDA codegen: copies planned for the TMA ring do not match it")
    return True


def schedule(k, loop, info):
    """The statements that replace `loop` (module docstring)."""
    from tilelang.backend.cuda.ops.tma_pipeline import tma_copies, ring_mode, pingpong
    ns, var = info.stages, loop.var
    hi = simplify(loop.min + loop.extent)
    i32 = var.dtype
    nwarps = k.plan.nthreads // 32
    tmas = tma_copies(k, info)
    full, released = TmaRing.barriers(ns)
    ring = TmaRing(var, info.copies, info.bufs, full, released, ns, sum(t.nbytes for t in tmas))
    R = RingParts(k, loop, info, ring)
    st = R.st

    rest = list(info.rest)
    pp = pingpong(k, info) if info.guard is None else None
    wg = None
    if pp is not None:   # the two warpgroups take turns at the first gemm (named barriers bar, bar + 1)
        g, bar = pp
        wg = E.Var("ring_wg", i32)
        at_g = rest.index(g)
        rest[at_g:at_g + 1] = [
            S.Evaluate(M.call(M.NAMED_SYNC, E.binop("+", E.IntImm(bar, i32), wg), 256)),   # this warpgroup's turn
            g,   # then the other's turn; warpgroup 1 skips its last one (warpgroup 0 got an extra at the start)
            S.IfThenElse(E.binop("||", E.binop("==", wg, E.IntImm(0, i32)), E.binop("<", var + 1, hi)),
                         S.Evaluate(M.call(M.NAMED_ARRIVE, E.binop("-", E.IntImm(bar + 1, i32), wg), 256)))]
    body = S.StageSlot(info.bufs, st, ns, S.seq(rest))
    if info.guard is not None:
        body = S.IfThenElse(info.guard, body)
    release = S.IfThenElse(
        E.binop("&&", E.Call(SLOT_RELEASE_LAST, [slot_of(released, st), E.IntImm(nwarps, i32)], "bool"),
                E.binop("<", var + ns, hi)),
        R.issue(var + ns, st))
    main_body = [R.wait_full()]
    if ring_mode(k, info) == "barrier":
        main_body.append(R.top_barrier("the previous iteration's writes to shared and global memory"))
    loop_part = R.loop_over(main_body + [body, release] + R.advance())
    if wg is not None:
        loop_part = [S.LetStmt(wg, E.binop("//", linear_thread(k.launch), E.IntImm(128, i32)), S.seq(
            [S.IfThenElse(E.binop("==", wg, E.IntImm(1, i32)),
                          S.Evaluate(M.call(M.NAMED_ARRIVE, bar, 256)))] + loop_part))]
    return R.init() + [R.prologue()] + loop_part + [
        R.barrier(f"every copy of the ring into {R.names} was consumed; its mbarriers may be initialized again",
                  False),
        R.invalidate()]


@function_pass("pipeline_tma_ring")
def pipeline_tma_ring(func, ctx=None):
    from tilelang.backend.cuda.ops.tma_pipeline import ring_mode
    from tilelang.backend.cuda.ops.wgmma_deferred_wait import plan_deferred_wait
    from tilelang.backend.cuda.plan.pipeline import overlapped_wgmma
    from tilelang.backend.cuda.plan.pipelined_loops import schedule_pipelined_loops
    from tilelang.backend.cuda.plan.tma_ring_wgmma import schedule_in_flight
    from tilelang.backend.cuda.plan.warp_specialized_ring import schedule_warp_specialized

    from tilelang.backend.cuda.plan.attention_overlap_ring import overlap_on_rings, schedule_overlap_rings

    def takes(k, loop, info):
        return is_warp_specialized(k, loop, info) or runs_on_tma_ring(k, loop, info) or \
            overlap_on_rings(k, loop, info) is not None

    def make(k, loop, info):
        if is_warp_specialized(k, loop, info):   # a producer warpgroup feeds the consumers
            return schedule_warp_specialized(k, loop, info)
        ov = overlap_on_rings(k, loop, info)
        if ov is not None:   # the attention overlap: K and V on two rings (plan/attention_overlap_ring.py)
            return schedule_overlap_rings(k, loop, info, ov)
        if info.guard is None and overlapped_wgmma(k, info):   # one wgmma group kept in flight
            return schedule_in_flight(k, loop, info)
        dw = plan_deferred_wait(k, info, ring_mode(k, info)) if info.guard is None else None
        if dw is not None:   # ... until the accumulator is needed (ops/wgmma_deferred_wait.py)
            return schedule_in_flight(k, loop, info, dw)
        return schedule(k, loop, info)
    return schedule_pipelined_loops(func, ctx, takes, make)


__all__ = ["pipeline_tma_ring", "runs_on_tma_ring", "schedule"]
