"""The cp.async software pipeline of a `T.Pipelined` loop as an IR-to-IR pass
(`pipeline_cp_async`, after plan_proxy_fences).

plan/pipeline.py decides which copies of the body are issued ahead (`PipelineInfo`: the
depth s, the copies, their ring buffers, the rest of the body with the barriers
plan/sync.py put into it, an `if cond:` guard); plan/copy_forms.py decides that they run
as cp.async (not on the TMA ring). This pass writes the schedule into the IR, so that the
lower trace shows it and emit/ only prints it. For a loop `for k in T.Pipelined(lo, hi)`:

    T.sync_threads()  # inserted: ...       the slots may still be read by earlier code
    for p in T.serial(s):                   the prologue: iterations lo .. lo + s - 1, one per slot
        if lo + p < hi:
            k_0 = lo + p                    (a LetStmt)
            with T.stage_slot(A_s, B_s, slot=p, stages=s):
                [if cond(k_0):] the copies of iteration k_0  (cp.async)
        T.ptx_commit_group()                one group per iteration, empty past the end
    for k in T.serial(lo, hi):
        T.ptx_wait_group(s - 1)             iteration k's group has landed (for this thread)
        T.sync_threads()  # inserted: ...   ... for every thread
        with T.stage_slot(..., slot=T.truncmod(k - lo, s), stages=s):
            [if cond(k):] the rest of the body
        if k + s < hi:
            T.sync_threads()  # inserted: ...   every thread is done with slot (k - lo) % s
            k_next = k + s
            with T.stage_slot(..., slot=T.truncmod(k_next - lo, s), stages=s):
                [if cond(k_next):] the copies of iteration k_next
        T.ptx_commit_group()                (also when empty: the waits count groups)
    T.ptx_wait_group(0)

A slot is refilled as soon as every thread is done with it, before the wait for the next
iteration's copies: with s slots the loop then runs at max(C, (C + L) / s) per iteration
(C: the body, L: the copies' latency) instead of max(C, L / (s - 1)) when the refill
waits for the next iteration's copies first (one block barrier per iteration instead of
two; TILELANG_CUDA_CP_ASYNC_REFILL=wait, CudaOptions.cp_async_refill_wait, and a loop whose
constant trip count the prologue covers, where no slot is ever refilled):

    for p in T.serial(s - 1): ...           the prologue: iterations lo .. lo + s - 2
    for k in T.serial(lo, hi):
        T.ptx_wait_group(s - 2)             iteration k's group has landed (for this thread)
        T.sync_threads()  # inserted: ...   ... for every thread; slot (k - 1) % s is free
        if k + s - 1 < hi: (the copies of iteration k + s - 1 into its slot)
        T.ptx_commit_group()
        with T.stage_slot(..., slot=T.truncmod(k - lo, s), stages=s): (the rest of the body)
    T.ptx_wait_group(0)

A `num_stages=1` loop (plan/pipeline.py: one version of each buffer, each group of copies
issued after its last reader) becomes

    T.sync_threads()  # inserted: ...       the buffers may still be read by earlier code
    if lo < hi:
        k_0 = lo
        the copies of group 0 of iteration k_0; T.ptx_commit_group()   ... and of each group
    for k in T.serial(lo, hi):
        the body, where a group must have landed (before its first reader):
            T.ptx_wait_group(n)             n: the groups issued after it (they may still fly)
            T.sync_threads()  # inserted: ...
        and after the group's last reader:
            T.sync_threads()  # inserted: ... every thread has read the buffer
            if k + 1 < hi:
                k_next = k + 1
                the copies of the group for iteration k_next
            T.ptx_commit_group()            (also when empty)
    T.ptx_wait_group(0)

A body of one wgmma gemm kept in flight across iterations (`overlapped_wgmma`) gets
`schedule_wgmma_in_flight`. The copies keep their `copy_form` (`cp.async xV`), which the
printer reads. Loops whose copies run on the TMA ring (pipeline_tma_ring) and the
attention overlap (plan/overlap.py) are left to their schedules (plan/attention_overlap_cp_async.py). The kernel plan
keeps the loop's PipelineInfo (the plan report still lists the pipeline); the loop itself
is replaced in place, as the other CUDA passes
change the plan's tree."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import mbarrier as M
from tilelang.ir import stmt as S
from tilelang.ir import tensor_core_calls as TC
from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import substitute, walk
from tilelang.arith.simplify import simplify
from tilelang.transform.pass_manager import function_pass
from tilelang.backend.cuda.plan.copy_form import copy_form
from tilelang.backend.cuda.plan.pipeline import STAGED
from tilelang.backend.cuda.plan.wgmma_waits import WgmmaWait
from tilelang.backend.cuda.plan.cp_async_preload import CP_ASYNC_PROLOGUE, CP_ASYNC_AFTER_USE
from tilelang.ir.buffer import storage_root
from tilelang.backend.cuda.target import arch_number

# the copy forms of a loop whose copies are issued as cp.async (a scalar one: a plain
# store in the same group position, e.g. coalesced_width=1)
_CP_ASYNC_FORMS = {"cp_async", "scalar", "vector"}


def runs_on_cp_async(k, info) -> bool:
    """Whether the pipelined loop of `info` gets this pass's schedule: its copies were
    planned as cp.async at block level (plan/copy_forms.py gives a loop reached inside
    one thread's code `per-thread` forms, a TMA one `TMA ring`), and it is not the attention
    overlap (plan/overlap.py; its schedule: plan/attention_overlap_cp_async.py) (`k`:
    plan/copy_forms.py's view of the kernel)."""
    from tilelang.backend.cuda.plan.pipeline import overlapped_wgmma
    from tilelang.backend.cuda.plan.overlap import plan_overlap
    kinds = {getattr(copy_form(c), "kind", None) for c in info.copies}
    if not kinds or not kinds <= _CP_ASYNC_FORMS:
        return False
    if info.guard is not None or overlapped_wgmma(k, info):
        return True
    return not (arch_number(k.target.arch) >= 90 and plan_overlap(k, info) is not None)


def staged_ok(info) -> bool:
    """Whether the loop's copies may be staged through registers: every one a converting
    copy with the vector form (no bounds check: a copy whose guard is in its body stays
    whole), and no `if cond:` around the body."""
    from tilelang.backend.cuda.plan.pipeline import converting_copy
    from tilelang.backend.cuda.ops.vector_copy import match_cast_copy, without_assumes
    from tilelang.backend.cuda.analysis.facts import parallel_nest
    return info.guard is None and all(
        converting_copy(c) and getattr(copy_form(c), "kind", None) == "vector" and
        match_cast_copy(without_assumes(parallel_nest(c)[3]))[0] is None for c in info.copies)


def last_ring_reader(info) -> int:
    """The index in `info.rest` of the last statement that reads a ring buffer (-1: none)."""
    from tilelang.backend.cuda.analysis.facts import accesses
    bufs = {id(b) for b in info.bufs}
    last = -1
    for j, st in enumerate(info.rest):
        if any(id(b) in bufs for b in accesses(st)[0]):
            last = j
    return last


def written_ring(info, copy):
    """The ring buffer the copy nest `copy` fills, or None."""
    from tilelang.backend.cuda.analysis.facts import accesses
    bufs = {id(b): b for b in info.bufs}
    return next((bufs[id(storage_root(b))] for b in accesses(copy)[1] if id(storage_root(b)) in bufs), None)


def early_refill(info, plan=None):
    """(j, copies): the copies whose ring buffers no statement of `info.rest` after rest[j]
    reads or writes, for the smallest such j before the body's last statement (their slot
    is free there: mHC pre's bf16 tile, read into registers at the top of the body while
    the gemm still reads the other tile at its end); (-1, []) when every buffer is used
    by the last statement. Refilled after rest[j], the copies have the rest of the body
    longer to land (the published package's producer releases such a slot as early).
    A wgmma that is only issued (`plan.chained_gemms`, plan/wgmma_waits.py) reads its
    operands until the statement its wait is printed at: a refill before it would
    overwrite a tile the tensor cores still read."""
    from tilelang.backend.cuda.analysis.facts import accesses
    if info.guard is not None or len(info.copies) < 2:
        return -1, []
    rings = [written_ring(info, c) for c in info.copies]
    if any(r is None for r in rings):
        return -1, []
    end = len(info.rest) - 1
    chained = plan.chained_gemms if plan is not None else set()

    def waited_at(g):   # the index of the statement whose wait completes g (the body's end if none)
        for i, st in enumerate(info.rest):
            for waits in (plan.wgmma_waits_before, plan.wgmma_waits_after):
                w = waits.get(id(st))
                if w is not None and any(x is g for x in w.gemms):
                    return i
        return end

    last = {}
    for j, st in enumerate(info.rest):
        r, w = accesses(st)
        for b in r + w:   # a view of a ring tile uses the tile
            last[id(storage_root(b))] = max(last.get(id(storage_root(b)), -1), j)
        gemms = []
        walk(st, lambda n: gemms.append(n) if isinstance(n, TO.Gemm) and id(n) in chained else None)
        for g in gemms:
            until = waited_at(g)
            for b in (g.A.buffer, g.B.buffer):
                last[id(storage_root(b))] = max(last.get(id(storage_root(b)), -1), until)
    when = [(last.get(id(r), -1), c) for r, c in zip(rings, info.copies)]
    j = min(w for w, _ in when)
    if j < 0 or j >= end:
        return -1, []
    return j, [c for w, c in when if w == j]


def refill_barrier(info, plan=None):
    """(b, gemms): the index in `info.rest` of a block barrier of the body's own (plan/sync.py's:
    the FlashAttention backward's, between the store of dS into shared memory and the dQ
    product) after which no statement uses a ring buffer, and the wgmma gemms issued before
    it whose groups may still be in flight there; None when there is none. Refilled right
    after that barrier, the slots need no barrier of their own at the end of the body (one
    block barrier an iteration less) and the copies are issued earlier. The groups must be
    retired before the barrier: a wgmma only issued reads its operands (a ring tile) until
    its wait (plan/wgmma_waits.py), so they are waited for there (`wgmma.wait_group 0`)."""
    from tilelang.backend.cuda.analysis.facts import accesses
    if info.guard is not None or not info.copies:
        return None
    rings = {id(r) for r in (written_ring(info, c) for c in info.copies) if r is not None}
    if len(rings) != len({id(b) for b in info.bufs}):
        return None

    def uses_ring(st):
        r, w = accesses(st)
        return any(id(storage_root(b)) in rings for b in r + w)

    last = max((j for j, st in enumerate(info.rest) if uses_ring(st)), default=-1)
    b = next((j for j, st in enumerate(info.rest) if j > last and isinstance(st, S.Barrier) and
              st.kind == "block" and st.barrier_id is None and st.arrive_count is None), None)
    if b is None:
        return None
    chained = plan.chained_gemms if plan is not None else set()
    gemms = []
    for st in info.rest[:b]:
        walk(st, lambda n: gemms.append(n) if isinstance(n, TO.Gemm) and id(n) in chained else None)
    return b, gemms


def _issue_only(plan, rest, i) -> bool:
    """Whether rest[i], a wgmma gemm waited for right after its issue (`tl::wgmma_gemm_*`: the
    next statement needs it), becomes issue-only with its wait before rest[i + 1], so that the
    refill placed between them is issued while the tensor cores run it (the attention
    backward's dQ = dS^T K, then its atomics). Changes the plan's waits when it does."""
    if plan is None or i + 1 >= len(rest) or not isinstance(rest[i], TO.Gemm):
        return False
    g, nxt = rest[i], rest[i + 1]
    cfg = plan.gemms.get(id(g))
    p = plan.placements.get(id(g.C.buffer))
    if getattr(cfg, "kind", "") != "wgmma" or getattr(p, "kind", None) != "acc" or \
            id(g) in plan.chained_gemms or id(nxt) in plan.wgmma_waits_before:
        return False
    plan.chained_gemms.add(id(g))
    plan.wgmma_waits_before[id(nxt)] = WgmmaWait(0, [g], "after the ring's refill issued under it")
    return True


def schedule(loop, info, fence, refill_wait=False, early_refill_ok=True, plan=None, refill_at_barrier=False,
             under_wgmma=False):
    """The statements that replace `loop` (module docstring); `fence`: the barriers first
    make generic-proxy writes visible to the async proxy (plan/proxy_fences.py);
    `refill_wait`: the slot the previous iteration read is refilled after the wait for this
    iteration's copies (one barrier per iteration), else as soon as every thread is done
    with it: a ring buffer that the body stops using before its last statement at once
    after that statement (`early_refill`; `early_refill_ok`: the switch
    TILELANG_CUDA_CP_ASYNC_EARLY_REFILL), the others after the body; `refill_at_barrier`
    (TILELANG_CUDA_CP_ASYNC_REFILL_AT_BARRIER): all of them right after a block barrier of the
    body's own that follows their last use (`refill_barrier`), where there is one, or
    (`under_wgmma`, TILELANG_CUDA_CP_ASYNC_REFILL_UNDER_WGMMA) between the issue and the wait
    of the wgmma gemm that follows that barrier (`_issue_only`)."""
    ns, var = info.stages, loop.var
    lo, hi = loop.min, simplify(loop.min + loop.extent)
    d = ns - 1 if refill_wait else ns   # iterations issued ahead of the one computing, at its start

    def barrier(why):
        return S.Barrier("block", reason=why, fence_async_proxy=fence)

    def call(name, *args):
        return S.Evaluate(M.call(name, *args))

    def guarded(k, stmts):
        body = S.seq(stmts)
        if info.guard is None:
            return body
        return S.IfThenElse(substitute(info.guard, {var: k}) if k is not var else info.guard, body)

    def copies_of(k):
        return guarded(k, [substitute(c, {var: k}) for c in info.copies])

    def slot(expr, body):
        return S.StageSlot(info.bufs, expr, ns, body)

    def ring_index(k):   # k - lo >= 0: C's remainder, as the ring has always been indexed
        return E.Call("truncmod", [simplify(k - lo), E.IntImm(ns, k.dtype)], k.dtype)

    ring = ", ".join(b.name for b in info.bufs)
    p = E.Var("p", var.dtype)
    k0 = E.Var(var.name, var.dtype)
    prologue = S.For(p, E.IntImm(0, var.dtype), E.IntImm(d, var.dtype), S.SERIAL, S.seq([
        S.IfThenElse(E.binop("<", simplify(lo + p), hi),
                     S.LetStmt(k0, simplify(lo + p), slot(p, copies_of(k0)))),
        call(M.CP_ASYNC_COMMIT)]))
    kn = E.Var(var.name + "_next", var.dtype)
    compute = slot(ring_index(var), guarded(var, info.rest))
    if refill_wait:
        issue = S.IfThenElse(E.binop("<", var + d, hi),
                             S.LetStmt(kn, var + d, slot(ring_index(kn), copies_of(kn))))
        body = [call(M.CP_ASYNC_WAIT, ns - 2),
                barrier(f"this iteration's copies into {ring} landed; the slot the previous one read is free"),
                issue, call(M.CP_ASYNC_COMMIT), compute]
        j = last_ring_reader(info) if staged_ok(info) else -1
        n = E.const_int_value(loop.extent)
        if 0 <= j < len(info.rest) - 1 and n is not None and n > ns:
            return _staged(loop, info, body[:2], j, prologue, slot, ring_index, barrier, call, ring)
    else:
        def refill(copies, names):
            kk = E.Var(var.name + "_next", var.dtype)
            return S.IfThenElse(E.binop("<", var + d, hi), S.seq([
                barrier(f"every thread is done with this iteration's slot of {names}: it is refilled"),
                S.LetStmt(kk, var + d, slot(ring_index(kk), guarded(kk, [substitute(c, {var: kk}) for c in copies])))]))
        j, early = early_refill(info, plan) if early_refill_ok else (-1, [])
        at = refill_barrier(info, plan) if refill_at_barrier and not early else None
        if at is not None:   # the body's own barrier orders the refill (refill_barrier)
            b, gemms = at
            own = info.rest[b]
            retired = " (the wgmma groups reading it retired first)" if gemms else ""
            merged = S.Barrier("block", reason=f"{own.reason or 'the program'}; every thread is done with this "
                               f"iteration's slot of {ring}{retired}: it is refilled",
                               # (a user's barrier is fenced wherever the kernel fences its barriers)
                               fence_async_proxy=own.fence_async_proxy or own.reason is None and fence,
                               fence_when=own.fence_when)
            merged.span = own.span
            if gemms:
                plan.wgmma_waits_before[id(merged)] = WgmmaWait(
                    0, gemms, "before the barrier after which the ring's slot is refilled")
            rest = list(info.rest[:b]) + [merged] + list(info.rest[b + 1:])
            kk = E.Var(var.name + "_next", var.dtype)
            issue = S.IfThenElse(E.binop("<", var + d, hi), S.LetStmt(
                kk, var + d, slot(ring_index(kk), copies_of(kk))))
            u = b + 1 + (under_wgmma and _issue_only(plan, rest, b + 1))   # the refill's place in rest
            compute = [slot(ring_index(var), S.seq(rest[:u])), issue] + \
                ([slot(ring_index(var), S.seq(rest[u:]))] if u < len(rest) else [])
            body = [call(M.CP_ASYNC_WAIT, ns - 1),
                    barrier(f"this iteration's copies into {ring} landed"),
                    *compute, call(M.CP_ASYNC_COMMIT)]
        elif early:   # those copies' slots are free after rest[j]: refilled there, in the same group
            late = [c for c in info.copies if all(c is not e for e in early)]
            compute = [slot(ring_index(var), S.seq(info.rest[:j + 1])),
                       refill(early, ", ".join(written_ring(info, c).name for c in early)),
                       slot(ring_index(var), S.seq(info.rest[j + 1:]))]
            issue = refill(late, ", ".join(written_ring(info, c).name for c in late))
        else:
            compute, issue = [compute], refill(info.copies, ring)
        if at is None:
            body = [call(M.CP_ASYNC_WAIT, ns - 1),
                    barrier(f"this iteration's copies into {ring} landed"),
                    *compute, issue, call(M.CP_ASYNC_COMMIT)]
    main = S.For(var, loop.min, loop.extent, S.SERIAL, S.seq(body))
    for s in (prologue, main):
        s.span = loop.span
    prologue.annotations[CP_ASYNC_PROLOGUE] = True   # plan/cp_async_preload.py
    return [barrier(f"{ring} may still be read before the pipeline's prologue"), prologue, main,
            call(M.CP_ASYNC_WAIT, 0)]


def _staged(loop, info, head, j, prologue, slot, ring_index, barrier, call, ring):
    """The refill-after-wait schedule with converting copies staged through registers: the
    loads of iteration k + s - 1 are issued in iteration k - 1 right after the last reader of its
    slot, held in registers over a barrier, and converted and stored into slot (k + s - 1) % s
    in iteration k after the last reader of slot k (the slot iteration k - 1 read, before this
    iteration's barrier). Their latency overlaps a whole iteration; the loads of an iteration
    past the end re-read the last one (min(k, hi - 1): in bounds, as every iteration's are,
    the copies having no bounds check). A constant trip count above s (the prologue's first
    load half is then in bounds)."""
    ns, var = info.stages, loop.var
    lo, hi = loop.min, simplify(loop.min + loop.extent)
    d = ns - 1

    def half(k, mode, wrap):
        out = []
        for n, c in enumerate(info.copies):
            h = substitute(c, {var: k})
            h.annotations = {**h.annotations, STAGED: (mode, n)}
            out.append(h)
        return slot(ring_index(k), S.seq(out)) if wrap else S.seq(out)

    def clamp(e):
        return E.Call("min", [simplify(e), simplify(hi - 1)], var.dtype)
    kn = E.Var(var.name + "_next", var.dtype)
    first = half(clamp(lo + d), "load", True)   # declares the registers, before the loop
    store = S.IfThenElse(E.binop("<", var + d, hi), S.LetStmt(kn, var + d, half(kn, "store", True)))
    body = head + [slot(ring_index(var), S.seq(info.rest[:j + 1])), store,
                   half(clamp(var + d + 1), "reload", True),
                   slot(ring_index(var), S.seq(info.rest[j + 1:])), call(M.CP_ASYNC_COMMIT)]
    main = S.For(var, loop.min, loop.extent, S.SERIAL, S.seq(body))
    for s in (prologue, first, main):
        s.span = loop.span
    return [barrier(f"{ring} may still be read before the pipeline's prologue"), prologue, first, main,
            call(M.CP_ASYNC_WAIT, 0)]


def schedule_wgmma_in_flight(k, loop, info):
    """The statements that replace a loop whose body is one wgmma gemm kept in flight
    (plan/pipeline.py `overlapped_wgmma`), with s - 1 iterations of copies ahead (s =
    num_stages, as the published package's pipeline): iteration k waits for its copies,
    issues its wgmma group, waits for group k - 1 (`T.warpgroup_wait(1)`) and, once every
    warpgroup has (a second barrier), refills the slot iteration k - 1 read with the copies
    of iteration k + s - 1. (One barrier per iteration allows only s - 2 ahead: a 128x256
    conv tile alone on its SM then waits for its im2col loads every iteration.)

        T.sync_threads()  # inserted: ...
        for p in T.serial(s - 1): [if lo + p < hi: the copies of iteration lo + p]; T.ptx_commit_group()
        for k in T.serial(lo, hi):
            T.ptx_wait_group(s - 2)
            T.sync_threads()  # inserted: ...
            with T.stage_slot(..., slot=T.truncmod(k - lo, s)): T.gemm(...)  # issued only
            T.warpgroup_wait(1)
            T.sync_threads()  # inserted: ... every warpgroup's group k - 1 retired
            if k + s - 1 < hi: the copies of iteration k + s - 1 into their slot
            T.ptx_commit_group()
        T.warpgroup_wait(0); the accumulator's register fence
        T.ptx_wait_group(0)"""
    from tilelang.ir import tile_ops as TO
    from tilelang.backend.cuda.plan.tma_ring_wgmma import retire
    ns, var = info.stages, loop.var
    lo, hi = loop.min, simplify(loop.min + loop.extent)
    d = ns - 1
    fence = k.plan.fence_barriers
    ring = ", ".join(b.name for b in info.bufs)
    g = info.rest[0]
    g.annotations = {**g.annotations, TO.ISSUE_ONLY: True}

    def call(name, *args):
        return S.Evaluate(M.call(name, *args))

    def slot(expr, body):
        return S.StageSlot(info.bufs, expr, ns, body)

    def ring_index(kk):
        return E.Call("truncmod", [simplify(kk - lo), E.IntImm(ns, kk.dtype)], kk.dtype)

    def copies_of(kk):
        return S.seq([substitute(c, {var: kk}) for c in info.copies])

    p = E.Var("p", var.dtype)
    k0 = E.Var(var.name, var.dtype)
    prologue = S.For(p, E.IntImm(0, var.dtype), E.IntImm(d, var.dtype), S.SERIAL, S.seq([
        S.IfThenElse(E.binop("<", simplify(lo + p), hi), S.LetStmt(k0, simplify(lo + p), slot(p, copies_of(k0)))),
        call(M.CP_ASYNC_COMMIT)]))
    kn = E.Var(var.name + "_next", var.dtype)
    body = [call(M.CP_ASYNC_WAIT, d - 1),
            S.Barrier("block", reason=f"this iteration's copies into {ring} landed", fence_async_proxy=fence),
            slot(ring_index(var), g), S.Evaluate(M.call(TC.WARPGROUP_WAIT, 1)),
            S.Barrier("block", reason=f"every warpgroup's previous wgmma group retired: its slot of {ring} is free",
                      fence_async_proxy=False),
            S.IfThenElse(E.binop("<", var + d, hi), S.LetStmt(kn, var + d, slot(ring_index(kn), copies_of(kn)))),
            call(M.CP_ASYNC_COMMIT)]
    main = S.For(var, loop.min, loop.extent, S.SERIAL, S.seq(body))
    for s in (prologue, main):
        s.span = loop.span
    prologue.annotations[CP_ASYNC_PROLOGUE] = True   # plan/cp_async_preload.py
    return [S.Barrier("block", reason=f"{ring} may still be read before the pipeline's prologue",
                      fence_async_proxy=fence), prologue, main] + retire(k, g) + [call(M.CP_ASYNC_WAIT, 0)]


def schedule_after_use(loop, info, fence):
    """The statements that replace a num_stages=1 `loop` (module docstring). The barriers
    around the markers are plan/sync.py's (in `info.rest`)."""
    from tilelang.backend.cuda.plan.pipeline import PREFETCH_WAIT, prefetch_marker
    var = loop.var
    lo, hi = loop.min, simplify(loop.min + loop.extent)
    groups = info.groups
    issued = []   # the groups in the order one iteration issues them (after their last readers)
    body = []
    for s in info.rest:
        m = prefetch_marker(s)
        if m is None:
            if isinstance(s, S.Barrier) and s.reason is not None:
                s.fence_async_proxy = s.fence_async_proxy or fence   # (a marker's is in the plan only)
            body.append(s)
        elif m[0] == PREFETCH_WAIT:
            # in flight behind group g: the groups issued after it (plan/pipeline.py numbers
            # them in issue order), and those this iteration has issued already
            body.append(S.Evaluate(M.call(M.CP_ASYNC_WAIT, len(groups) - 1 - m[1] + len(issued))))
        else:
            g = m[1]
            issued.append(g)
            kn = E.Var(var.name + "_next", var.dtype)
            body.append(S.IfThenElse(E.binop("<", var + 1, hi), S.LetStmt(
                kn, var + 1, S.seq([substitute(c, {var: kn}) for c in groups[g]]))))
            body.append(S.Evaluate(M.call(M.CP_ASYNC_COMMIT)))
    k0 = E.Var(var.name, var.dtype)
    prologue = []
    for g in range(len(groups)):
        prologue += [substitute(c, {var: k0}) for c in groups[g]] + [S.Evaluate(M.call(M.CP_ASYNC_COMMIT))]
    first = S.IfThenElse(E.binop("<", lo, hi), S.LetStmt(k0, lo, S.seq(prologue)))
    main = S.For(var, loop.min, loop.extent, S.SERIAL, S.seq(body))
    main.annotations[CP_ASYNC_AFTER_USE] = True   # `first` is its prologue (plan/cp_async_preload.py)
    for s in (first, main):
        s.span = loop.span
    ring = ", ".join(b.name for b in info.bufs)
    return [S.Barrier("block", reason=f"{ring} may still be read before the pipeline's prologue",
                      fence_async_proxy=fence), first, main, S.Evaluate(M.call(M.CP_ASYNC_WAIT, 0))]


@function_pass("pipeline_cp_async")
def pipeline_cp_async(func, ctx=None):
    from tilelang.backend.cuda.plan.pipelined_loops import schedule_pipelined_loops

    from tilelang.backend.cuda.plan.pipeline import overlapped_wgmma

    from tilelang.backend.cuda.plan.attention_overlap_cp_async import overlap_on_cp_async, \
        schedule_overlap_cp_async

    def cp_async_overlap(k, loop, info):
        kinds = {getattr(copy_form(c), "kind", None) for c in info.copies}
        return overlap_on_cp_async(k, loop, info) if kinds and kinds <= _CP_ASYNC_FORMS else None

    def takes(k, loop, info):
        return runs_on_cp_async(k, info) or cp_async_overlap(k, loop, info) is not None

    def make(k, loop, info):
        ov = cp_async_overlap(k, loop, info)
        if ov is not None:   # the attention overlap (plan/attention_overlap_cp_async.py)
            return schedule_overlap_cp_async(k, loop, info, ov)
        if info.guard is None and overlapped_wgmma(k, info):   # one wgmma group kept in flight
            return schedule_wgmma_in_flight(k, loop, info)
        if info.issue_after_use:
            return schedule_after_use(loop, info, k.plan.fence_barriers)
        # the early refill helps only where some iteration refills a slot: a constant
        # trip count the prologue covers keeps the waiting schedule's code
        n = E.const_int_value(loop.extent)
        # copies staged through registers take the refill-after-wait schedule (`_staged`): one
        # barrier per iteration orders both the slot's reads and its refill
        wait = k.options.cp_async_refill_wait or (n is not None and n <= info.stages) or staged_ok(info)
        return schedule(loop, info, k.plan.fence_barriers, wait, k.options.cp_async_early_refill, k.plan,
                        k.options.cp_async_refill_at_barrier, k.options.cp_async_refill_under_wgmma)
    return schedule_pipelined_loops(func, ctx, takes, make)


__all__ = ["pipeline_cp_async", "runs_on_cp_async", "schedule", "schedule_wgmma_in_flight", "schedule_after_use"]
