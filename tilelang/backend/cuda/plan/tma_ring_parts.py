"""The pieces every schedule on a TMA ring is made of (`RingParts`): the ring's allocation and
barrier initialisation, the prologue, one iteration's loads into a slot, the wait for a slot,
the slot and phase counters, the invalidation after the loop. Used by the schedules of the pass
`pipeline_tma_ring`: plan/tma_ring_pipeline.py (slot by slot), plan/tma_ring_wgmma.py (a wgmma
group in flight), plan/warp_specialized_ring.py (producer and consumers), plan/attention_overlap_ring.py (two
rings, the attention overlap)."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import mbarrier as M
from tilelang.ir import stmt as S
from tilelang.ir.buffer import Buffer
from tilelang.ir.visitor import substitute
from tilelang.ir.tma_ring import TmaRingAlloc, TmaPrefetchDescriptors, TmaRingLoad, TmaPrefetchL2, TmaRingInvalidate
from tilelang.arith.simplify import simplify


def thread_zero(launch):
    """`the block's first thread` over the launch's thread variables."""
    conds = [E.binop("==", v, E.IntImm(0, v.dtype)) for v in launch.thread_vars]
    out = conds[0]
    for c in conds[1:]:
        out = E.binop("&&", out, c)
    return out


def linear_thread(launch):
    """The thread's index in the block (x fastest) over the launch's thread variables."""
    out, n = launch.thread_vars[0], E.const_int_value(launch.threads[0])
    for v, m in zip(launch.thread_vars[1:], launch.threads[1:]):
        out = E.binop("+", out, E.binop("*", v, E.IntImm(n, v.dtype)))
        n *= E.const_int_value(m)
    return out


def slot_of(b, i):
    """Element `i` of a ring's per-slot buffer (a barrier, a counter)."""
    return E.BufferLoad(b, [i])


class RingParts:
    """The pieces of a schedule on ring `ring` of pipelined loop `loop` (`k`: the kernel;
    `rank`: the block's rank in its pair, for multicast loads); each instance has its own
    slot and phase counters."""

    def __init__(self, k, loop, info, ring, rank=None):
        self.k, self.loop, self.info, self.ring, self.rank = k, loop, info, ring, rank
        self.var, self.i32 = loop.var, loop.var.dtype
        self.lo, self.hi = loop.min, simplify(loop.min + loop.extent)
        self.first = thread_zero(k.launch)
        self.names = ", ".join(b.name for b in info.bufs)
        stage = Buffer("ring_stage", (1,), "int32", "local.var", init=E.IntImm(0, "int32"))
        phase = Buffer("ring_phase", (1,), "uint32", "local.var", init=E.IntImm(0, "uint32"))
        from tilelang.backend.cuda.plan.kernel import local_placement
        for b in (stage, phase):   # per-thread scalars, placed as the plan places a T.alloc_var
            k.plan.placements[id(b)] = local_placement(b)
        self.stage, self.phase = stage, phase
        self.st, self.ph = slot_of(stage, E.IntImm(0, self.i32)), slot_of(phase, E.IntImm(0, self.i32))

    def barrier(self, why, fenced=None):
        fenced = self.k.plan.fence_barriers if fenced is None else fenced
        return S.Barrier("block", reason=why, fence_async_proxy=fenced)

    def top_barrier(self, why):
        """The barrier at the top of an iteration of a body that writes memory (ring_mode
        "barrier"), fenced toward the async proxy only where the body's last shared write is
        not followed by a fenced barrier of its own (plan/proxy_fences.py `writes_fenced_within`;
        TILELANG_CUDA_RING_TOP_FENCE=1 always fences)."""
        from tilelang.backend.cuda.plan.proxy_fences import writes_fenced_within
        k = self.k
        fenced = k.plan.fence_barriers and (k.options.ring_top_fence or not writes_fenced_within(self.info.rest))
        return self.barrier(why, fenced)

    def issue(self, kexpr, slot, guarded=True):
        """One thread: iteration `kexpr`'s loads into `slot`, announced on full[slot]
        (`guarded`: a masked iteration is an empty round; else the caller skipped it)."""
        ring, info, var, i32 = self.ring, self.info, self.var, self.i32
        full = slot_of(ring.full, slot)
        kt = E.Var("ring_k", i32)
        loads = [TmaRingLoad(ring, i, substitute(c, {var: kt}), slot, full, self.rank)
                 for i, c in enumerate(info.copies)]
        expect = S.Evaluate(M.call(M.ARRIVE_EXPECT_TX, full, ring.nbytes))
        if info.guard is None or not guarded:   # (the bytes announced first, as ptxas schedules it best)
            out = [expect, S.LetStmt(kt, kexpr, S.seq(loads))]
        else:   # a skipped iteration: an empty round (the waits and releases count alike)
            out = [S.LetStmt(kt, kexpr, S.IfThenElse(E.Not(substitute(info.guard, {var: kt})),
                                                      S.Evaluate(M.call(M.ARRIVE, full)),
                                                      S.seq([expect] + loads)))]
        ahead = self.k.options.tma_l2_prefetch
        if ahead:   # the tiles of iteration kexpr + ahead into L2
            kp = E.Var("ring_kp", i32)
            out.append(S.IfThenElse(E.binop("<", simplify(kexpr + ahead), self.hi), S.LetStmt(
                kp, simplify(kexpr + ahead),
                S.seq([TmaPrefetchL2(ring, i, substitute(c, {var: kp})) for i, c in enumerate(info.copies)]))))
        return S.seq(out)

    def init(self, empty_count=None):
        """Thread 0 prefetches the tensor maps and initializes the barriers (and counters)."""
        ring, i32, ns = self.ring, self.i32, self.ring.stages
        s = E.Var("ring_s", i32)
        per_slot = [S.Evaluate(M.call(M.INIT, slot_of(ring.full, s), 1))]
        if ring.empty is not None:
            per_slot.append(S.Evaluate(M.call(M.INIT, slot_of(ring.empty, s), empty_count)))
        else:
            per_slot.append(S.BufferStore(ring.released, E.IntImm(0, ring.released.dtype), [s]))
        return [TmaRingAlloc(ring), S.IfThenElse(self.first, S.seq([
            TmaPrefetchDescriptors(ring),
            S.For(s, E.IntImm(0, i32), E.IntImm(ns, i32), S.SERIAL, S.seq(per_slot)),
            S.Evaluate(M.call(M.FENCE_INIT))])),
            self.barrier(f"the TMA ring's mbarriers for {self.names} are initialized")]

    def prologue(self):
        """Thread 0 fills every slot: the iterations lo .. lo + stages - 1 that exist."""
        p = E.Var("ring_p", self.i32)
        return S.IfThenElse(self.first, S.For(p, E.IntImm(0, self.i32), E.IntImm(self.ring.stages, self.i32), S.SERIAL,
                                              S.IfThenElse(E.binop("<", simplify(self.lo + p), self.hi),
                                                           self.issue(simplify(self.lo + p), p))))

    def wait_full(self):
        return S.Evaluate(M.call(M.WAIT_PARITY, slot_of(self.ring.full, self.st), self.ph))

    def advance(self):
        """The next slot; past the last one, the first with the other phase."""
        i32, ns = self.i32, self.ring.stages
        return [S.BufferStore(self.stage, self.st + 1, [E.IntImm(0, i32)]),
                S.IfThenElse(E.binop("==", self.st, E.IntImm(ns, i32)), S.seq([
                    S.BufferStore(self.stage, E.IntImm(0, "int32"), [E.IntImm(0, i32)]),
                    S.BufferStore(self.phase, E.binop("^", self.ph, E.IntImm(1, "uint32")), [E.IntImm(0, i32)])]))]

    def loop_over(self, body):
        """The loop over the ring (in the pipelined loop's variable and bounds) with its
        slot and phase counters."""
        main = S.For(self.var, self.loop.min, self.loop.extent, S.SERIAL, S.seq(body))
        main.span = self.loop.span
        return [S.DeclBuffer(self.stage), S.DeclBuffer(self.phase), main]

    def invalidate(self):
        return S.IfThenElse(self.first, TmaRingInvalidate(self.ring))


__all__ = ["RingParts", "slot_of", "linear_thread", "thread_zero"]
