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

Opt-in (TILELANG_CUDA_OVERLAP_GEMM=1): correct on the H200 (tests pass either
way), but slower there: FlashAttention d128 3.02 ms against 2.44 ms
(benchmarks/results/2026-11-29_h200_suite_4th.md, P in registers, the loop not yet
peeled). In the SASS ptxas moves the `wgmma.wait_group 0` of P V up to the first
shuffle of the row maximum, above the exponentials, whatever the PTX order (also
with P staged in shared memory, TILELANG_CUDA_WGMMA_RS=0, with fences on S before
the wait, and without shuffles), so the softmax still runs after P V, and the extra
waits cost. Keeping the softmax between issue and wait needs a different device
(e.g. the two consumer warpgroups alternating on named barriers, as FA3 does)."""
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
    return OverlapPlan(g1, g2, before, mid[:w], mid[w:], late, early)


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

