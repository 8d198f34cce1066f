"""Warp-level tensor-core operations: a GEMM written warp by warp (the published
`TensorCoreIntrinEmitter`). Each op acts on every warp of the block at once, on
per-thread register arrays (`local` buffers) laid out as `layout/mma_tiling.py`
describes; the CPU reference is `transform/lower_warp_mma.py`, the CUDA lowering
`backend/cuda/ops/warp_mma.py`.

They are `OperandOp`s: generic passes walk, rebuild, print and analyse them through
the operand fields and read/write lists each op declares."""
from __future__ import annotations

from tilelang.ir.operand_op import OperandOp


class WarpOp(OperandOp):
    """Base: `tiling` is a `WarpMmaTiling`."""

    def attrs(self):
        return {"tiling": self.tiling}


class WarpMmaLoad(WarpOp):
    """Fill operand registers for one K step: `operand` "A" loads `warp_rows` atoms of
    the (block_m x micro_k) slice of `src` at K offset `k_offset` (B: `warp_cols` atoms
    of block_n x micro_k) into `dst`. `src` is a 2-D (or leading-index) region of a
    shared buffer, stored M x K (K x M when the operand is transposed)."""
    op_name = "warp_mma_load"
    fields = ("dst", "src", "k_offset")

    def __init__(self, operand, dst, src, k_offset, tiling):
        self._init()
        assert operand in ("A", "B")
        self.operand, self.dst, self.src, self.k_offset, self.tiling = operand, dst, src, k_offset, tiling

    def attrs(self):
        return {"operand": self.operand, "tiling": self.tiling}

    def reads(self):
        return [self.src.buffer]

    def writes(self):
        return [self.dst]


class WarpMma(WarpOp):
    """C registers += A registers x B registers, for every atom of every warp; with
    `atom` = (i, j) (the emitter's `mma_atom`), only atom row i x atom column j."""
    op_name = "warp_mma"
    fields = ("A", "B", "C", "atom_m", "atom_n")

    def __init__(self, A, B, C, tiling, atom=None):
        self._init()
        self.A, self.B, self.C, self.tiling = A, B, C, tiling
        self.atom_m, self.atom_n = atom if atom is not None else (None, None)

    def reads(self):
        return [self.A, self.B, self.C]

    def writes(self):
        return [self.C]


class WarpMmaStore(WarpOp):
    """Write C registers to the buffer `dst`: 2-D (the block_m x block_n tile at
    (`row0`, `col0`), 0 when not given; e.g. a block's tile of a global matrix) or 4-D,
    indexed [atom row, atom col, row in atom, col in atom]."""
    op_name = "warp_mma_store"
    fields = ("src", "dst", "row0", "col0")

    def __init__(self, src, dst, tiling, row0=None, col0=None):
        self._init()
        self.src, self.dst, self.tiling, self.row0, self.col0 = src, dst, tiling, row0, col0

    def reads(self):
        return [self.src]

    def writes(self):
        return [self.dst]
