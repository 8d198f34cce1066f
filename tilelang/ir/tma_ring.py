"""The statements of a TMA ring (bulk tensor copies feeding a software-pipelined loop
through `stages` slots of shared memory, each slot with an mbarrier that counts the
copies' bytes), as a backend's pipelining pass writes them (backend/cuda/plan/
tma_ring_pipeline.py). The ring's waits, arrivals and barrier initialisation are the
ordinary mbarrier calls of ir/mbarrier.py on the ring's `full` barriers; what is left
here has no T-level spelling: the ring's allocation, the tensor-map prefetch, a bulk
tensor copy of one iteration into one slot, its L2 prefetch, the slot release and the
invalidation of the barriers after the loop.

`TmaRing` is the record the ring's statements share (not a node): the copy nests of the
pipelined loop (in its original loop variable) whose tensor maps the ring uses, the ring
buffers they fill, the barrier buffers and the slot count. A slot is given back either
through release counters (the warp completing a round refills it) or through "empty"
mbarriers that a refilling thread waits on (TMA multicast: the warps of both blocks of a
pair release it); with multicast each block loads part of some tiles for both."""
from __future__ import annotations

from tilelang.ir.buffer import Buffer
from tilelang.ir.operand_op import OperandOp

# (released[slot], warps): lane 0 of each warp counts its warp out of the slot; true for
# the warp whose arrival completes the round (include/tl_cuda/tma.h slot_release_last)
SLOT_RELEASE_LAST = "tl.tma_slot_release_last"


class TmaRing:
    """A TMA ring of one pipelined loop: `copies` (the loop's copy nests, in `var`),
    the ring `bufs` they fill, `full` (uint64 mbarriers, one per slot), either `released`
    (uint32 release counters, one per slot) or `empty` (uint64 mbarriers, one per slot),
    `stages` slots, `nbytes` per round; `multicast`: {copy index: "strips" | "rows"}
    for the copies each block of a pair loads half of (ops/tma.py `plan_multicast`)."""

    def __init__(self, var, copies, bufs, full, released, stages, nbytes, empty=None, multicast=None):
        self.var, self.copies, self.bufs = var, list(copies), list(bufs)
        self.full, self.released, self.stages, self.nbytes = full, released, int(stages), int(nbytes)
        self.empty, self.multicast = empty, dict(multicast or {})
        for b in (full, released, empty):   # ops/sync_calls.py: no proxy fence on these
            if b is not None:
                b.tma_ring = True

    @staticmethod
    def barriers(stages, name="ring_full", counters="ring_released"):
        return Buffer(name, (stages,), "uint64", "shared"), Buffer(counters, (stages,), "uint32", "shared")

    @staticmethod
    def empty_barriers(stages, name="ring_empty"):
        return Buffer(name, (stages,), "uint64", "shared")


class _RingOp(OperandOp):
    positional = True

    def attrs(self):
        return {}

    def children(self):   # (the fields a ring leaves out are None)
        return [c for c in super().children() if c is not None]

    def map_children(self, fn):
        return super().map_children(lambda c: c if c is None else fn(c))


class TmaRingAlloc(_RingOp):
    """The ring's barriers and counters in shared memory (after the kernel's buffers)."""
    op_name = "tma_ring_alloc"
    fields = ("full", "empty", "released")

    def __init__(self, ring):
        self._init()
        self.ring, self.full, self.empty, self.released = ring, ring.full, ring.empty, ring.released

    def attrs(self):
        return {"stages": self.ring.stages}


class TmaPrefetchDescriptors(_RingOp):
    """One thread: the tensor maps of the ring's copies into the descriptor cache."""
    op_name = "tma_prefetch_descriptors"
    fields = ()

    def __init__(self, ring):
        self._init()
        self.ring = ring

    def print_with(self, p):
        return f"T.tma_prefetch_descriptors({', '.join(p.buf(c) for c in _srcs(self.ring))})"


class TmaRingLoad(_RingOp):
    """One thread: the bulk tensor copies of copy nest `copy` (number `index` of the
    ring's, its loop variable replaced by the iteration it loads) into ring slot `slot`,
    completing on mbarrier `barrier`. `rank` (the block's rank in its pair), for a copy in
    the ring's `multicast`: this block's half, multicast to both blocks."""
    op_name = "tma_load"
    fields = ("copy", "slot", "barrier", "rank")

    def __init__(self, ring, index, copy, slot, barrier, rank=None):
        self._init()
        self.ring, self.index, self.copy, self.slot, self.barrier = ring, index, copy, slot, barrier
        self.rank = rank if index in ring.multicast else None

    def reads(self):
        return [_srcs(self.ring)[self.index]]

    def writes(self):
        return [self.ring.bufs[self.index]]

    def print_with(self, p):
        from tilelang.ir.visitor import walk
        from tilelang.ir import stmt as S
        stores = []
        walk(self.copy, lambda n: stores.append(n) if isinstance(n, S.BufferStore) and not stores else None)
        src = p.expr(stores[0].value) if stores else p.buf(_srcs(self.ring)[self.index])
        mc = (f", multicast={self.ring.multicast[self.index]!r}, rank={p.expr(self.rank)}"
              if self.rank is not None else "")
        return (f"T.tma_load({src}, {p.buf(self.ring.bufs[self.index])}, slot={p.expr(self.slot)}, "
                f"barrier={p.expr(self.barrier)}{mc})")


class TmaPrefetchL2(_RingOp):
    """One thread: the boxes copy nest `copy` (as TmaRingLoad) will load, into L2."""
    op_name = "tma_prefetch_l2"
    fields = ("copy",)

    def __init__(self, ring, index, copy):
        self._init()
        self.ring, self.index, self.copy = ring, index, copy

    def print_with(self, p):
        return f"T.tma_prefetch_l2({p.buf(_srcs(self.ring)[self.index])})  # the next tiles, into L2"


class TmaRingInvalidate(_RingOp):
    """One thread, after the loop and a block barrier: the ring's mbarriers invalidated
    (they may be initialised again, e.g. by an outer loop)."""
    op_name = "tma_ring_invalidate"
    fields = ("full", "empty")

    def __init__(self, ring):
        self._init()
        self.ring, self.full, self.empty = ring, ring.full, ring.empty


def _srcs(ring):
    """The global tensor each copy of the ring reads."""
    from tilelang.ir.visitor import walk
    from tilelang.ir import expr as E
    out = []
    for c in ring.copies:
        found = []
        walk(c, lambda n: found.append(n.buffer) if isinstance(n, E.BufferLoad) and n.buffer.scope == "global"
             and not found else None)
        out.append(found[0] if found else ring.bufs[len(out)])
    return out


__all__ = ["TmaRing", "TmaRingAlloc", "TmaPrefetchDescriptors", "TmaRingLoad", "TmaPrefetchL2",
           "TmaRingInvalidate", "SLOT_RELEASE_LAST"]
