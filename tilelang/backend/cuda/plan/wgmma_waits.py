"""Where each wgmma group of a statement sequence is issued and waited for (sm_90a).

Issued: inside a loop body, a wgmma gemm moves above the statements before it that it does
not depend on, up to the previous gemm (`hoist_wgmma`, below). Waited for:

A wgmma gemm issues one group of asynchronous tensor-core operations; `tl::wgmma_gemm_*`
waits for it right away (`wgmma.wait_group 0`), so the tensor cores and the threads'
register work take turns. In a sequence of statements (a kernel body, a loop body) the
group may instead stay in flight while the following statements do not need it, and be
waited for before the first statement that does: one that reads or writes its accumulator,
writes one of its operands (a shared tile, or a register A fragment), or does something
the planner cannot see into (an `Evaluate`: barriers of the user's, atomics, extern calls;
a pipelined loop). Groups complete in issue order, so that wait is
`wgmma.wait_group k` with k the groups issued after the newest one needed (they stay in
flight). A group still in flight at the end of the sequence is waited for after its last
statement. The FlashAttention backward (published flash_attention / attention_sink
examples) then runs dP = V dO^T during the cast of P, dV += P^T dO during
dS = P * (dP - Delta) (waiting for dP only: `wait_group 1`), dK += dS^T Q during the store
of dS into shared memory and the dQ product.

A wait that would come right after the gemm it completes is the gemm's own (`wgmma_gemm_*`:
nothing to overlap); so is any wait of a gemm that reads a buffer a `num_stages=1` pipeline
refills right after its last reader (plan/pipeline.py), of the gemm the warpgroups of a
ping-pong loop take turns at (ops/tma_pipeline.py `pingpong`), and of a gemm whose
accumulator is in shared memory. emit/ prints a wait only for groups it issued through
`s_Gemm` (a loop schedule that issues its gemm itself, ops/wgmma_deferred_wait.py, waits
for it itself). Consecutive wgmma gemms into the same whole register accumulator (MLA's
Q K^T over the latent part, then the rope part) never wait between them: the tensor cores
order them. `TILELANG_CUDA_WGMMA_IN_FLIGHT=0` keeps only that case (each other group is waited
for in place).

The decisions ride on the kernel plan: `KernelPlan.chained_gemms` (the gemms that only
issue), `wgmma_waits_before` / `wgmma_waits_after` ({id(statement): WgmmaWait}); emit/
prints the waits around those statements and fences the registers of each accumulator a
wait completes (the compiler must not read them earlier)."""
from __future__ import annotations

from dataclasses import dataclass

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk
from tilelang.backend.cuda.analysis.facts import accesses
from tilelang.ir.buffer import storage_root


@dataclass
class WgmmaWait:
    """`wgmma.wait_group left`: completes `gemms` (the oldest groups in flight)."""
    left: int
    gemms: list
    at: str = ""    # where (the plan report): "before the statement writing dS", ...

    def describe(self) -> str:
        names = ", ".join(g.C.buffer.name for g in self.gemms)
        return f"wgmma wait_group {self.left} {self.at}: {names} complete"


def _where(st, when):
    writes = accesses(st)[1]
    what = f"the statement writing {', '.join(b.name for b in writes)}" if writes else f"a {type(st).__name__}"
    return f"{when} {what}"


def _whole(r):
    return all(E.const_int_value(x) == 0 for x in r.starts) and \
        [E.const_int_value(e) for e in r.extents] == [E.const_int_value(d) for d in r.buffer.shape]


def _opaque(st):
    """A statement whose effects the buffer accesses do not say (or that must not run
    beside a group in flight): an Evaluate, a pipelined loop, a nested kernel, a gemm
    inside it (its own waits count every group)."""
    bad = []
    walk(st, lambda m: bad.append(m) if isinstance(m, (S.Evaluate, S.KernelLaunch)) or m is not st and
         isinstance(m, TO.Gemm) or isinstance(m, S.For) and m.kind == S.PIPELINED else None)
    return bool(bad)


def _needs(st, g):
    """Whether statement `st` needs the group of wgmma gemm `g` complete."""
    reads, writes = accesses(st)
    acc = id(storage_root(g.C.buffer))
    if acc in {id(storage_root(x)) for x in reads + writes}:
        return True
    return bool({id(storage_root(g.A.buffer)), id(storage_root(g.B.buffer))} & {id(storage_root(x)) for x in writes})


def schedule(launch, plan):
    """(chained gemm ids, waits before statements, waits after statements) of the kernel."""
    chained, before, after = set(), {}, {}
    on = plan.options.wgmma_in_flight
    refilled = set()   # buffers a num_stages=1 pipeline refills right after their last reader
    copies = set()     # copy nests a pipeline issues elsewhere (not where they stand)
    in_place = set()   # gemms another schedule times: the first of a ping-pong loop (ops/tma_pipeline.py)
    for info in plan.pipelines.values():
        copies |= {id(c) for c in info.copies}
        if info.issue_after_use:
            refilled |= {id(b) for b in info.bufs}
        first = next((s for s in info.rest if isinstance(s, TO.Gemm)), None)
        if plan.options.pingpong and first is not None:
            in_place.add(id(first))

    def wg(g):
        cfg = plan.gemms.get(id(g)) if isinstance(g, TO.Gemm) else None
        p = plan.placements.get(id(g.C.buffer)) if cfg is not None else None
        return getattr(cfg, "kind", "") == "wgmma" and p is not None and p.kind == "acc"

    def same_acc(a, b):
        return a.C.buffer is b.C.buffer and _whole(a.C) and _whole(b.C)

    def reads_refilled(g):
        return bool({id(storage_root(r.buffer)) for r in (g.A, g.B)} & refilled)

    def sequence(seq):
        stmts = [s for s in seq.stmts if id(s) not in copies]
        flight = []   # gemms issued, not waited for, oldest first
        waits = {}    # index of the statement the wait goes before (len: after the last) -> WgmmaWait
        for i, st in enumerate(stmts):
            nxt = stmts[i + 1] if i + 1 < len(stmts) else None
            chained_next = wg(st) and nxt is not None and wg(nxt) and same_acc(st, nxt)
            if wg(st) and flight and same_acc(flight[-1], st) and \
                    not any(_needs(st, g) for g in flight if not same_acc(g, st)):
                flight.append(st)   # accumulates after the group in flight (tensor-core order)
                if reads_refilled(st) and not chained_next:
                    # the last of the chain reads a tile a num_stages=1 pipeline refills right
                    # after it: the chain completes there (its own wait), before the refill
                    waits[i + 1] = WgmmaWait(0, flight)
                    flight = []
                continue
            need = [j for j, g in enumerate(flight) if _opaque(st) or _needs(st, g)]
            if need:
                j = max(need)
                waits[i] = WgmmaWait(len(flight) - j - 1, flight[:j + 1])
                flight = flight[j + 1:]
            if not wg(st):
                continue
            stays = id(st) not in in_place and (on and not reads_refilled(st) or chained_next)
            flight.append(st)
            if not stays:
                waits[i + 1] = WgmmaWait(0, flight)
                flight = []
        if flight:
            waits[len(stmts)] = WgmmaWait(0, flight)
        for i, w in waits.items():
            own = i > 0 and stmts[i - 1] is w.gemms[-1]
            # a wait right after the newest gemm it completes is that gemm's own (wgmma_gemm_*)
            chained.update(id(g) for g in (w.gemms[:-1] if own else w.gemms))
            if own:
                continue
            if i < len(stmts):
                w.at = _where(stmts[i], "before")
                before[id(stmts[i])] = w
            else:
                w.at = _where(stmts[-1], "after")
                after[id(stmts[-1])] = w

    walk(launch.body, lambda n: sequence(n) if isinstance(n, S.SeqStmt) else None)
    return chained, before, after


def hoist_wgmma(launch, plan):
    """Issue each wgmma gemm (with the statement that clears its accumulator right before
    it) as early as its loop body allows: above the statements before it that neither touch
    its accumulator nor write its operands, up to the previous gemm, so that its group runs
    while they do (the FlashAttention backward's dP = V dO^T then runs beside the softmax
    recomputation P = exp2(S - lse), which waits for S only). The copies a pipelined loop
    issues ahead (plan/pipeline.py) are not where they stand and do not hold it back. Only in
    loop bodies (the shared-memory plan orders the kernel body's own statements), not in a
    T.Pipelined body whose statements the user ordered or staged, or whose single version of
    each tile is refilled after its last reader (num_stages=1): those schedules count the
    statements. Done in place on the kernel's own nodes (plan_kernels copied them) with the
    pipelines' statement lists, before the barriers are planned. Off with
    TILELANG_CUDA_WGMMA_IN_FLIGHT=0."""
    from tilelang.ir.pipeline_spec import pipeline_spec
    if not plan.options.wgmma_in_flight:
        return
    bodies, fixed = {}, set()
    copies, infos = set(), {}
    for key, info in plan.pipelines.items():
        copies |= {id(c) for c in info.copies}
        infos[key] = info

    def note(n):
        if isinstance(n, S.For):
            body = n.body
            if isinstance(body, S.IfThenElse) and body.else_body is None:   # a guarded pipelined body
                body = body.then_body
            if isinstance(body, S.SeqStmt):
                bodies[id(body)] = n
            spec = pipeline_spec(n)
            info = infos.get(id(n))
            # the depth planned, not the one asked for: a deeper loop capped to one stage so that
            # shared memory fits refills its one version after the last reader too (its copies
            # then write what the gemms read in the same iteration)
            if n.kind == S.PIPELINED and (spec.depth < 2 or spec.order is not None or spec.stage is not None or
                                          info is not None and (info.stages < 2 or info.issue_after_use)):
                fixed.add(id(body))
    walk(launch.body, note)

    def wg(g):
        cfg = plan.gemms.get(id(g)) if isinstance(g, TO.Gemm) else None
        p = plan.placements.get(id(g.C.buffer)) if cfg is not None else None
        return getattr(cfg, "kind", "") == "wgmma" and p is not None and p.kind == "acc"

    def init_of(st, g):
        reads, writes = accesses(st)
        return not reads and [id(storage_root(b)) for b in writes] == [id(storage_root(g.C.buffer))] and not _opaque(st)

    def movable(st, g):
        if id(st) in copies:
            return True
        if isinstance(st, (TO.Gemm, S.DeclBuffer)) or _opaque(st):
            return False
        found = []
        walk(st, lambda m: found.append(m) if isinstance(m, TO.Gemm) else None)
        if found or _needs(st, g):
            return False
        # nor may it write what the gemm reads besides its operands (a region's index)
        return not {id(storage_root(b)) for b in accesses(g)[0]} & {id(storage_root(b)) for b in accesses(st)[1]}

    for seq_id, loop in bodies.items():
        if seq_id in fixed:
            continue
        seq = loop.body if isinstance(loop.body, S.SeqStmt) else loop.body.then_body
        stmts = list(seq.stmts)
        moved = False
        for j, g in enumerate(stmts):
            if not wg(g):
                continue
            start = j - 1 if j > 0 and init_of(stmts[j - 1], g) else j
            k = start
            while k > 0 and movable(stmts[k - 1], g):
                k -= 1
            if k < start:
                stmts[k:j + 1] = stmts[start:j + 1] + stmts[k:start]
                moved = True
        if moved:
            seq.stmts = stmts
            info = infos.get(id(loop))
            if info is not None:   # its statements in the new order
                pos = {id(s): n for n, s in enumerate(stmts)}
                info.rest = sorted(info.rest, key=lambda s: pos.get(id(s), len(stmts)))
