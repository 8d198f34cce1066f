"""The attention overlap on cp.async (plan/overlap.py decides it: `plan_overlap`; TILELANG_CUDA_
OVERLAP_RING=0, or copies without a TMA form) written into the IR by the pass
`pipeline_cp_async`, so that the lower trace shows it and emit/ only prints it. Two stages;
iteration k's group brings K_{k+1} (the first gemm's B, for the next Q K^T) and V_k (the
second gemm's B, for the P V issued one iteration later). For
`for k in T.Pipelined(lo, hi, num_stages=2)` whose body is `before; S = Q K^T; between;
after; O += P V`:

    T.sync_threads()  # inserted: ...
    if lo < hi: k = lo; with T.stage_slot(K_s, V_s, slot=0): the copies into K_s;
    T.ptx_commit_group()
    if lo < hi: k = lo; <iteration k, first>          the first iteration on its own (ptxas
    for k in T.serial(lo + 1, hi): <iteration k>      waits for every group at a join of paths)
    T.ptx_wait_group(0); T.sync_threads()
    if lo < hi: with T.stage_slot(slot(hi - 1)): O += P V (issued); T.warpgroup_wait(0); fence O

    iteration k: T.ptx_wait_group(0); T.sync_threads()   K_k, V_{k-1} landed; every warp is past
                 if k + 1 < hi: the copies into K_s for k + 1   the reads of the slots refilled now
                 the copies into V_s for k; T.ptx_commit_group()
                 with T.stage_slot(slot(k)): before; Q K^T (issued)
                 [with T.stage_slot(slot(k - 1)): P V_{k-1} (issued)]
                 T.warpgroup_wait(1) (first: 0); fence S
                 with T.stage_slot(slot(k)): between (the softmax)
                     [fence S; T.pin_before_wgmma_wait(row statistics); T.warpgroup_wait(0); fence O]
                     after

slot(j) = (j - lo) % 2. Tests: tests/backend/cuda/plan/test_attention_overlap_cp_async.py."""
from __future__ import annotations

from tilelang.arith.simplify import simplify
from tilelang.ir import expr as E
from tilelang.ir import mbarrier as M
from tilelang.ir import stmt as S
from tilelang.ir import tensor_core_calls as TC
from tilelang.ir.visitor import substitute
from tilelang.backend.cuda.target import arch_number


def overlap_on_cp_async(k, loop, info):
    """The OverlapPlan of `loop` (whose copies are planned as cp.async: the pass checks) when
    its attention overlap applies, else None."""
    from tilelang.backend.cuda.plan.overlap import plan_overlap
    from tilelang.backend.cuda.plan.pipeline import overlapped_wgmma
    if arch_number(k.target.arch) < 90 or info.guard is not None or overlapped_wgmma(k, info):
        return None
    return plan_overlap(k, info)


def schedule_overlap_cp_async(k, loop, info, p):
    """The statements that replace `loop` (module docstring); `p`: its OverlapPlan."""
    from tilelang.backend.cuda.plan.attention_overlap_ring import issue_only, fence, pin
    var = loop.var
    i32 = var.dtype
    lo, hi = loop.min, simplify(loop.min + loop.extent)
    fenced = k.plan.fence_barriers
    names = ", ".join(b.name for b in info.bufs)
    issue_only(k, p)

    def call(name, *args):
        return S.Evaluate(M.call(name, *args))

    def slot(j):
        return E.Call("truncmod", [simplify(j - lo), E.IntImm(2, i32)], i32)

    def in_slot(j, stmts, at=None):
        """`stmts` with the ring buffers in iteration j's slot (or in slot `at`)."""
        return S.StageSlot(info.bufs, slot(j) if at is None else at, 2, S.seq(stmts))

    def copies(copies, kk):
        return [substitute(c, {var: kk}) for c in copies]

    def landed():
        return [call(M.CP_ASYNC_WAIT, 0),
                S.Barrier("block", reason=f"the copies into {names} landed; every warp is past the reads "
                                          f"of the slots refilled next", fence_async_proxy=fenced)]

    def g2_issue(j):
        return in_slot(j, [p.g2])

    def iteration(kv, first):
        kn = E.Var(var.name + "_next", i32)
        out = landed() + [
            S.IfThenElse(E.binop("<", kv + 1, hi), S.LetStmt(kn, kv + 1, in_slot(kn, copies(p.early, kn)))),
            in_slot(kv, copies(p.late, kv)), call(M.CP_ASYNC_COMMIT),
            in_slot(kv, list(p.before) + [p.g1])]
        if not first:
            out.append(g2_issue(simplify(kv - 1)))
        # groups retire in order: Q K_k^T is done, P V_{k-1} may run on
        out += [call(TC.WARPGROUP_WAIT, 0 if first else 1), fence(k, p.g1)]
        mid = list(p.between)
        if not first:   # the softmax is pinned ahead of the wait for P V_{k-1}: P and O are free again
            mid += [fence(k, p.g1)] + [pin(k, b) for b in p.pinned or []] + [
                call(TC.WARPGROUP_WAIT, 0), fence(k, p.g2)]
        out.append(in_slot(kv, mid + list(p.after)))
        return S.seq(out)

    k0 = E.Var(var.name, i32)
    head = [S.Barrier("block", reason=f"{names} may still be read before the pipeline's prologue",
                      fence_async_proxy=fenced),
            S.IfThenElse(E.binop("<", lo, hi), S.LetStmt(k0, lo, in_slot(k0, copies(p.early, k0), at=E.IntImm(0, i32)))),
            call(M.CP_ASYNC_COMMIT)]
    first = S.IfThenElse(E.binop("<", lo, hi), S.LetStmt(var, lo, iteration(var, True)))
    main = S.For(var, simplify(lo + 1), simplify(loop.extent - 1), S.SERIAL, iteration(var, False))
    last = S.IfThenElse(E.binop("<", lo, hi), S.seq([g2_issue(simplify(hi - 1)), call(TC.WARPGROUP_WAIT, 0),
                                                      fence(k, p.g2)]))
    for s in (first, main, last):
        s.span = loop.span
    return head + [first, main] + landed() + [last]


__all__ = ["overlap_on_cp_async", "schedule_overlap_cp_async"]
