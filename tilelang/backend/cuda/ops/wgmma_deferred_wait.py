"""A TMA-ring GEMM loop whose body does register work after its wgmma (sm_90a): the
wgmma group stays in flight until the first statement that needs its accumulator.

The slot-by-slot ring schedule (plan/tma_ring_pipeline.py) waits for
every wgmma group right after issuing it (`tl::wgmma_gemm_ss`: wait_group 0), so the
tensor cores drain once per iteration. The fp8 "2xAcc" GEMM (published example
`example_tilelang_gemm_fp8_2xAcc`) runs

    T.gemm(A_s, B_s, C_local)                  # every iteration
    if (k + 1) % interval == 0:                # every `interval` iterations
        C_accum += C_local; T.clear(C_local)

and only the promotion reads the accumulator. Here iteration k issues its group, waits
for the previous iteration's group (`wgmma_wait<1>`: groups retire in order) and releases
that iteration's ring slot, as the one-gemm loop does (plan/tma_ring_wgmma.py, which writes
this schedule into the IR too); the wait
for the group itself (`wgmma_wait<0>` and a register fence) is placed right before the
first statement that reads or writes the accumulator, inside the branch of a block-uniform
`if` when the statement is under one. On a path that does not touch it the group stays in
flight into the next iteration, whose wgmma accumulates into the same registers after it
(tensor-core order), so the iterations between promotions issue back to back. The
results are the program's: nothing reads or writes the accumulator while a group that
writes it is in flight, and a slot is refilled only after the group that read it retired.

Conditions (else the ordinary body schedule runs): an sm_90a TMA-ring loop (not under a
per-iteration guard, no L2 prefetches asked for) of at least three stages whose body is register-only (ring_mode
"free"); exactly one gemm in the body, a wgmma reading both operands from shared memory
into a register accumulator; the statements before it neither touch the accumulator nor
write the operands; some statement after it touches the accumulator (else the one-gemm
loop applies), but not on every path (else nothing would stay in flight, and releasing the
slot an iteration later would only shorten the prefetch). Tests (the GPU ones compare with
torch): tests/backend/cuda/ops/test_wgmma_deferred_wait.py."""
from __future__ import annotations

from dataclasses import dataclass

from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk
from tilelang.backend.cuda.analysis.block_level import body_block, branch_sides
from tilelang.backend.cuda.analysis.facts import accesses
from tilelang.backend.cuda.target import arch_number


@dataclass
class DeferredWait:
    """The body of a TMA-ring loop split around its one wgmma gemm, from which the pass
    pipeline_tma_ring writes the loop's schedule (plan/tma_ring_wgmma.py)."""
    gemm: object     # the TO.Gemm whose group stays in flight
    before: list     # statements before it (they touch neither its accumulator nor its operands' writes)
    after: list      # statements after it; the wait goes before the first that touches the accumulator

    def __repr__(self):
        return (f"'the wgmma into {self.gemm.C.buffer.name} stays in flight until a statement "
                f"touches it ({len(self.before)} statements before it, {len(self.after)} after)'")


def _gemms_in(st):
    out = []
    walk(st, lambda n: out.append(n) if isinstance(n, TO.Gemm) else None)
    return out


def _touches(st, bufs):
    r, w = accesses(st)
    return any(b is x for b in r + w for x in bufs)


def _writes(st, bufs):
    return any(b is x for b in accesses(st)[1] for x in bufs)


def plan_deferred_wait(cg, info, mode):
    """A DeferredWait for pipelined loop `info` (its TMA ring mode `mode`), or None."""
    if cg.target.arch is None or arch_number(cg.target.arch) != 90 or mode != "free":
        return None
    if info.guard is not None or info.stages < 3 or cg.options.tma_l2_prefetch:
        return None   # (the L2 prefetches of TILELANG_CUDA_TMA_L2_PREFETCH are the body schedule's)
    body = list(info.rest)   # (declarations of the body's own buffers stay in place)
    gemms = [g for s in body for g in _gemms_in(s)]
    if len(gemms) != 1 or not any(s is gemms[0] for s in body):
        return None
    g = gemms[0]
    cfg = cg.plan.gemms.get(id(g))
    if getattr(cfg, "kind", "") != "wgmma" or cfg.a_regs or cg.placement(g.C.buffer).kind != "acc":
        return None
    at = next(i for i, s in enumerate(body) if s is g)
    before, after = body[:at], body[at + 1:]
    if any(_touches(s, [g.C.buffer]) or _writes(s, [g.A.buffer, g.B.buffer]) for s in before):
        return None
    if not any(_touches(s, [g.C.buffer]) for s in after):
        return None
    if _waits_on_every_path(cg, after, g.C.buffer):
        # nothing stays in flight: releasing the slot a whole iteration later would only
        # shorten the prefetch (DeepGEMM's unconditional promotion keeps the body schedule)
        return None
    return DeferredWait(g, before, after)


def _branch_waits_inside(cg, s, acc):
    """Whether statement `s` touching `acc` is a block-uniform `if` whose condition does
    not read `acc`: then the wait goes into the branches that need it."""
    return isinstance(s, S.IfThenElse) and branch_sides(cg.plan, s, None) is None and \
        body_block(cg.plan, s, True) and not _touches(S.Evaluate(s.cond), [acc])


def _waits_on_every_path(cg, stmts, acc):
    """Whether `place_waits` puts a wait on every path through `stmts`."""
    for s in stmts:
        if not _touches(s, [acc]):
            continue
        if not _branch_waits_inside(cg, s, acc):
            return True
        if s.else_body is not None and _waits_on_every_path(cg, _flat(s.then_body), acc) and \
                _waits_on_every_path(cg, _flat(s.else_body), acc):
            return True
    return False


def place_waits(cg, stmts, acc, wait):
    """`stmts` (block level) with the statements `wait()` makes before the first one touching
    `acc` on each path: (the new statements, whether every path waited). A block-uniform
    `if` whose condition does not read `acc` gets the wait inside the branch that needs it."""
    out = []
    for i, s in enumerate(stmts):
        if not _touches(s, [acc]):
            out.append(s)
            continue
        if _branch_waits_inside(cg, s, acc):
            then, done = place_waits(cg, _flat(s.then_body), acc, wait)
            other = None
            if s.else_body is not None:
                other, done_else = place_waits(cg, _flat(s.else_body), acc, wait)
                done = done and done_else
            else:
                done = False
            branch = S.IfThenElse(s.cond, S.seq(then), S.seq(other) if other is not None else None)
            branch.span = s.span
            out.append(branch)
            if done:
                return out + list(stmts[i + 1:]), True
            continue
        return out + wait() + list(stmts[i:]), True
    return out, False


def _flat(st):
    return list(st.stmts) if isinstance(st, S.SeqStmt) else [st]
