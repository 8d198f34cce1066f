"""Overlapping the second wgmma of an attention-style T.Pipelined loop with the
element-wise work of the next iteration (sm_90a, two stages).

The loop body `S = Q K_k^T; softmax(S) -> P, rescale O; O += P V_k` keeps the
tensor cores idle while the softmax runs: each T.gemm issues its wgmma group and
waits for it. Here iteration k issues `S = Q K_k^T`, then the previous
iteration's `O += P V_{k-1}`, waits for the first group only, and runs the
softmax while the second group is still executing; it waits for that group right
before the first statement that touches P or O (the copy into P, the rescale of
O). The last iteration's `P V` runs after the loop. The result is the program's:
each statement sees the same values, because nothing between the deferred gemm and
its wait reads or writes P, O or V's tile.

Copies: iteration k's group brings K_{k+1} (for the next QK^T) and V_k (for the
P V issued one iteration later), so each slot of the two-slot rings is refilled
only after every warp waited for the wgmma that read it (the block barrier at the
top of the iteration follows those waits).

Conditions (else the ordinary schedule runs): two stages, the loop body's tile
ops are exactly two wgmma gemms into register accumulators, the last statement is
the second gemm, whose B tile is pipelined; no statement before the first gemm,
nor the first gemm itself, touches the second gemm's A or C; the first gemm's C
is neither; no barrier is planned inside the body but before the second gemm.

Opt-in (TILELANG_CUDA_OVERLAP_GEMM=1). Measured slower on the H200 before the following
(FlashAttention d128 3.02 ms against 2.44 ms, benchmarks/results/2026-11-29_h200_suite_4th.md):
ptxas moved the `wgmma.wait_group 0` of P V up to the first shuffle of the row maximum, above
the exponentials, whatever the PTX order, so the softmax still ran after P V, and the cp.async
schedule put a block barrier in every iteration. Now (not yet measured on the H200): a
predicated-off shared store of the row statistics keeps the softmax ahead of that wait
(`_pinned`, TILELANG_CUDA_WGMMA_WAIT_PIN; in the SASS every MUFU.EX2 of the iteration lies
between the two WARPGROUP.DEPBAR), and K and V come on two TMA rings without a block barrier
(`emit_overlapped_ring`; TILELANG_CUDA_OVERLAP_RING=0 keeps cp.async), optionally with the
warpgroups taking turns at the issues (TILELANG_CUDA_PINGPONG=1) and with O's rescale moved
between the next iteration's two issues (`_deferred`, TILELANG_CUDA_OVERLAP_DEFER)."""
from __future__ import annotations

from dataclasses import dataclass

from tilelang.ir import tile_ops as TO
from tilelang.backend.cuda.analysis.facts import accesses
from tilelang.backend.cuda.plan.sync import is_inserted_barrier


@dataclass
class OverlapPlan:
    g1: object            # S = Q K^T (issued and waited in its own iteration)
    g2: object            # O += P V (issued one iteration later)
    before: list          # statements before g1
    between: list         # statements between g1 and the wait for g2
    after: list           # statements from the first one touching P or O, up to g2
    late: list            # the copies into g2's B (issued for the current iteration)
    early: list           # the other copies (issued for the next iteration)
    pinned: list = None   # row fragments `between` writes, stored (predicated off) before the wait for g2
    deferred: list = None  # statements of `after` that run in the next iteration, once g1 is issued (rings only)
    rings_ok: bool = False  # nothing after g1 reads the tiles g1 reads: K's slot may go once g1 retired


def _touches(st, bufs):
    r, w = accesses(st)
    return any(b is x for b in r + w for x in bufs)


def plan_overlap(cg, info):
    if not cg.options.overlap_gemm or info.stages != 2:
        return None
    rest = info.rest
    gemms = [i for i, s in enumerate(rest) if isinstance(s, TO.Gemm)]
    if len(gemms) != 2 or gemms[1] != len(rest) - 1:
        return None
    g1, g2 = rest[gemms[0]], rest[gemms[1]]
    c1, c2 = cg.plan.gemms.get(id(g1)), cg.plan.gemms.get(id(g2))
    if c1 is None or c2 is None or getattr(c1, "kind", "") != "wgmma" or getattr(c2, "kind", "") != "wgmma":
        return None
    if c1.a_regs or cg.placement(g1.C.buffer).kind != "acc" or cg.placement(g2.C.buffer).kind != "acc":
        return None
    if not any(g2.B.buffer is b for b in info.bufs):
        return None
    held = [g2.A.buffer, g2.C.buffer]          # in use by the deferred group
    if any(g1.C.buffer is b for b in held) or _touches(g1, held + [g2.B.buffer]):
        return None
    # (a barrier before g2 -- P staged in shared memory -- is the one every deferred
    # issue follows anyway: the top of the next iteration, or the one after the loop;
    # plan/sync.py's barrier nodes stand right before the statement they order)
    if any(is_inserted_barrier(s) for s in rest[:-2]):
        return None
    before = rest[:gemms[0]]
    mid = [s for s in rest[gemms[0] + 1:-1] if not is_inserted_barrier(s)]
    if any(_touches(s, held + [g2.B.buffer]) for s in before):
        return None
    w = next((i for i, s in enumerate(mid) if _touches(s, held)), len(mid))
    if any(_touches(s, [g2.B.buffer]) for s in mid):
        return None
    late = [c for c, b in zip(info.copies, info.bufs) if b is g2.B.buffer]
    early = [c for c, b in zip(info.copies, info.bufs) if b is not g2.B.buffer]
    ring_bufs = list(info.bufs)
    rings_ok = not any(_touches(s, [b for b in ring_bufs if b is not g2.B.buffer]) for s in mid)
    deferred = [s for s in _deferred(mid[w:], before, g1) if not _touches(s, ring_bufs)]
    return OverlapPlan(g1, g2, before, mid[:w], mid[w:], late, early, _pinned(cg, mid[:w]), deferred, rings_ok)


def _conflict(a, b):
    """Whether statements (or lists of them) `a` and `b` touch a buffer one of them writes."""
    ra, wa = (sum((accesses(s)[i] for s in a), []) for i in (0, 1))
    rb, wb = (sum((accesses(s)[i] for s in b), []) for i in (0, 1))
    return any(x is y for x in wa for y in rb + wb) or any(x is y for x in wb for y in ra)


def _deferred(after, before, g1):
    """The statements of `after` (P's conversion, O's rescale) that may wait until the next
    iteration has issued its Q K^T: they touch nothing that iteration's statements before
    the gemm or the gemm itself write (or write what those read), nor anything a later
    statement of `after` touches (a kept one now runs first). O's rescale then runs beside
    Q K^T on the tensor cores, as in FlashAttention-3 (its rescale_o between the issues)."""
    return [s for i, s in enumerate(after)
            if not _conflict([s], list(before) + [g1]) and not _conflict([s], after[i + 1:])]


def _pinned(cg, between):
    """The row fragments (per-row statistics: the running max, the row sums) that the
    statements between the two waits write, when TILELANG_CUDA_WGMMA_WAIT_PIN is on (the
    default): a store of theirs that ptxas may not move across `wgmma.wait_group`
    (tl::pin_before_wgmma_wait) keeps the work they depend on (the whole softmax: the
    row sums read every exponential) ahead of the wait for P V, so the tensor cores run
    P V while this warpgroup computes. Without it ptxas hoists that wait to the first
    shuffle of the row maximum (SASS: the MUFU.EX2 after the second WARPGROUP.DEPBAR)."""
    if not getattr(cg.options, "wgmma_wait_pin", True):
        return []
    out = []
    for s in between:
        for b in accesses(s)[1]:
            p = cg.placement(b)
            if p is not None and p.kind == "row" and all(b is not x for x in out):
                out.append(b)
    return out


def emit_overlapped(cg, st, info, p):
    from tilelang.arith.simplify import simplify
    lo = cg.expr(st.min)
    hi = cg.expr(simplify(st.min + st.extent))
    c1, c2 = cg.plan.gemms[id(p.g1)], cg.plan.gemms[id(p.g2)]

    def g2_issue(slot):
        with cg.slot_pointers(info, slot):
            cg.w(cg.wgmma_call(p.g2, c2, issue_only=True))

    def iteration(k, first):
        cg.w("tl::cp_async_wait<0>();")   # K_k and V_{k-1}
        cg.sync()                          # ... from every thread; every warp is past the reads of the slots refilled now
        kn = cg.names.fresh(k + "_next")
        cg.w(f"if ({k} + 1 < {hi}) {{")
        cg.indent += 1
        cg.w(f"const int {kn} = {k} + 1;")
        with cg.names.bound(st.var, kn):
            cg._issue(info, f"({kn} - {lo}) % 2", p.early)
        cg.indent -= 1
        cg.w("}")
        cg._issue(info, f"({k} - {lo}) % 2", p.late)
        cg.w("tl::cp_async_commit();")
        with cg.slot_pointers(info, f"({k} - {lo}) % 2"):
            for s in p.before:
                cg.stmt(s, True)
            cg.w(cg.wgmma_call(p.g1, c1, issue_only=True))
        if first:
            cg.w("tl::wgmma_wait<0>();")
        else:
            g2_issue(f"({k} - 1 - {lo}) % 2")
            cg.w("tl::wgmma_wait<1>();")   # groups retire in order: Q K_k^T is done, P V_{k-1} may run on
        cg.w(f"tl::fence_regs<{c1.regs}>({cg.buf_name(p.g1.C.buffer)});")
        with cg.slot_pointers(info, f"({k} - {lo}) % 2"):
            for s in p.between:
                cg.stmt(s, True)
            if not first:
                # the softmax results are made before the wait (else the compiler sinks that
                # work below it and nothing overlaps), then P V_{k-1}: P and O are free again
                cg.w(f"tl::fence_regs<{c1.regs}>({cg.buf_name(p.g1.C.buffer)});")
                for b in p.pinned or []:
                    cg.w(f"tl::pin_before_wgmma_wait<{cg.placement(b).acc.regs}>({cg.buf_name(b)});")
                cg.w("tl::wgmma_wait<0>();")
                cg.w(f"tl::fence_regs<{c2.regs}>({cg.buf_name(p.g2.C.buffer)});")
            for s in p.after:
                cg.stmt(s, True)

    cg.sync()
    cg.w(f"if ({lo} < {hi}) {{")
    cg.indent += 1
    k = cg.bind(st.var)
    cg.w(f"const int {k} = {lo};")
    cg._issue(info, "0", p.early)
    cg.indent -= 1
    cg.w("}")
    cg.w("tl::cp_async_commit();")
    # the first iteration on its own: no branch around the deferred issue in the loop
    # (at a join of paths with different groups in flight ptxas waits for all of them)
    cg.w(f"if ({lo} < {hi}) {{")
    cg.indent += 1
    k = cg.bind(st.var)
    cg.w(f"const int {k} = {lo};")
    iteration(k, True)
    cg.indent -= 1
    cg.w("}")
    k = cg.bind(st.var)
    cg.w(f"for (int {k} = {lo} + 1; {k} < {hi}; ++{k}) {{")
    cg.indent += 1
    iteration(k, False)
    cg.indent -= 1
    cg.w("}")
    # the last iteration's P V
    cg.w("tl::cp_async_wait<0>();")
    cg.sync()
    cg.w(f"if ({lo} < {hi}) {{")
    cg.indent += 1
    g2_issue(f"({hi} - 1 - {lo}) % 2")
    cg.w("tl::wgmma_wait<0>();")
    cg.w(f"tl::fence_regs<{c2.regs}>({cg.buf_name(p.g2.C.buffer)});")
    cg.indent -= 1
    cg.w("}")



def emit_overlapped_ring(cg, st, info, p, tmas):
    """The overlapped schedule (module docstring) fed by bulk tensor copies, as FlashAttention-3
    feeds it: K and V on two TMA rings of `info.stages` slots each, with "full" mbarriers
    (the copies' bytes) and per-warp release counters (ops/tma_pipeline.py), and no block
    barrier in the loop. Iteration k waits for K_k, issues Q K_k^T, waits for V_{k-1} and
    issues P V_{k-1}; once the first group retired (wgmma_wait<1>) each warp releases K_k's
    slot, the last to release it refills it with K_{k+s}; the softmax runs while P V_{k-1}
    is on the tensor cores, pinned ahead of the wait for it (`_pinned`); then V_{k-1}'s slot
    is released and refilled with V_{k-1+s}. One ring for both tiles would keep K_k's slot
    until P V_k retired, an iteration later: with two slots the next load would start
    right when it is needed. Selected when every copy has a TMA form (plan/copy_forms.py
    gives them `TMA ring`); TILELANG_CUDA_OVERLAP_RING=0 keeps the cp.async schedule. With
    TILELANG_CUDA_PINGPONG=1 (256 threads) the warpgroups also take turns at issuing their
    two groups on two named barriers (ops/tma_pipeline.py `pingpong` picks them). The
    statements `_deferred` allows (O's rescale) run in the next iteration between the two
    issues (TILELANG_CUDA_OVERLAP_DEFER=0: at the end of their own)."""
    from tilelang.arith.simplify import simplify
    from tilelang.backend.cuda.ops.tma_pipeline import declare_ring, preload, release_and_refill, \
        invalidate_ring, issue_ring_copies, tensor_map
    ns = info.stages
    lo = cg.expr(st.min)
    hi = cg.expr(simplify(st.min + st.extent))
    nwarps = cg.plan.nthreads // 32
    c1, c2 = cg.plan.gemms[id(p.g1)], cg.plan.gemms[id(p.g2)]

    def ring_of(copies):
        ts = [t for c, t in zip(info.copies, tmas) if any(c is x for x in copies)]
        bufs = [b for c, b in zip(info.copies, info.bufs) if any(c is x for x in copies)]
        return ts, [tensor_map(cg, t) for t in ts], bufs
    tk, mk, kbufs = ring_of(p.early)
    tv, mv, vbufs = ring_of(p.late)
    rk = declare_ring(cg, ns, mk, None)
    rv = declare_ring(cg, ns, mv, None)
    nbk, nbv = sum(t.nbytes for t in tk), sum(t.nbytes for t in tv)

    def issue_k(kexpr, slot):
        issue_ring_copies(cg, st, tk, mk, rk.full, nbk, kexpr, slot)

    def issue_v(kexpr, slot):
        issue_ring_copies(cg, st, tv, mv, rv.full, nbv, kexpr, slot)
    preload(cg, ns, lo, hi, issue_k)
    preload(cg, ns, lo, hi, issue_v)
    # TILELANG_CUDA_PINGPONG=1: the two warpgroups take turns at issuing their two groups
    # (FlashAttention-3's warp scheduler barriers), so one's softmax runs while the other's
    # gemms have the tensor cores; warpgroup 0 goes first
    from tilelang.backend.cuda.ops.tma_pipeline import pingpong
    pp = pingpong(cg, info)
    wg = None
    if pp is not None:
        bar = pp[1]
        wg = cg.names.fresh("tl_wg")
        cg.w(f"const int {wg} = tl_tid / 128;")
        cg.w(f"if ({wg} == 1) tl::named_barrier_arrive({bar}, 256);")

    def slot(j):
        return f"(({j}) - ({lo})) % {ns}"

    def phase(j):
        return f"((({j}) - ({lo})) / {ns}) & 1"

    def g2_issue(j):
        cg.w(f"tl::mbar_wait(&{rv.full}[{slot(j)}], {phase(j)});")
        with cg.slot_buffers(vbufs, slot(j)):
            cg.w(cg.wgmma_call(p.g2, c2, issue_only=True))

    def iteration(k, first):
        cg.w(f"tl::mbar_wait(&{rk.full}[{slot(k)}], {phase(k)});")
        with cg.slot_buffers(kbufs, slot(k)):
            for s in p.before:
                cg.stmt(s, True)
            if wg is not None:   # this warpgroup's turn
                cg.w(f"tl::named_barrier_sync({bar} + {wg}, 256);")
            cg.w(cg.wgmma_call(p.g1, c1, issue_only=True))
        if not first:
            for s in deferred:   # the previous iteration's (O's rescale), beside Q K_k^T
                cg.stmt(s, True)
            g2_issue(f"{k} - 1")
        if wg is not None:   # the other's turn (warpgroup 1 skips its last: warpgroup 0 got one at the start)
            cg.w(f"if ({wg} == 0 || {k} + 1 < {hi}) tl::named_barrier_arrive({bar} + 1 - {wg}, 256);")
        if first:
            cg.w("tl::wgmma_wait<0>();")
        else:
            cg.w("tl::wgmma_wait<1>();")   # groups retire in order: Q K_k^T is done, P V_{k-1} may run on
        cg.w(f"tl::fence_regs<{c1.regs}>({cg.buf_name(p.g1.C.buffer)});")
        # (nothing after Q K_k^T reads K's tiles: OverlapPlan.rings_ok)
        release_and_refill(cg, rk.released, slot(k), nwarps, f"{k} + {ns}", hi, issue_k)
        for s in p.between:
            cg.stmt(s, True)
        if not first:
            cg.w(f"tl::fence_regs<{c1.regs}>({cg.buf_name(p.g1.C.buffer)});")
            for b in p.pinned or []:
                cg.w(f"tl::pin_before_wgmma_wait<{cg.placement(b).acc.regs}>({cg.buf_name(b)});")
            cg.w("tl::wgmma_wait<0>();")
            cg.w(f"tl::fence_regs<{c2.regs}>({cg.buf_name(p.g2.C.buffer)});")
            release_and_refill(cg, rv.released, slot(f"{k} - 1"), nwarps, f"{k} - 1 + {ns}", hi, issue_v)
        for s in p.after:
            if all(s is not d for d in deferred):
                cg.stmt(s, True)

    # the first iteration on its own: no branch around the deferred issue in the loop
    # (at a join of paths with different groups in flight ptxas waits for all of them)
    deferred = (p.deferred or []) if cg.options.overlap_defer else []
    cg.w(f"if ({lo} < {hi}) {{")
    cg.indent += 1
    k = cg.bind(st.var)
    cg.w(f"const int {k} = {lo};")
    iteration(k, True)
    cg.indent -= 1
    cg.w("}")
    k = cg.bind(st.var)
    cg.w(f"for (int {k} = {lo} + 1; {k} < {hi}; ++{k}) {{")
    cg.indent += 1
    iteration(k, False)
    cg.indent -= 1
    cg.w("}")
    cg.w(f"if ({lo} < {hi}) {{   // the last iteration's P V")
    cg.indent += 1
    for s in deferred:
        cg.stmt(s, True)
    g2_issue(f"{hi} - 1")
    cg.w("tl::wgmma_wait<0>();")
    cg.w(f"tl::fence_regs<{c2.regs}>({cg.buf_name(p.g2.C.buffer)});")
    cg.indent -= 1
    cg.w("}")
    cg.sync(fence=False)   # every copy of both rings was consumed: the barriers may be initialized again
    invalidate_ring(cg, ns, rk)
    invalidate_ring(cg, ns, rv)
