"""sm_90a warpgroup MMA (`wgmma.mma_async.m64nNk16`) register fragments.

A warpgroup is 4 consecutive warps (128 threads); warp w of the group owns
rows 16w .. 16w+15 of the 64-row tile. Inside a warp the accumulator repeats
the mma.sync C pattern along N (PTX ISA "wgmma D fragment"):

  d{i} of thread t (lane l = t % 32, warp w = t // 32):
      row = 16 w + l // 4 + 8 * ((i // 2) % 2),  col = 8 * (i // 4) + 2 (l % 4) + i % 2

so each thread holds N / 2 accumulator values. An A operand taken from
registers (m64k16) has the m16n8k16 A layout per warp, warps along M."""
from __future__ import annotations

from tilelang.layout import mma as _mma
from tilelang.layout.fragment import Fragment

WARPGROUP_THREADS = 128
WGMMA_N_VALUES = tuple(range(8, 257, 8))


def wgmma_accumulator_fragment(N):
    """The 64 x N accumulator of one m64nNk16 over a warpgroup."""
    if N not in WGMMA_N_VALUES:
        raise ValueError(f"wgmma N must be a multiple of 8 in [8, 256], got {N}")
    per_warp = _mma.make_gemm_fragment_8x8().repeat([2, N // 8], lower_dim_first=False)
    return per_warp.repeat([4, 1], repeat_on_thread=True)


def wgmma_a_register_fragment():
    """A (64 x 16, 16-bit) of an m64nNk16 read from registers."""
    return _mma.mma_m16n8k16_a().repeat([4, 1], repeat_on_thread=True)


def make_wgmma_accumulator_fragment(M, N, m_warp, n_warp):
    """Block-level accumulator for a wgmma gemm over m_warp x n_warp warps
    (m_warp a multiple of 4): warpgroup j covers columns
    [j N/n_warp, (j+1) N/n_warp); each warp's 16-row slabs repeat every
    16 * m_warp rows, one m64 instruction per repeat; within a slab the
    registers follow the wgmma D numbering, so instruction a's registers are
    slots [a * wn/2, (a+1) * wn/2)."""
    wn = N // n_warp
    if m_warp % 4 or M % (16 * m_warp) or N % n_warp or wn % 8:
        raise ValueError(f"{M}x{N} does not split into {m_warp}x{n_warp} warps for wgmma")
    per_warp = _mma.make_gemm_fragment_8x8().repeat([2, wn // 8], lower_dim_first=False)
    warps = per_warp.repeat([m_warp, n_warp], repeat_on_thread=True, lower_dim_first=False)
    return warps.repeat([M // (16 * m_warp), 1], repeat_on_thread=False, lower_dim_first=False)


def wgmma_descriptor_fields(mode, bits, k_major=True):
    """Fields of the wgmma shared-memory matrix descriptor for a K-major
    operand tile stored with swizzle `mode` in our canonical layout (8-row
    atoms `mode` bytes wide): layout type, stride byte offset between 8-row
    groups (one atom: 8 * width bytes) and the K extent one atom row holds.
    The leading byte offset is ignored by the hardware for swizzled K-major
    tiles. Byte offsets are in bytes; the descriptor stores them >> 4."""
    if not k_major or mode.is_none():
        raise NotImplementedError("only swizzled K-major wgmma descriptors are modelled")
    width = mode.swizzle_byte_size()
    return {"layout_type": mode.wgmma_layout_type(), "stride_byte_offset": 8 * width,
            "k_elements_per_atom_row": width * 8 // bits}
