"""How a block's warps tile a GEMM written warp by warp (the published
`TensorCoreIntrinEmitter` style): `block_row_warps x block_col_warps` warps, each
owning a `warp_row_tiles x warp_col_tiles` piece of C made of mma atoms of
`micro_m x micro_n` (16 x 16, or 16 x 8), stepping K by `micro_k` (16 for 16-bit
inputs, 32 for 8-bit ones).

Every thread keeps its registers in plain per-thread arrays:
- A: `warp_rows` atoms of `local_size_a` slots (16 x micro_k tile, mma A fragment);
- B: `warp_cols` atoms of `local_size_b` slots; a 16-wide atom is two n8 halves,
  the first `local_size_b / 2` slots for columns 0-7;
- C: `warp_rows * warp_cols` atoms of `local_size_c` slots, atom (i, j) at
  `(i * warp_cols + j) * local_size_c`, again n8 halves in order.

`*_element` give, for a thread's (lane, warp) and slot, the element of the block
tile it holds; they are the single definition that the CPU reference
(`transform/lower_warp_mma.py`) and the CUDA lowering both follow."""
from __future__ import annotations

from dataclasses import dataclass

from tilelang.ir.dtypes import DataType, as_dtype
from tilelang.layout.mma import mma_a_element, mma_b_element, mma_c_element

WARP_SIZE = 32


@dataclass(frozen=True)
class WarpMmaTiling:
    a_dtype: DataType
    b_dtype: DataType
    accum_dtype: DataType
    a_transposed: bool
    b_transposed: bool
    block_row_warps: int
    block_col_warps: int
    warp_row_tiles: int
    warp_col_tiles: int
    chunk: int
    is_m_first: bool = False

    @staticmethod
    def make(a_dtype, b_dtype, accum_dtype, a_transposed, b_transposed, block_row_warps, block_col_warps,
             warp_row_tiles, warp_col_tiles, chunk, is_m_first=False):
        t = WarpMmaTiling(as_dtype(a_dtype), as_dtype(b_dtype), as_dtype(accum_dtype), bool(a_transposed),
                          bool(b_transposed), int(block_row_warps), int(block_col_warps), int(warp_row_tiles),
                          int(warp_col_tiles), int(chunk), bool(is_m_first))
        t.check()
        return t

    def check(self):
        bits = self.a_dtype.bits
        if bits not in (8, 16) or self.b_dtype.bits != bits:
            raise ValueError(f"warp-level mma supports 16-bit and 8-bit inputs of one width, got "
                             f"{self.a_dtype} x {self.b_dtype}")
        if self.warp_row_tiles < 16 or self.warp_row_tiles % 16:
            raise ValueError(f"warp_row_tiles must be a positive multiple of 16, got {self.warp_row_tiles}")
        if self.warp_col_tiles < 8 or self.warp_col_tiles % 8:
            raise ValueError(f"warp_col_tiles must be a positive multiple of 8, got {self.warp_col_tiles}")
        if self.chunk % self.micro_k:
            raise ValueError(f"chunk ({self.chunk}) must be a multiple of the mma K step {self.micro_k}")

    # sizes ------------------------------------------------------------------
    @property
    def bits(self):
        return self.a_dtype.bits

    micro_m = 16

    @property
    def micro_n(self):
        return 16 if self.warp_col_tiles % 16 == 0 else 8

    @property
    def micro_k(self):
        return min(256 // self.bits, self.chunk)

    @property
    def warp_rows(self):
        return self.warp_row_tiles // self.micro_m

    @property
    def warp_cols(self):
        return self.warp_col_tiles // self.micro_n

    @property
    def local_size_a(self):
        return self.micro_m * self.micro_k // WARP_SIZE

    @property
    def local_size_b(self):
        return self.micro_n * self.micro_k // WARP_SIZE

    @property
    def local_size_c(self):
        return self.micro_m * self.micro_n // WARP_SIZE

    @property
    def threads(self):
        return WARP_SIZE * self.block_row_warps * self.block_col_warps

    @property
    def block_m(self):
        return self.block_row_warps * self.warp_row_tiles

    @property
    def block_n(self):
        return self.block_col_warps * self.warp_col_tiles

    # threads ----------------------------------------------------------------
    def split_thread(self, tid):
        """(lane, warp_m, warp_n) of thread `tid` (int or expression). Default order:
        consecutive warps walk down M first (is_m_first=False, as published)."""
        lane, warp = tid % WARP_SIZE, tid // WARP_SIZE
        if self.is_m_first:
            return lane, (warp // self.block_col_warps) % self.block_row_warps, warp % self.block_col_warps
        return lane, warp % self.block_row_warps, (warp // self.block_row_warps) % self.block_col_warps

    def warp_base_thread(self, warp_m, warp_n):
        """First thread of warp (warp_m, warp_n)."""
        if self.is_m_first:
            return WARP_SIZE * (warp_m * self.block_col_warps + warp_n)
        return WARP_SIZE * (warp_n * self.block_row_warps + warp_m)

    # elements ---------------------------------------------------------------
    def a_element(self, lane, warp_m, i, s):
        """(m, k) inside the block's (block_m x micro_k) A step held by A slot
        `i * local_size_a + s`."""
        r, c = mma_a_element(lane, s, self.bits)
        return warp_m * self.warp_row_tiles + i * self.micro_m + r, c

    def b_element(self, lane, warp_n, j, s):
        """(n, k) inside the block's (block_n x micro_k) B step held by B slot
        `j * local_size_b + s`."""
        half = self.local_size_b // 2 if self.micro_n == 16 else self.local_size_b
        k, n = mma_b_element(lane, s % half, self.bits)
        return warp_n * self.warp_col_tiles + j * self.micro_n + n + 8 * (s // half), k

    def c_element(self, lane, warp_m, warp_n, i, j, s):
        """(m, n) inside the block's C tile held by C slot
        `(i * warp_cols + j) * local_size_c + s`."""
        r, c = mma_c_element(lane, s % 4)
        return (warp_m * self.warp_row_tiles + i * self.micro_m + r,
                warp_n * self.warp_col_tiles + j * self.micro_n + c + 8 * (s // 4))
