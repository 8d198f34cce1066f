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

The GEMM loops that keep a wgmma group in flight (ops/tma_pipeline.py
`emit_pipelined_tma`) and the warp-specialized loop (`emit_ws_producer`/`emit_ws_consumer`)
are still scheduled while printing."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import mbarrier as M
from tilelang.ir import stmt as S
from tilelang.ir.buffer import Buffer
from tilelang.ir.visitor import substitute
from tilelang.ir.tma_ring import (TmaRing, TmaRingAlloc, TmaPrefetchDescriptors, TmaRingLoad, TmaPrefetchL2,
                                  TmaRingInvalidate, SLOT_RELEASE_LAST)
from tilelang.arith.simplify import simplify
from tilelang.transform.pass_manager import function_pass
from tilelang.backend.cuda.plan.copy_form import copy_form
from tilelang.backend.cuda.target import arch_number


def runs_on_tma_ring(k, loop, info) -> bool:
    """Whether the pipelined `loop` gets this pass's schedule (`k`: plan/copy_forms.py's
    view of the kernel): its copies were planned for the TMA ring, it is not the
    warp-specialized loop, and neither wgmma schedule of emit/ takes it."""
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
    if info.guard is not None:
        return True
    if overlapped_wgmma(k, info):
        return False
    return not (arch_number(k.target.arch) >= 90 and plan_overlap(k, info) is not None)


def _thread_zero(launch):
    """`the block's first thread` over the launch's thread variables."""
    conds = [E.binop("==", v, E.IntImm(0, v.dtype)) for v in launch.thread_vars]
    out = conds[0]
    for c in conds[1:]:
        out = E.binop("&&", out, c)
    return out


def _linear_thread(launch):
    out, n = launch.thread_vars[0], E.const_int_value(launch.threads[0])
    for v, m in zip(launch.thread_vars[1:], launch.threads[1:]):
        out = E.binop("+", out, E.binop("*", v, E.IntImm(n, v.dtype)))
        n *= E.const_int_value(m)
    return out


def schedule(k, loop, info):
    """The statements that replace `loop` (module docstring)."""
    from tilelang.backend.cuda.ops.tma_pipeline import tma_copies, ring_mode, pingpong
    ns, var = info.stages, loop.var
    lo, hi = loop.min, simplify(loop.min + loop.extent)
    i32 = var.dtype
    nwarps = k.plan.nthreads // 32
    tmas = tma_copies(k, info)
    full, released = TmaRing.barriers(ns)
    ring = TmaRing(var, info.copies, info.bufs, full, released, ns, sum(t.nbytes for t in tmas))
    ahead = k.options.tma_l2_prefetch
    fence = k.plan.fence_barriers
    first = _thread_zero(k.launch)

    def at(b, i):
        return E.BufferLoad(b, [i])

    def barrier(why, fenced=fence):
        return S.Barrier("block", reason=why, fence_async_proxy=fenced)

    def issue(kexpr, slot):
        """One thread: iteration `kexpr`'s loads into `slot`, announced on full[slot]."""
        kt = E.Var("ring_k", i32)
        loads = [TmaRingLoad(ring, i, substitute(c, {var: kt}), slot, at(full, slot))
                 for i, c in enumerate(info.copies)]
        expect = S.Evaluate(M.call(M.ARRIVE_EXPECT_TX, at(full, slot), ring.nbytes))
        if info.guard is None:   # (the bytes announced first, as ptxas schedules it best)
            out = [expect, S.LetStmt(kt, kexpr, S.seq(loads))]
        else:   # a skipped iteration: an empty round (the waits and releases count alike)
            out = [S.LetStmt(kt, kexpr, S.IfThenElse(E.Not(substitute(info.guard, {var: kt})),
                                                      S.Evaluate(M.call(M.ARRIVE, at(full, slot))),
                                                      S.seq([expect] + loads)))]
        if ahead:   # the tiles of iteration kexpr + ahead into L2
            kp = E.Var("ring_kp", i32)
            out.append(S.IfThenElse(E.binop("<", simplify(kexpr + ahead), hi), S.LetStmt(
                kp, simplify(kexpr + ahead),
                S.seq([TmaPrefetchL2(ring, i, substitute(c, {var: kp})) for i, c in enumerate(info.copies)]))))
        return S.seq(out)

    names = ", ".join(b.name for b in info.bufs)
    s = E.Var("ring_s", i32)
    init = S.IfThenElse(first, S.seq([
        TmaPrefetchDescriptors(ring),
        S.For(s, E.IntImm(0, i32), E.IntImm(ns, i32), S.SERIAL, S.seq([
            S.Evaluate(M.call(M.INIT, at(full, s), 1)),
            S.BufferStore(released, E.IntImm(0, released.dtype), [s])])),
        S.Evaluate(M.call(M.FENCE_INIT))]))
    p = E.Var("ring_p", i32)
    prologue = S.IfThenElse(first, S.For(p, E.IntImm(0, i32), E.IntImm(ns, i32), S.SERIAL, S.IfThenElse(
        E.binop("<", simplify(lo + p), hi), issue(simplify(lo + p), p))))

    stage = Buffer("ring_stage", (1,), "int32", "local.var", init=E.IntImm(0, "int32"))
    phase = Buffer("ring_phase", (1,), "uint32", "local.var", init=E.IntImm(0, "uint32"))
    st, ph = at(stage, E.IntImm(0, i32)), at(phase, E.IntImm(0, i32))
    from tilelang.backend.cuda.plan.kernel import local_placement
    for b in (stage, phase):   # per-thread scalars, placed as the plan places a T.alloc_var
        k.plan.placements[id(b)] = local_placement(b)

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
        E.binop("&&", E.Call(SLOT_RELEASE_LAST, [at(released, st), E.IntImm(nwarps, i32)], "bool"),
                E.binop("<", var + ns, hi)),
        issue(var + ns, st))
    advance = [S.BufferStore(stage, st + 1, [E.IntImm(0, i32)]),
               S.IfThenElse(E.binop("==", st, E.IntImm(ns, i32)), S.seq([
                   S.BufferStore(stage, E.IntImm(0, "int32"), [E.IntImm(0, i32)]),
                   S.BufferStore(phase, E.binop("^", ph, E.IntImm(1, "uint32")), [E.IntImm(0, i32)])]))]
    main_body = [S.Evaluate(M.call(M.WAIT_PARITY, at(full, st), ph))]
    if ring_mode(k, info) == "barrier":
        main_body.append(barrier("the previous iteration's writes to shared and global memory"))
    main = S.For(var, loop.min, loop.extent, S.SERIAL, S.seq(main_body + [body, release] + advance))
    main.span = loop.span
    loop_part = [S.DeclBuffer(stage), S.DeclBuffer(phase), main]
    if wg is not None:
        loop_part = [S.LetStmt(wg, E.binop("//", _linear_thread(k.launch), E.IntImm(128, i32)), S.seq(
            [S.IfThenElse(E.binop("==", wg, E.IntImm(1, i32)),
                          S.Evaluate(M.call(M.NAMED_ARRIVE, bar, 256)))] + loop_part))]
    return [TmaRingAlloc(ring), init,
            barrier(f"the TMA ring's mbarriers for {names} are initialized"), prologue] + loop_part + [
        barrier(f"every copy of the ring into {names} was consumed; its mbarriers may be initialized again",
                False),
        S.IfThenElse(first, TmaRingInvalidate(ring))]


@function_pass("pipeline_tma_ring")
def pipeline_tma_ring(func, ctx=None):
    from tilelang.backend.cuda.ops.tma_pipeline import ring_mode
    from tilelang.backend.cuda.ops.wgmma_deferred_wait import DEFERRED_WAIT, plan_deferred_wait
    from tilelang.backend.cuda.plan.pipelined_loops import schedule_pipelined_loops

    def takes(k, loop, info):
        if not runs_on_tma_ring(k, loop, info):
            return False
        dw = plan_deferred_wait(k, info, ring_mode(k, info))
        if dw is not None:   # the loop's wgmma stays in flight: emit/ prints this schedule
            loop.annotations = {**loop.annotations, DEFERRED_WAIT: dw}   # (ops/wgmma_deferred_wait.py)
            return False
        return True
    return schedule_pipelined_loops(func, ctx, takes, schedule)


__all__ = ["pipeline_tma_ring", "runs_on_tma_ring", "schedule"]
