"""Overlapping the second wgmma of an attention-style T.Pipelined loop with the
element-wise work of the next iteration (sm_90a, two stages): whether it applies and where
each statement goes (`plan_overlap`). The schedules that the pipelining passes write into
the IR from this plan: plan/attention_overlap_ring.py (K and V on two TMA rings, the pass
pipeline_tma_ring) and plan/attention_overlap_cp_async.py (cp.async, pipeline_cp_async).

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
(plan/attention_overlap_ring.py; TILELANG_CUDA_OVERLAP_RING=0 keeps cp.async), optionally with the
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
