"""The record plan/copy_forms.py leaves on each cooperative nest (a copy, a fill, an
element-wise loop, the SIMT gemm) and on a T.tma_copy it issues in bulk: how it runs
(`CopyForm`, annotation `copy_form`). A module of its own so that the ops/ emitters read
the record without importing the pass that writes it."""
from __future__ import annotations

from dataclasses import dataclass

from tilelang.ir import stmt as S

COPY_FORM = "copy_form"

_TITLES = {"tma_load": "TMA load", "tma_store": "TMA store", "tma_ring": "TMA ring (pipelined)",
           "cp_async": "cp.async", "cp_async_wait": "cp.async + wait", "vector": "vector", "scalar": "scalar",
           "registers": "registers", "tma_copy": "TMA load (T.tma_copy, on its mbarrier)",
           "cp_async_mbarrier": "T.tma_copy as cp.async arriving on its mbarrier",
           "tma_reduce": "TMA reduction (one bulk add of the tile)",
           "per_thread": "per-thread", "atomic_lanes": "vector atomic"}


@dataclass(frozen=True)
class CopyForm:
    kind: str                  # a key of _TITLES
    width: int | None = None   # elements per instruction (cp_async, cp_async_wait, cp_async_mbarrier, vector,
                               # atomic_lanes)
    nbytes: int | None = None  # bytes per instruction (cp_async, cp_async_wait, vector)
    eviction: str | None = None   # "evict_first" ...: the L2 hint of its global accesses
    why: str = ""              # for a scalar form: why no vector form holds
    subject: str = "copy"      # what the nest does: "copy", "fill", "loop" (element-wise), "SIMT gemm",
                               # "atomic" (a T.atomic_addx{n} lane loop)
    multicast: int | None = None   # tma_copy: the cluster ranks its lowest-ranked one multicasts to
    in_bounds: bool = False    # cp_async with a zero-fill guard no enclosing loop changes: each guarded
                               # dimension indexed `guard ? i : 0` (ops/vector_copy.py in_bounds_source)

    @property
    def tma(self):
        return self.kind in ("tma_load", "tma_store", "tma_ring", "tma_copy", "tma_reduce")

    def __str__(self):
        s = _TITLES[self.kind]
        if self.width:
            s += f" x{self.width} ({self.nbytes} B)"
        if self.eviction:
            s += f", {self.eviction}"
        if self.in_bounds:
            s += ", guarded rows indexed in bounds"
        if self.multicast:
            s += f", multicast to cluster ranks {self.multicast:#b}"
        if self.why:
            s += f" ({self.why})"
        return s


def copy_form(st):
    """The CopyForm this pass recorded on nest `st`, or None."""
    return st.annotations.get(COPY_FORM) if isinstance(st, S.For) else None
