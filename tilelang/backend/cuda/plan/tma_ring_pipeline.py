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
its producer warpgroup and consumers from plan/warp_specialized_ring.py; both are made of
the same pieces (`RingParts`)."""
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
    warp-specialized loop (`is_warp_specialized`: its own schedule), and the attention overlap
    of emit/ (plan/overlap.py) does not take it."""
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


def _at(b, i):
    return E.BufferLoad(b, [i])


class RingParts:
    """The pieces every schedule on a TMA ring is made of (this pass's slot-by-slot one and
    plan/tma_ring_wgmma.py's), for ring `ring` of pipelined loop `loop` (`k`: the kernel)."""

    def __init__(self, k, loop, info, ring, rank=None):
        self.k, self.loop, self.info, self.ring, self.rank = k, loop, info, ring, rank
        self.var, self.i32 = loop.var, loop.var.dtype
        self.lo, self.hi = loop.min, simplify(loop.min + loop.extent)
        self.first = _thread_zero(k.launch)
        self.names = ", ".join(b.name for b in info.bufs)
        stage = Buffer("ring_stage", (1,), "int32", "local.var", init=E.IntImm(0, "int32"))
        phase = Buffer("ring_phase", (1,), "uint32", "local.var", init=E.IntImm(0, "uint32"))
        from tilelang.backend.cuda.plan.kernel import local_placement
        for b in (stage, phase):   # per-thread scalars, placed as the plan places a T.alloc_var
            k.plan.placements[id(b)] = local_placement(b)
        self.stage, self.phase = stage, phase
        self.st, self.ph = _at(stage, E.IntImm(0, self.i32)), _at(phase, E.IntImm(0, self.i32))

    def barrier(self, why, fenced=None):
        fenced = self.k.plan.fence_barriers if fenced is None else fenced
        return S.Barrier("block", reason=why, fence_async_proxy=fenced)

    def issue(self, kexpr, slot, guarded=True):
        """One thread: iteration `kexpr`'s loads into `slot`, announced on full[slot]
        (`guarded`: a masked iteration is an empty round; else the caller skipped it)."""
        ring, info, var, i32 = self.ring, self.info, self.var, self.i32
        full = _at(ring.full, slot)
        kt = E.Var("ring_k", i32)
        loads = [TmaRingLoad(ring, i, substitute(c, {var: kt}), slot, full, self.rank)
                 for i, c in enumerate(info.copies)]
        expect = S.Evaluate(M.call(M.ARRIVE_EXPECT_TX, full, ring.nbytes))
        if info.guard is None or not guarded:   # (the bytes announced first, as ptxas schedules it best)
            out = [expect, S.LetStmt(kt, kexpr, S.seq(loads))]
        else:   # a skipped iteration: an empty round (the waits and releases count alike)
            out = [S.LetStmt(kt, kexpr, S.IfThenElse(E.Not(substitute(info.guard, {var: kt})),
                                                      S.Evaluate(M.call(M.ARRIVE, full)),
                                                      S.seq([expect] + loads)))]
        ahead = self.k.options.tma_l2_prefetch
        if ahead:   # the tiles of iteration kexpr + ahead into L2
            kp = E.Var("ring_kp", i32)
            out.append(S.IfThenElse(E.binop("<", simplify(kexpr + ahead), self.hi), S.LetStmt(
                kp, simplify(kexpr + ahead),
                S.seq([TmaPrefetchL2(ring, i, substitute(c, {var: kp})) for i, c in enumerate(info.copies)]))))
        return S.seq(out)

    def init(self, empty_count=None):
        """Thread 0 prefetches the tensor maps and initializes the barriers (and counters)."""
        ring, i32, ns = self.ring, self.i32, self.ring.stages
        s = E.Var("ring_s", i32)
        per_slot = [S.Evaluate(M.call(M.INIT, _at(ring.full, s), 1))]
        if ring.empty is not None:
            per_slot.append(S.Evaluate(M.call(M.INIT, _at(ring.empty, s), empty_count)))
        else:
            per_slot.append(S.BufferStore(ring.released, E.IntImm(0, ring.released.dtype), [s]))
        return [TmaRingAlloc(ring), S.IfThenElse(self.first, S.seq([
            TmaPrefetchDescriptors(ring),
            S.For(s, E.IntImm(0, i32), E.IntImm(ns, i32), S.SERIAL, S.seq(per_slot)),
            S.Evaluate(M.call(M.FENCE_INIT))])),
            self.barrier(f"the TMA ring's mbarriers for {self.names} are initialized")]

    def prologue(self):
        """Thread 0 fills every slot: the iterations lo .. lo + stages - 1 that exist."""
        p = E.Var("ring_p", self.i32)
        return S.IfThenElse(self.first, S.For(p, E.IntImm(0, self.i32), E.IntImm(self.ring.stages, self.i32), S.SERIAL,
                                              S.IfThenElse(E.binop("<", simplify(self.lo + p), self.hi),
                                                           self.issue(simplify(self.lo + p), p))))

    def wait_full(self):
        return S.Evaluate(M.call(M.WAIT_PARITY, _at(self.ring.full, self.st), self.ph))

    def advance(self):
        """The next slot; past the last one, the first with the other phase."""
        i32, ns = self.i32, self.ring.stages
        return [S.BufferStore(self.stage, self.st + 1, [E.IntImm(0, i32)]),
                S.IfThenElse(E.binop("==", self.st, E.IntImm(ns, i32)), S.seq([
                    S.BufferStore(self.stage, E.IntImm(0, "int32"), [E.IntImm(0, i32)]),
                    S.BufferStore(self.phase, E.binop("^", self.ph, E.IntImm(1, "uint32")), [E.IntImm(0, i32)])]))]

    def loop_over(self, body):
        """The loop over the ring (in the pipelined loop's variable and bounds) with its
        slot and phase counters."""
        main = S.For(self.var, self.loop.min, self.loop.extent, S.SERIAL, S.seq(body))
        main.span = self.loop.span
        return [S.DeclBuffer(self.stage), S.DeclBuffer(self.phase), main]

    def invalidate(self):
        return S.IfThenElse(self.first, TmaRingInvalidate(self.ring))


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
        E.binop("&&", E.Call(SLOT_RELEASE_LAST, [_at(released, st), E.IntImm(nwarps, i32)], "bool"),
                E.binop("<", var + ns, hi)),
        R.issue(var + ns, st))
    main_body = [R.wait_full()]
    if ring_mode(k, info) == "barrier":
        main_body.append(R.barrier("the previous iteration's writes to shared and global memory"))
    loop_part = R.loop_over(main_body + [body, release] + R.advance())
    if wg is not None:
        loop_part = [S.LetStmt(wg, E.binop("//", _linear_thread(k.launch), E.IntImm(128, i32)), S.seq(
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

    def takes(k, loop, info):
        return is_warp_specialized(k, loop, info) or runs_on_tma_ring(k, loop, info)

    def make(k, loop, info):
        if is_warp_specialized(k, loop, info):   # a producer warpgroup feeds the consumers
            return schedule_warp_specialized(k, loop, info)
        if info.guard is None and overlapped_wgmma(k, info):   # one wgmma group kept in flight
            return schedule_in_flight(k, loop, info)
        dw = plan_deferred_wait(k, info, ring_mode(k, info)) if info.guard is None else None
        if dw is not None:   # ... until the accumulator is needed (ops/wgmma_deferred_wait.py)
            return schedule_in_flight(k, loop, info, dw)
        return schedule(k, loop, info)
    return schedule_pipelined_loops(func, ctx, takes, make)


__all__ = ["pipeline_tma_ring", "runs_on_tma_ring", "schedule"]
