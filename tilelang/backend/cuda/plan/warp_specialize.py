"""Automatic warp specialization of a T.Pipelined loop on Hopper, as a pass
(`plan_warp_specialize`, after plan_copy_forms whose forms it reads).

A kernel whose pipelined loop is fed only by bulk tensor copies (the "TMA ring" form of
plan/copy_forms.py) and whose body only runs wgmma gemms gets one more warpgroup, the
producer: its elected thread waits for a ring slot to be released ("empty" mbarrier),
announces the bytes on the slot's "full" mbarrier and issues the TMA loads of the next
iteration into it; the user's threads (the consumers) wait "full", run the gemms and
release the slot. The producer is the LAST warpgroup (threads T .. T+127 of a kernel
written for T threads), so a user's thread index keeps its meaning in consumer code
without remapping; every barrier of consumer code becomes a named barrier of the T
consumer threads (never __syncthreads, which would wait for the producer). With two or
more consumer warpgroups the registers are split (`setmaxnreg`): the producer drops to
24, the consumers take what the register file leaves (240 for T = 256).

The decision is recorded in the kernel plan (`KernelPlan.warp_specialized`, a
`WarpSpecialization`, printed by plan/report.py under `with T.Kernel(...)` and so in the
lower trace); for a kernel that does not qualify the plan says why
(`KernelPlan.warp_specialize_why`, printed, not warned: the loop still runs well). The pass
pipeline_tma_ring writes the two roles into the IR from that record
(plan/warp_specialized_ring.py: `T.producer_warpgroup`, the consumers' loop).

What qualifies (else the loop keeps the single-role TMA ring):
- an sm_90 target, the pass config `tl.disable_warp_specialized` unset (and the switch
  TILELANG_CUDA_WARP_SPECIALIZE not 0);
- one-dimensional threads, a multiple of 128, and T + 128 <= 1024;
- no warp specialization written by the user (thread-index branches, T.set_max_nreg,
  T.alloc_barrier, user cp.async groups), no thread-block cluster;
- exactly one T.Pipelined loop, at the top level of the kernel body (not under a loop or
  branch: the producer runs ahead of everything the consumers do), planned as a pipeline
  whose copies are all on the TMA ring;
- the body (possibly under one `if cond:` the whole block agrees on, e.g. a block-sparse
  mask: then both roles skip the masked iterations) runs wgmma gemms with register
  accumulators and nothing else, or besides them converts a tile the ring loads (a
  dequantizing GEMM: the packed tile into the gemm's shared or register operand), which
  the consumers then do alone, or reads one (attention backward: the `lse` and `Delta`
  rows beside Q and dO) (its block barriers become their named barrier; a
  numbered barrier of the user's, a block-wide vote (`__syncthreads_count`) or a nested
  pipelined loop keep the single-role ring). Attention's softmax between its gemms reads
  no ring tile: it keeps the ring's own schedules (warpgroup ping-pong, plan/overlap.py);
- the body writes no ring buffer and no global tensor the ring's copies read (its
  other global writes, attention backward's dQ atomics, are the consumers' own);
- what the copies, the bounds and `cond` read is known at the kernel's start (block
  indices, parameters, the loop variable), since the producer starts there;
- no shared buffer that the code before the loop uses shares storage with the ring's
  buffers (the producer writes the ring while consumers run that code)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk, collect_vars
from tilelang.transform.pass_manager import function_pass
from tilelang.backend.cuda.target import arch_number
from tilelang.backend.cuda.plan.attention_warp_specialize import attention_body_why
from tilelang.backend.cuda.plan.kernel import wgmma_into_registers

PRODUCER_THREADS = 128      # one warpgroup: setmaxnreg works per warpgroup
PRODUCER_REGS = 24          # the producer only computes coordinates and waits
REGISTER_FILE = 65536       # 32-bit registers per SM (one block per SM once specialized)
MAX_REGS = 240              # what one consumer thread may take (setmaxnreg's ceiling is 256)


@dataclass(frozen=True)
class WarpSpecialization:
    """A T.Pipelined loop split into a producer warpgroup and the consumer threads."""
    loop: int                 # id() of the T.Pipelined loop (the plan's convention)
    loop_var: str             # its variable, for the report
    stages: int               # ring slots
    consumer_threads: int     # the user's threads: 0 .. consumer_threads - 1
    barrier_id: int           # the consumers' named barrier (their block barriers)
    producer_regs: int = 0    # setmaxnreg.dec of the producer (0: no register split)
    consumer_regs: int = 0    # setmaxnreg.inc of the consumers
    in_flight: bool = False   # one gemm per iteration: its group stays in flight, the previous slot is released
    guarded: bool = False     # the body is under `if cond:`: both roles skip iterations where it fails
    # (buffer, value) of the T.alloc_var scalars the producer computes itself (producer_scalars)
    producer_scalars: tuple = field(default=(), compare=False)

    @property
    def producer_threads(self) -> int:
        return PRODUCER_THREADS

    @property
    def launch_threads(self) -> int:
        return self.consumer_threads + PRODUCER_THREADS

    def describe(self) -> str:
        regs = (f", registers: producer {self.producer_regs}, consumers {self.consumer_regs} (setmaxnreg)"
                if self.producer_regs else ", no register split (one consumer warpgroup)")
        how = "one wgmma group in flight, the previous iteration's slot released" if self.in_flight else "slot released after the body"
        guard = ", masked iterations skipped by both" if self.guarded else ""
        if self.producer_scalars:
            guard += f"; the producer computes {', '.join(b.name for b, _ in self.producer_scalars)} itself"
        return (f"warp-specialized loop over {self.loop_var}: {self.launch_threads} threads launched, producer "
                f"threads {self.consumer_threads}..{self.launch_threads - 1} (one elected thread issues the TMA "
                f"loads of {self.stages} slots), consumers 0..{self.consumer_threads - 1} with named barrier "
                f"{self.barrier_id}{regs}; {how}{guard}")


def register_split(consumers: int):
    """(producer, consumer) registers per thread, or (0, 0) when one consumer warpgroup
    has enough without a split (the launch bound already allows it 255)."""
    if consumers < 256:
        return 0, 0
    per = (REGISTER_FILE - PRODUCER_THREADS * PRODUCER_REGS) // consumers // 8 * 8
    return PRODUCER_REGS, min(MAX_REGS, per)


def decide(launch, plan, options, arch):
    """(WarpSpecialization or None, the reason when None; None when nothing asks for it)."""
    from tilelang.backend.cuda.plan.copy_form import copy_form
    loops = []
    walk(launch.body, lambda n: loops.append(n) if isinstance(n, S.For) and n.kind == S.PIPELINED else None)
    if not loops:
        return None, None
    if not getattr(options, "warp_specialize", True):
        return None, "switched off (pass config tl.disable_warp_specialized or TILELANG_CUDA_WARP_SPECIALIZE=0)"
    if arch is None or arch_number(arch) != 90:
        return None, None   # a Hopper feature: nothing to say elsewhere
    T = plan.nthreads
    if len(launch.threads) != 1 or T % 128 or T + PRODUCER_THREADS > 1024:
        return None, f"{T} threads: needs one-dimensional threads, a multiple of 128, and room for 128 more"
    if plan.regions.branches or plan.sets_max_nreg or plan.user_cp_async or \
            any(d.buffer.scope == "shared.barrier" for d in _nodes(launch, S.DeclBuffer)):
        return None, "the kernel specializes its warps (or synchronizes with mbarriers) itself"
    if launch.annotations.get("cluster_dims") or options.tma_multicast:
        return None, "the kernel runs in thread-block clusters (or TMA multicast is asked for)"
    if len(loops) != 1:
        return None, f"{len(loops)} pipelined loops (one is specialized at most)"
    loop = loops[0]
    info = plan.pipelines.get(id(loop))
    if info is None or not info.copies:
        return None, "the pipelined loop has no copies issued ahead"
    if not all(getattr(copy_form(c), "kind", None) == "tma_ring" for c in info.copies):
        return None, "not every copy of the pipelined loop is a TMA ring load"
    if not _top_level(launch.body, loop):
        return None, "the pipelined loop is nested in another loop or a branch"
    body = [s for s in info.rest if not isinstance(s, S.DeclBuffer)]
    why = _ring_hazard(body, info)
    if why:
        return None, why
    gemms = [g for s in body for g in _nodes_of(s, TO.Gemm)]
    if not gemms or not all(wgmma_into_registers(plan, g) for g in gemms) or not _converts_ring_tiles(body, info):
        # attention (softmax between its gemms): plan/attention_warp_specialize.py decides
        why = attention_body_why(body, info, plan, options) if gemms else \
            "the pipelined body does more than wgmma gemms into register accumulators"
        if why:
            return None, why
    in_flight = len(info.rest) == 1 and isinstance(info.rest[0], TO.Gemm)
    if in_flight and plan.gemms[id(gemms[0])].a_regs:
        return None, "the body's one gemm reads its A operand from registers"
    why = _consumers_only(body)
    if why:
        return None, why
    inside = _defined_inside(launch) - {id(loop.var)}
    reads = [loop.min, loop.extent] + list(info.copies) + ([info.guard] if info.guard is not None else [])
    late = sorted({v.name for r in reads for v in collect_vars(r) if id(v) in inside - _bound_in(r)})
    # a scalar the kernel keeps in a buffer of its own (T.alloc_var: a grouped GEMM's row offset,
    # a paged cache's loop count, read from a tensor before the loop) is not there when the
    # producer starts: it computes it itself where the value is a function of what the kernel
    # starts with (producer_scalars)
    declared = {id(d.buffer) for d in _nodes(launch, S.DeclBuffer)}
    kept = {id(n.buffer): n.buffer for r in reads for n in _nodes_of(r, E.BufferLoad) if id(n.buffer) in declared}
    scalars = producer_scalars(launch, loop, list(kept.values()), inside) if kept and not late else ()
    if late or scalars is None:
        late += sorted(b.name for b in kept.values())
        return None, f"the copies' indices read {', '.join(late)}, which the kernel computes before the loop"
    if _ring_shares_storage(launch, plan, info, loop):
        return None, "the ring's shared buffers share storage with buffers the code before the loop uses"
    taken = {E.const_int_value(n.barrier_id) for n in _nodes(launch, S.Barrier) if n.barrier_id is not None}
    free = [i for i in range(1, 16) if i not in taken]
    if not free:
        return None, "no free named barrier for the consumers"
    pr, cr = register_split(T)
    return WarpSpecialization(id(loop), loop.var.name, info.stages, T, free[0], pr, cr, in_flight,
                              info.guard is not None, tuple(scalars)), None


def producer_scalars(launch, loop, bufs, inside):
    """The scalars `bufs` (T.alloc_var buffers the loop's bounds or copies read) as
    [(buffer, value)] in the order the kernel computes them before `loop`, each value
    reading only block indices, parameters, tensors the kernel does not write and scalars
    earlier in the list, so that the producer computes them itself at its start; None when
    one is not such a scalar (stored more than once, in a branch or a loop, from a value
    that differs between threads or changes while the kernel runs)."""
    from tilelang.backend.cuda.analysis.facts import accesses
    before = _before(launch.body, loop)
    stores = {}
    for n in _nodes(launch, S.BufferStore):
        stores.setdefault(id(n.buffer), []).append(n)
    written = {id(b) for n in _nodes(launch, S.Stmt) if not isinstance(n, (S.SeqStmt, S.DeclBuffer))
               for b in accesses(n)[1]}
    chosen, todo = {}, list(bufs)
    while todo:
        b = todo.pop()
        if id(b) in chosen:
            continue
        st = stores.get(id(b), [])
        if b.scope != "local.var" or len(st) != 1 or not any(x is st[0] for x in before):
            return None
        value = st[0].value
        if any(id(v) in inside for v in collect_vars(value)):
            return None   # a thread index, a loop's variable, a let-bound value
        for ld in _nodes_of(value, E.BufferLoad):
            if ld.buffer.scope == "local.var":
                todo.append(ld.buffer)
            elif ld.buffer.scope != "global" or id(ld.buffer) in written:
                return None
        chosen[id(b)] = (b, value)
    order = {id(x): i for i, x in enumerate(before)}
    return sorted(chosen.values(), key=lambda bv: order[id(stores[id(bv[0])][0])])


def _ring_hazard(body, info):
    """Why the producer could not run ahead of `body`, or "": the body writes a buffer the
    ring fills, or a global tensor the ring's copies read (the producer may have loaded
    an iteration's tile before an earlier iteration stored into it). Other global writes
    (attention backward's dQ atomics) are the consumers' own."""
    from tilelang.backend.cuda.analysis.facts import accesses
    ring = {id(b) for b in info.bufs}
    read = {id(b) for c in info.copies for b in accesses(c)[0] if b.scope == "global"}
    for s in body:
        for b in accesses(s)[1]:
            if id(b) in ring:
                return f"the pipelined body writes {b.name}, which the TMA ring loads"
            if id(b) in read:
                return f"the pipelined body writes the global tensor {b.name}, which the ring's copies read"
    return ""


def _converts_ring_tiles(body, info):
    """Whether the body is only gemms, or what else it does reads a tile the ring loads
    (a dequantizing GEMM: the packed tile converted into the gemm's operand, which the
    consumers do while the producer loads ahead). Other bodies (attention's softmax between
    its gemms) keep the single-role ring and its own schedules (warpgroup ping-pong,
    plan/overlap.py)."""
    from tilelang.backend.cuda.analysis.facts import accesses
    others = [s for s in body if not isinstance(s, (TO.Gemm, S.Barrier))]
    ring = {id(b) for b in info.bufs}
    return not others or any(id(b) in ring for s in others for b in accesses(s)[0])


# calls whose barrier counts every thread of the block (the producer too)
_BLOCK_WIDE_CALLS = {"tl.syncthreads_count", "tl.syncthreads_and", "tl.syncthreads_or"}


def _consumers_only(body):
    """Why the consumer threads alone could not run `body` (the statements of a pipelined
    loop besides its ring copies: a dequantizing GEMM's conversion of the packed tile, the
    gemms), or "". Block barriers the compiler prints become the consumers' named barrier
    (KernelCodegen.sync); a barrier the user numbered, or a block-wide vote, counts
    threads that would include the producer."""
    for s in body:
        for n in _nodes_of(s, (S.Barrier, E.Call, S.For)):
            if isinstance(n, S.Barrier) and n.kind != "warp" and n.barrier_id is not None:
                return "the pipelined body synchronizes a numbered barrier of its own"
            if isinstance(n, E.Call) and n.name in _BLOCK_WIDE_CALLS:
                return f"the pipelined body calls {n.name}, which counts every thread of the block"
            if isinstance(n, S.For) and n.kind == S.PIPELINED:
                return "the pipelined body holds another pipelined loop"
    return ""


def _nodes(launch, cls):
    out = []
    walk(launch.body, lambda n: out.append(n) if isinstance(n, cls) else None)
    return out


def _nodes_of(node, cls):
    out = []
    walk(node, lambda n: out.append(n) if isinstance(n, cls) else None)
    return out


def _top_level(body, loop):
    """Whether `loop` is reached from the kernel body through statement sequences only."""
    if body is loop:
        return True
    if isinstance(body, S.SeqStmt):
        return any(_top_level(s, loop) for s in body.stmts)
    return False


def _before(body, loop):
    """The statements that run before the top-level `loop` (sequences flattened)."""
    out = []

    def go(n):
        if n is loop:
            return True
        if isinstance(n, S.SeqStmt):
            return any(go(s) for s in n.stmts)
        out.append(n)
        return False
    go(body)
    return out


def _defined_inside(launch):
    """ids of the variables the kernel body binds (loops, lets, thread indices)."""
    out = {id(v) for v in launch.thread_vars}

    def f(n):
        if isinstance(n, (S.For, S.LetStmt)):
            out.add(id(n.var))
    walk(launch.body, f)
    return out


def _bound_in(node):
    """ids of the variables `node` binds itself (a copy nest's loop variables)."""
    out = set()
    walk(node, lambda n: out.add(id(n.var)) if isinstance(n, (S.For, S.LetStmt)) else None)
    return out


def _ring_shares_storage(launch, plan, info, loop):
    """Whether a buffer that the code before the loop touches shares storage with the
    ring (the producer fills the ring while the consumers run that code). A buffer used
    only after the loop may: the consumers leave the loop once every load has landed and
    been read (the epilogue's staging tile over the A ring, as the published package
    places it)."""
    from tilelang.backend.cuda.analysis.facts import accesses
    touched = {id(b) for s in _before(launch.body, loop) for group in accesses(s) for b in group}
    ring = {id(b) for b in info.bufs}
    spans = [(p.offset, p.offset + p.stage_bytes * p.stages)
             for b in info.bufs for p in [plan.placements[id(b)]]]
    for d in _nodes(launch, S.DeclBuffer):
        p = plan.placements.get(id(d.buffer))
        if id(d.buffer) in ring or p is None or p.kind != "smem" or id(d.buffer) not in touched:
            continue
        lo, hi = p.offset, p.offset + p.stage_bytes * p.stages
        if any(lo < b and a < hi for a, b in spans):
            return True
    return False


@function_pass("plan_warp_specialize")
def plan_warp_specialize(func, ctx=None):
    from tilelang.backend.cuda.plan.plan_kernels import map_planned_launches, with_plan

    def rewrite(launch, plan, target, options):
        if plan.warp_specialized is None:   # (decided once: it sets sets_max_nreg)
            ws, why = decide(launch, plan, options, target.arch)
            if ws is not None or why is not None:
                new = dataclasses.replace(plan, warp_specialized=ws, warp_specialize_why=why or "",
                                          sets_max_nreg=plan.sets_max_nreg or bool(ws and ws.producer_regs))
                launch = with_plan(launch, new)
        return launch
    return map_planned_launches(func, ctx, rewrite)


__all__ = ["WarpSpecialization", "decide", "register_split", "plan_warp_specialize"]
