"""A TMA-ring GEMM loop whose body does register work after its wgmma (sm_90a): the
wgmma group stays in flight until the first statement that needs its accumulator.

The ordinary body schedule (ops/tma_pipeline.py `emit_pipelined_tma_body`) waits for
every wgmma group right after issuing it (`tl::wgmma_gemm_ss`: wait_group 0), so the
tensor cores drain once per iteration. The fp8 "2xAcc" GEMM (published example
`example_tilelang_gemm_fp8_2xAcc`) runs

    T.gemm(A_s, B_s, C_local)                  # every iteration
    if (k + 1) % interval == 0:                # every `interval` iterations
        C_accum += C_local; T.clear(C_local)

and only the promotion reads the accumulator. Here iteration k issues its group, waits
for the previous iteration's group (`wgmma_wait<1>`: groups retire in order) and releases
that iteration's ring slot, as the one-gemm loop does (`emit_pipelined_tma`); the wait
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

from tilelang.arith.simplify import simplify
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk
from tilelang.backend.cuda.analysis.facts import accesses
from tilelang.backend.cuda.ops.tma_pipeline import (tensor_map, declare_ring, preload, open_ring_loop, release_and_refill,
                                                    close_ring_loop, invalidate_ring, issue_ring_copies)
from tilelang.backend.cuda.target import arch_number


@dataclass
class DeferredWait:
    """The body of a TMA-ring loop split around its one wgmma gemm. The pass
    pipeline_tma_ring records it on the loop (annotation `deferred_wgmma_wait`, printed
    in the IR); emit/ prints the schedule from it."""
    gemm: object     # the TO.Gemm whose group stays in flight
    before: list     # statements before it (they touch neither its accumulator nor its operands' writes)
    after: list      # statements after it; the wait goes before the first that touches the accumulator

    def __repr__(self):
        return (f"'the wgmma into {self.gemm.C.buffer.name} stays in flight until a statement "
                f"touches it ({len(self.before)} statements before it, {len(self.after)} after)'")


DEFERRED_WAIT = "deferred_wgmma_wait"


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


def emit_deferred_wait(cg, st, info, tmas, plan):
    """The loop of `plan_deferred_wait`: the ring of ops/tma_pipeline.py, the slot of
    iteration k - 1 released after iteration k's issue and its wait for group k - 1."""
    ns = info.stages
    g = plan.gemm
    cfg = cg.plan.gemms[id(g)]
    nwarps = cg.plan.nthreads // 32
    lo = cg.expr(st.min)
    hi = cg.expr(simplify(st.min + st.extent))
    acc = cg.buf_name(g.C.buffer)
    maps = [tensor_map(cg, t) for t in tmas]
    nbytes = sum(t.nbytes for t in tmas)
    ring = declare_ring(cg, ns, maps, None)

    def issue(kexpr, slot):
        issue_ring_copies(cg, st, tmas, maps, ring.full, nbytes, kexpr, slot)
    preload(cg, ns, lo, hi, issue)
    k, stage, phase = open_ring_loop(cg, st, lo, hi, ring.full)
    with cg.slot_pointers(info, stage):
        for s in plan.before:
            cg.stmt(s, True)
        cg.w(cg.wgmma_call(g, cfg, issue_only=True))
    cg.w("tl::wgmma_wait<1>();   // the previous iteration's group (if it was left in flight)")
    cg.w(f"if ({k} > {lo}) {{")
    cg.indent += 1
    prev = cg.names.fresh("tl_prev")
    cg.w(f"const int {prev} = {stage} == 0 ? {ns - 1} : {stage} - 1;")
    release_and_refill(cg, ring.released, prev, nwarps, f"{k} - 1 + {ns}", hi, issue)
    cg.indent -= 1
    cg.w("}")

    def wait():
        cg.w(f"tl::wgmma_wait<0>();   // {acc} is read next")
        cg.w(f"tl::fence_regs<{cfg.regs}>({acc});")
    with cg.slot_pointers(info, stage):
        _emit_waiting(cg, plan.after, g.C.buffer, wait)
    close_ring_loop(cg, ns, stage, phase)
    cg.w("tl::wgmma_wait<0>();")
    cg.w(f"tl::fence_regs<{cfg.regs}>({acc});")
    # every copy was consumed; the barriers may be initialized again (an outer loop)
    cg.w("__syncthreads();")
    invalidate_ring(cg, ns, ring)


def _branch_waits_inside(cg, s, acc):
    """Whether statement `s` touching `acc` is a block-uniform `if` whose condition does
    not read `acc`: then the wait goes into the branches that need it."""
    return isinstance(s, S.IfThenElse) and id(s) not in cg.plan.regions.branches and \
        not cg.plan.depends(s.cond) and not _touches(S.Evaluate(s.cond), [acc])


def _waits_on_every_path(cg, stmts, acc):
    """Whether `_emit_waiting` puts a wait on every path through `stmts`."""
    for s in stmts:
        if not _touches(s, [acc]):
            continue
        if not _branch_waits_inside(cg, s, acc):
            return True
        if s.else_body is not None and _waits_on_every_path(cg, _flat(s.then_body), acc) and \
                _waits_on_every_path(cg, _flat(s.else_body), acc):
            return True
    return False


def _emit_waiting(cg, stmts, acc, wait):
    """Print `stmts` at block level with `wait()` before the first one touching `acc` on
    each path; returns whether every path waited. A block-uniform `if` whose condition
    does not read `acc` gets the wait inside the branch that needs it."""
    for i, s in enumerate(stmts):
        if not _touches(s, [acc]):
            cg.stmt(s, True)
            continue
        if _branch_waits_inside(cg, s, acc):
            cg.w(f"if ({cg.expr(s.cond)}) {{")
            cg.indent += 1
            done = _emit_waiting(cg, _flat(s.then_body), acc, wait)
            cg.indent -= 1
            if s.else_body is not None:
                cg.w("} else {")
                cg.indent += 1
                done = _emit_waiting(cg, _flat(s.else_body), acc, wait) and done
                cg.indent -= 1
            else:
                done = False
            cg.w("}")
            if done:
                for rest in stmts[i + 1:]:
                    cg.stmt(rest, True)
                return True
            continue
        wait()
        for rest in stmts[i:]:
            cg.stmt(rest, True)
        return True
    return False


def _flat(st):
    return list(st.stmts) if isinstance(st, S.SeqStmt) else [st]
