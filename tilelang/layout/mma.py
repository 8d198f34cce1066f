"""Warp-level tensor-core fragments of sm_80 `mma.sync` and the `ldmatrix`
mapping that fills them, as `Fragment`s over one warp (32 threads).

PTX ISA terms: groupID = lane >> 2, threadID_in_group = lane % 4. Every
16-bit operand is built from the 8x8 atom in which lane `4*r + c//2` holds
columns `c, c+1` of row `r` (one 32-bit register = two 16-bit halves); the
8-bit operands use the 8x16 atom (four bytes per register). Repeating the atom
on registers in the ISA's order gives the documented register numbering:

  m16n8k16 A (16x16, row):  a{i}: row g + 8*((i//2)%2), col 2t + i%2 + 8*(i//4)
  m16n8k16 B (16x8, K x N): b{i}: row(k) 2t + i%2 + 8*(i//2), col(n) g
  m16n8k16 C/D (16x8):      c{i}: row g + 8*(i//2),   col 2t + i%2
  m16n8k32 A (16x32, 8-bit): a{i}: row g + 8*((i//4)%2), col 4t + i%4 + 16*(i//8)
  m16n8k32 B (32x8, 8-bit):  b{i}: row(k) 4t + i%4 + 16*(i//4), col(n) g

The slot of a Fragment is the element index i within the thread (register
`i // (32 / bits)` of the instruction, half/byte `i % (32 / bits)`)."""
from __future__ import annotations

from tilelang.layout.fragment import Fragment


def make_gemm_fragment_8x8():
    """8x8 of 16-bit values over a warp: lane 4*row + col//2, slot col % 2."""
    return Fragment([8, 8], forward_thread_fn=lambda i, j: 4 * i + j // 2, forward_index_fn=lambda i, j: j % 2)


def make_gemm_fragment_8x8_transposed():
    """The transposed atom (B operands stored K x N): lane 4*col + row//2."""
    return Fragment([8, 8], forward_thread_fn=lambda i, j: 4 * j + i // 2, forward_index_fn=lambda i, j: i % 2)


def make_gemm_fragment_8x16():
    """8x16 of 8-bit values: lane 4*row + col//4, slot col % 4."""
    return Fragment([8, 16], forward_thread_fn=lambda i, j: 4 * i + j // 4, forward_index_fn=lambda i, j: j % 4)


def make_gemm_fragment_16x8_transposed_8bit():
    """16x8 of 8-bit values stored K x N: lane 4*col + row//4, slot row % 4."""
    return Fragment([16, 8], forward_thread_fn=lambda i, j: 4 * j + i // 4, forward_index_fn=lambda i, j: i % 4)


def make_gemm_fragment_8x4():
    """8x4 of 32-bit values (tf32): lane 4*row + col, one slot."""
    return Fragment([8, 4], forward_thread_fn=lambda i, j: 4 * i + j, forward_index_fn=lambda i, j: 0)


def mma_m16n8k16_a():
    """A of m16n8k16 (16x16, 16-bit, row-major M x K)."""
    return make_gemm_fragment_8x8().repeat([2, 2], lower_dim_first=False)


def mma_m16n8k16_b():
    """B of m16n8k16 (K x N = 16x8, 16-bit; `.col` operand)."""
    return make_gemm_fragment_8x8_transposed().repeat([2, 1], lower_dim_first=False)


def mma_m16n8k16_c():
    """C/D of m16n8k16 (16x8; f32/f16/s32 accumulator), also of m16n8k32."""
    return make_gemm_fragment_8x8().repeat([2, 1], lower_dim_first=False)


def mma_m16n8k32_a():
    """A of m16n8k32 (16x32, 8-bit: s8/u8/e4m3/e5m2)."""
    return make_gemm_fragment_8x16().repeat([2, 2], lower_dim_first=False)


def mma_m16n8k32_b():
    """B of m16n8k32 (K x N = 32x8, 8-bit)."""
    return make_gemm_fragment_16x8_transposed_8bit().repeat([2, 1], lower_dim_first=False)


mma_m16n8k32_c = mma_m16n8k16_c


def mma_fragments(bits):
    """(A, B, C) warp fragments of the sm_80 mma for `bits`-bit inputs:
    m16n8k16 for 16-bit, m16n8k32 for 8-bit."""
    if bits == 16:
        return mma_m16n8k16_a(), mma_m16n8k16_b(), mma_m16n8k16_c()
    if bits == 8:
        return mma_m16n8k32_a(), mma_m16n8k32_b(), mma_m16n8k32_c()
    raise NotImplementedError(f"no sm_80 mma fragment for {bits}-bit inputs here (16 and 8 bits supported)")


# ldmatrix --------------------------------------------------------------------
# `ldmatrix.sync.aligned.m8n8.x4.b16`: lanes 8m .. 8m+7 give the row addresses
# of matrix m (one 16-byte row each); afterwards register m of lane t holds row
# t // 4, columns 2(t % 4), +1 of matrix m (`.trans`: the transpose).

def ldmatrix_x4_row_provider(lane):
    """(matrix, row in matrix) whose address lane `lane` supplies."""
    return lane // 8, lane % 8


def ldmatrix_x4_a_address(lane):
    """(row, col) of the 16x16 tile whose 16-byte row lane `lane` points at so
    that ldmatrix.x4 yields exactly the m16n8k16 A fragment (matrix order:
    rows 0-7/cols 0-7, rows 8-15/cols 0-7, rows 0-7/cols 8-15, rows 8-15/cols 8-15)."""
    m, r = ldmatrix_x4_row_provider(lane)
    return r + 8 * (m % 2), 8 * (m // 2)


def ldmatrix_x4_b_address(lane, trans):
    """(row, col) of a B tile pointer for ldmatrix.x4 filling two n8 blocks of
    m16n8k16 B. With `trans` the tile is stored K x N (16x16, rows = k) and
    `.trans` is used; without it the tile is stored N x K (rows = n)."""
    m, r = ldmatrix_x4_row_provider(lane)
    if trans:     # matrices: k0-7/n0-7, k8-15/n0-7, k0-7/n8-15, k8-15/n8-15
        return r + 8 * (m % 2), 8 * (m // 2)
    return r + 8 * (m // 2), 8 * (m % 2)  # N x K: n0-7/k0-7, n0-7/k8-15, n8-15/k0-7, n8-15/k8-15


def simulate_ldmatrix_x4(address_fn, trans=False):
    """{(lane, element slot): (row, col)} that ldmatrix.x4 delivers when lane
    l points at tile row `address_fn(l)`: slot 2m + h is half h of register m."""
    out = {}
    rows = [address_fn(l) for l in range(32)]
    for t in range(32):
        for m in range(4):
            for h in range(2):
                if trans:   # thread t gets column t//4, rows 2(t%4)+h of matrix m
                    r0, c0 = rows[8 * m + 2 * (t % 4) + h]
                    out[(t, 2 * m + h)] = (r0, c0 + t // 4)
                else:
                    r0, c0 = rows[8 * m + t // 4]
                    out[(t, 2 * m + h)] = (r0, c0 + 2 * (t % 4) + h)
    return out


# register slots -> tile elements ---------------------------------------------
# The inverse of the fragments above, in closed form: which element of its
# instruction tile slot `s` of lane `lane` holds. The arguments may be ints or IR
# expressions (only // and % are used), so the CPU reference and the CUDA
# per-element path evaluate the same formulas.

def mma_a_element(lane, s, bits):
    """(row, col) of the A tile (16 x K, row-major M x K) held in slot s."""
    if bits == 16:
        return lane // 4 + 8 * ((s // 2) % 2), 2 * (lane % 4) + s % 2 + 8 * (s // 4)
    if bits == 8:
        return lane // 4 + 8 * ((s // 4) % 2), 4 * (lane % 4) + s % 4 + 16 * (s // 8)
    raise NotImplementedError(f"no sm_80 mma A fragment for {bits}-bit inputs")


def mma_b_element(lane, s, bits):
    """(k, n) of the B tile (K x 8) held in slot s."""
    if bits == 16:
        return 2 * (lane % 4) + s % 2 + 8 * (s // 2), lane // 4
    if bits == 8:
        return 4 * (lane % 4) + s % 4 + 16 * (s // 4), lane // 4
    raise NotImplementedError(f"no sm_80 mma B fragment for {bits}-bit inputs")


def mma_c_element(lane, s):
    """(row, col) of the 16 x 8 accumulator tile held in slot s (0..3)."""
    return lane // 4 + 8 * (s // 2), 2 * (lane % 4) + s % 2
