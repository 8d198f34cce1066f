"""The attention overlap on two TMA rings (plan/overlap.py decides it: `plan_overlap`) written
into the IR by the pass `pipeline_tma_ring`, so that the lower trace shows it and emit/ only
prints it. K's copies (the first gemm's B, issued ahead) and V's (the second gemm's B) each
get a ring of `s` slots with "full" mbarriers and per-warp release counters; no block
barrier runs in the loop. For `for k in T.Pipelined(lo, hi, num_stages=s)` whose body is
`before; S = Q K^T; between; after; O += P V`:

    <ring K: T.tma_ring_alloc, thread 0 initializes, T.sync_threads()>   <the same for ring V>
    if <thread 0>: the prologue of ring K (iterations lo .. lo + s - 1)  <the same for ring V>
    [ring_wg = tid // 128; if ring_wg == 1: T.named_barrier_arrive(bar, 256)]      ping-pong
    if lo < hi:                                       the first iteration on its own (ptxas
        k = lo; <iteration k, first>                  waits for every group at a join of paths)
    for k in T.serial(lo + 1, hi): <iteration k>
    if lo < hi:                                       the last iteration's P V
        [deferred]; wait V_{hi-1}; O += P V (issued); T.warpgroup_wait(0); fence O
    T.sync_threads(); if <thread 0>: invalidate both rings

    iteration k: T.mbarrier_wait_parity(K_full[slot(k)], phase(k))
                 with T.stage_slot(K_s, slot(k)): before; [T.named_barrier_sync(bar + wg)]; Q K^T (issued)
                 [deferred: the previous iteration's O rescale; wait V_{k-1}; P V_{k-1} (issued)]
                 [if wg == 0 or k + 1 < hi: T.named_barrier_arrive(bar + 1 - wg)]
                 T.warpgroup_wait(1) (first: 0); fence S
                 if <the warp completes K's round of slot(k)> and k + s < hi: load K_{k+s}
                 between (the softmax)
                 [fence S; T.pin_before_wgmma_wait(row statistics); T.warpgroup_wait(0); fence O;
                  release V's slot(k - 1), the last warp refills it with V_{k-1+s}]
                 after, less the deferred statements

slot(j) = (j - lo) % s, phase(j) = ((j - lo) / s) & 1. The switches: TILELANG_CUDA_PINGPONG
(turns), TILELANG_CUDA_OVERLAP_DEFER (O's rescale between the next iteration's issues),
TILELANG_CUDA_WGMMA_WAIT_PIN (the pin). Tests: tests/backend/cuda/plan/test_attention_overlap_ring.py."""
from __future__ import annotations

from dataclasses import replace

from tilelang.arith.simplify import simplify
from tilelang.ir import expr as E
from tilelang.ir import mbarrier as M
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir import tensor_core_calls as TC
from tilelang.ir.tma_ring import TmaRing, SLOT_RELEASE_LAST
from tilelang.backend.cuda.plan.copy_form import copy_form
from tilelang.backend.cuda.plan.tma_ring_parts import RingParts, slot_of, linear_thread
from tilelang.backend.cuda.target import arch_number


def overlap_on_rings(k, loop, info):
    """The OverlapPlan of `loop` when its attention overlap runs on two TMA rings (every copy
    planned for the ring: plan/copy_forms.py chose it), else None."""
    from tilelang.backend.cuda.ops.tma_pipeline import tma_copies
    from tilelang.backend.cuda.plan.overlap import plan_overlap
    from tilelang.backend.cuda.plan.pipeline import overlapped_wgmma
    if arch_number(k.target.arch) < 90 or info.guard is not None or not info.copies:
        return None
    if any(getattr(copy_form(c), "kind", None) != "tma_ring" for c in info.copies):
        return None
    if tma_copies(k, info) is None or overlapped_wgmma(k, info):
        return None
    return plan_overlap(k, info)


def _call(name, *args):
    return S.Evaluate(M.call(name, *args))


def fence(k, gemm):
    """The register fence of `gemm`'s accumulator (its reads stay after the wait)."""
    C = gemm.C.buffer
    first = E.BufferLoad(C, [E.IntImm(0, "int32") for _ in C.shape])
    return _call(TC.WARPGROUP_FENCE_OPERAND, E.access_ptr(first, 3), k.plan.gemms[id(gemm)].regs)


def pin(k, b):
    """Row fragment `b` pinned ahead of the next wgmma wait (plan/overlap.py `_pinned`)."""
    first = E.BufferLoad(b, [E.IntImm(0, "int32") for _ in b.shape])
    return _call(TC.PIN_BEFORE_WGMMA_WAIT, E.access_ptr(first, 1), k.placement(b).acc.regs)


def issue_only(k, p):
    """Both gemms of OverlapPlan `p` only issue their groups: the schedule waits for them,
    so plan/wgmma_waits.py's waits (made for the body in order) are dropped."""
    plan = k.plan
    for g in (p.g1, p.g2):
        g.annotations = {**g.annotations, TO.ISSUE_ONLY: True}
        plan.chained_gemms.discard(id(g))
        for waits in (plan.wgmma_waits_before, plan.wgmma_waits_after):
            for key in [key for key, w in waits.items() if any(x is g for x in w.gemms)]:
                del waits[key]


def schedule_overlap_rings(k, loop, info, p):
    """The statements that replace `loop` (module docstring); `p`: its OverlapPlan."""
    from tilelang.backend.cuda.ops.tma_pipeline import tma_copies, pingpong
    ns, var = info.stages, loop.var
    i32 = var.dtype
    lo, hi = loop.min, simplify(loop.min + loop.extent)
    nwarps = k.plan.nthreads // 32
    tmas = tma_copies(k, info)

    def ring_of(copies):
        pick = [i for i, c in enumerate(info.copies) if any(c is x for x in copies)]
        sub = replace(info, copies=[info.copies[i] for i in pick], bufs=[info.bufs[i] for i in pick])
        full, released = TmaRing.barriers(ns)
        ring = TmaRing(var, sub.copies, sub.bufs, full, released, ns, sum(tmas[i].nbytes for i in pick))
        return RingParts(k, loop, sub, ring)
    rk, rv = ring_of(p.early), ring_of(p.late)
    issue_only(k, p)

    def slot(j):
        return E.Call("truncmod", [simplify(j - lo), E.IntImm(ns, i32)], i32)

    def phase(j):
        return E.binop("&", E.Call("truncdiv", [simplify(j - lo), E.IntImm(ns, i32)], i32), E.IntImm(1, i32))

    def wait_full(R, j):
        return _call(M.WAIT_PARITY, slot_of(R.ring.full, slot(j)), phase(j))

    def release_and_refill(R, j):
        """Each warp releases j's slot; the warp completing the round loads iteration j + s into it."""
        last = E.Call(SLOT_RELEASE_LAST, [slot_of(R.ring.released, slot(j)), E.IntImm(nwarps, i32)], "bool")
        return S.IfThenElse(E.binop("&&", last, E.binop("<", simplify(j + ns), hi)),
                            R.issue(simplify(j + ns), slot(j), guarded=False))

    def g2_issue(j):
        return [wait_full(rv, j), S.StageSlot(rv.info.bufs, slot(j), ns, p.g2)]

    pp = pingpong(k, info)
    wg = E.Var("ring_wg", i32) if pp is not None else None
    bar = pp[1] if pp is not None else None
    deferred = (p.deferred or []) if k.options.overlap_defer else []

    def iteration(kv, first):
        head = list(p.before)
        if wg is not None:   # this warpgroup's turn
            head.append(_call(M.NAMED_SYNC, E.binop("+", E.IntImm(bar, i32), wg), 256))
        out = [wait_full(rk, kv), S.StageSlot(rk.info.bufs, slot(kv), ns, S.seq(head + [p.g1]))]
        if not first:   # the previous iteration's deferred statements (O's rescale), beside Q K_k^T
            out += list(deferred) + g2_issue(simplify(kv - 1))
        if wg is not None:   # the other's turn (warpgroup 1 skips its last: warpgroup 0 got one at the start)
            out.append(S.IfThenElse(E.binop("||", E.binop("==", wg, E.IntImm(0, i32)), E.binop("<", kv + 1, hi)),
                                    _call(M.NAMED_ARRIVE, E.binop("-", E.IntImm(bar + 1, i32), wg), 256)))
        # groups retire in order: Q K_k^T is done, P V_{k-1} may run on
        out += [_call(TC.WARPGROUP_WAIT, 0 if first else 1), fence(k, p.g1),
                release_and_refill(rk, kv)]   # (nothing after Q K_k^T reads K's tiles: OverlapPlan.rings_ok)
        out += list(p.between)
        if not first:   # the softmax is pinned ahead of the wait for P V_{k-1}; then V_{k-1}'s slot is free
            out += [fence(k, p.g1)] + [pin(k, b) for b in p.pinned or []] + [
                _call(TC.WARPGROUP_WAIT, 0), fence(k, p.g2), release_and_refill(rv, simplify(kv - 1))]
        out += [s for s in p.after if all(s is not d for d in deferred)]
        return S.seq(out)

    first = S.IfThenElse(E.binop("<", lo, hi), S.LetStmt(var, lo, iteration(var, True)))
    main = S.For(var, simplify(lo + 1), simplify(loop.extent - 1), S.SERIAL, iteration(var, False))
    last = S.IfThenElse(E.binop("<", lo, hi), S.seq(list(deferred) + g2_issue(simplify(hi - 1)) + [
        _call(TC.WARPGROUP_WAIT, 0), fence(k, p.g2)]))
    for s in (first, main, last):
        s.span = loop.span
    loop_part = [first, main, last]
    if wg is not None:   # warpgroup 0 goes first
        loop_part = [S.LetStmt(wg, E.Call("truncdiv", [linear_thread(k.launch), E.IntImm(128, i32)], i32), S.seq(
            [S.IfThenElse(E.binop("==", wg, E.IntImm(1, i32)), _call(M.NAMED_ARRIVE, bar, 256))] + loop_part))]
    names = ", ".join(b.name for b in info.bufs)
    return rk.init() + rv.init() + [rk.prologue(), rv.prologue()] + loop_part + [
        rk.barrier(f"every copy of the rings into {names} was consumed; their mbarriers may be initialized again",
                   False),
        rk.invalidate(), rv.invalidate()]


__all__ = ["overlap_on_rings", "schedule_overlap_rings", "issue_only", "fence", "pin"]
