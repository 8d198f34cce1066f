"""Shared-memory swizzles: the XOR patterns TMA and WGMMA understand.

A swizzle keeps 16-byte chunks intact and permutes them within each row of an
8-row atom: chunk `c` of row `s` goes to chunk `c ^ (s // (8 // w))`, where `w`
is the atom width in chunks (2, 4, 8 for the 32B, 64B and 128B modes). That is
CUTLASS `Swizzle<log2 w, 4, 3>` applied to the byte offset inside an atom, and
it is what the hardware applies for `CU_TENSOR_MAP_SWIZZLE_{32,64,128}B` and the
wgmma descriptor's layout type. A wide row (say 64 fp16 = 128 B, or wider) is
stored as column strips of one atom width: memory index `(strip, row // 8,
offset inside the 8-row atom)`, so one TMA box (inner extent = atom width)
fills one strip.

Why it matters: ldmatrix and 16-byte vector loads read eight rows at one
column chunk per phase; without the XOR all eight hit the same four banks when
the row pitch is a multiple of 128 B (see `bank_conflicts.py`)."""
from __future__ import annotations

import enum

from tilelang.ir import expr as E
from tilelang.layout.layout import Layout, make_linear_layout
from tilelang.layout.buffer_info import buffer_shape_dtype, element_bits
from tilelang.layout.evaluate import const_shape


class SwizzleMode(enum.Enum):
    NONE = 0
    SWIZZLE_32B = 32
    SWIZZLE_64B = 64
    SWIZZLE_128B = 128

    def is_none(self):
        return self is SwizzleMode.NONE

    def is_swizzle_32b(self):
        return self is SwizzleMode.SWIZZLE_32B

    def is_swizzle_64b(self):
        return self is SwizzleMode.SWIZZLE_64B

    def is_swizzle_128b(self):
        return self is SwizzleMode.SWIZZLE_128B

    def swizzle_byte_size(self):
        """Atom row width in bytes (1 for none, as published)."""
        return 1 if self.is_none() else self.value

    def swizzle_atom_size(self):
        """Atom row width in 16-byte chunks."""
        return 1 if self.is_none() else self.value // 16

    def wgmma_layout_type(self):
        """The wgmma shared-memory descriptor's layout-type field."""
        return {0: 0, 128: 1, 64: 2, 32: 3}[self.value]

    def tcgen05_layout_type(self):
        return {0: 0, 128: 2, 64: 4, 32: 6}[self.value]

    def smem_alignment(self):
        """Base alignment the swizzle needs: the pattern repeats every 8 rows
        of the atom width, and TMA computes it from address bits."""
        return 128 if self.is_none() else 8 * self.value

    def cutlass_swizzle(self):
        """(B, M, S) of CUTLASS `Swizzle<B, M, S>` on byte offsets."""
        return None if self.is_none() else ({32: 1, 64: 2, 128: 3}[self.value], 4, 3)

    @staticmethod
    def from_ordinal(n):
        return [SwizzleMode.NONE, SwizzleMode.SWIZZLE_32B, SwizzleMode.SWIZZLE_64B, SwizzleMode.SWIZZLE_128B][n]


def apply_cutlass_swizzle(offset, bits, base, shift):
    """CUTLASS `Swizzle<bits, base, shift>` on an integer offset: the `bits`
    bits starting at `base + shift` are XORed into those starting at `base`."""
    mask = ((1 << bits) - 1) << (base + shift)
    return offset ^ ((offset & mask) >> shift)


def widest_swizzle(row_bytes, rows=8):
    """The widest mode whose atom width divides a row of `row_bytes` (and
    whose 8-row period divides `rows`); NONE when even 32 B does not fit."""
    if rows % 8 and rows != 4:
        return SwizzleMode.NONE
    for mode in (SwizzleMode.SWIZZLE_128B, SwizzleMode.SWIZZLE_64B, SwizzleMode.SWIZZLE_32B):
        if row_bytes % mode.value == 0:
            return mode
    return SwizzleMode.NONE


def make_swizzle_layout_2d(stride, continuous, bits, mode):
    """The `mode` swizzle over a (stride rows) x (continuous elements) tile of
    `bits`-bit elements; memory index (strip, row // 8, offset in atom)."""
    if mode.is_none():
        return make_linear_layout([stride, continuous])
    vec = 128 // bits                    # elements per 16-byte chunk
    w = mode.swizzle_atom_size()         # chunks per atom row
    period = 8 // w                      # rows sharing one XOR value
    if not (stride % 8 == 0 or stride == 4):
        raise ValueError(f"a {mode.value}B swizzle needs a multiple of 8 rows, got {stride}")
    if continuous % (vec * w):
        raise ValueError(f"a {mode.value}B swizzle needs rows of a multiple of {vec * w} "
                         f"{bits}-bit elements, got {continuous}")

    def fwd(i, j):
        s, chunk = i % 8, j // vec
        swizzled = (chunk % w) ^ (s // period if period > 1 else s)
        return [chunk // w, i // 8, (s * w + swizzled) * vec + j % vec]

    def inv(strip, tile_row, off):
        s, chunk = off // (w * vec), (off // vec) % w
        return [tile_row * 8 + s, (strip * w + (chunk ^ (s // period if period > 1 else s))) * vec + off % vec]

    layout = Layout([stride, continuous], fwd)
    layout._inverse_fn = inv
    layout.swizzle_mode = mode
    return layout


def _expand(base, shape):
    out = base.expand(list(shape[:-2])) if len(shape) > 2 else base
    out.swizzle_mode = getattr(base, "swizzle_mode", SwizzleMode.NONE)
    if len(shape) > 2:
        out._inverse_fn = None
    return out


def _mode_layout(buffer, mode, dtype=None):
    shape, _ = buffer_shape_dtype(buffer, dtype)
    if len(shape) < 2:
        raise ValueError(f"a swizzle needs a buffer of rank >= 2, got shape {shape}")
    stride, continuous = const_shape(shape[-2:], "swizzled buffer")
    return _expand(make_swizzle_layout_2d(stride, continuous, element_bits(buffer, dtype), mode), shape)


def make_full_bank_swizzled_layout(buffer, dtype=None):
    """128-byte swizzle (`Swizzle<3, 4, 3>`)."""
    return _mode_layout(buffer, SwizzleMode.SWIZZLE_128B, dtype)


def make_half_bank_swizzled_layout(buffer, dtype=None):
    """64-byte swizzle (`Swizzle<2, 4, 3>`)."""
    return _mode_layout(buffer, SwizzleMode.SWIZZLE_64B, dtype)


def make_quarter_bank_swizzled_layout(buffer, dtype=None):
    """32-byte swizzle (`Swizzle<1, 4, 3>`)."""
    return _mode_layout(buffer, SwizzleMode.SWIZZLE_32B, dtype)


def make_padded_layout(stride, continuous, bits):
    """Row-major with one 16-byte chunk of padding per row when the row is a
    multiple of 32 bytes, which moves each row to other banks (used where no
    swizzle fits, e.g. int8 K-outer operands on sm_80)."""
    pitch = continuous + (128 // bits if (bits * continuous) % 256 == 0 else 0)
    layout = Layout([stride, continuous], lambda i, j: i * pitch + j)
    layout.swizzle_mode = SwizzleMode.NONE
    return layout


def make_f64_operand_layout(stride, continuous, k_major=True):
    """The 64-bit operand layout of the published package (its DMMA gemm's): 4 x 16
    element blocks, each a 4 x 4 XOR of 2-bit indices between the row in the block and
    the column's position inside (k-major) or group of four (k-outer) -- a swizzle of
    8-byte units, which no TensorMap swizzle mode describes."""
    if stride % 4 or continuous % 16:
        raise ValueError(f"the 64-bit operand layout needs 4 x 16 blocks, got a {stride}x{continuous} tile")

    def fwd(i, j):
        s, c = i % 4, j % 16
        sw = (c // 4) * 4 + ((c % 4) ^ s) if k_major else c % 4 + ((c // 4) ^ s) * 4
        return [j // 16, i // 4, sw + s * 16]

    out = Layout([stride, continuous], fwd)
    out.swizzle_mode = None   # no TMA / wgmma swizzle mode
    return out


def _gemm_operand_layout(shape, bits, k_major, allow_pad):
    stride, continuous = const_shape(shape[-2:], "gemm operand")
    if bits == 64:
        return make_f64_operand_layout(stride, continuous, k_major)
    vec = 128 // bits
    if allow_pad and not k_major and bits == 8:
        return make_padded_layout(stride, continuous, bits)
    rows_ok = stride % 8 == 0 or (allow_pad and stride == 4)
    mode = widest_swizzle(continuous * bits // 8) if rows_ok and continuous % vec == 0 else SwizzleMode.NONE
    if not mode.is_none():
        return make_swizzle_layout_2d(stride, continuous, bits, mode)
    if allow_pad:
        return make_padded_layout(stride, continuous, bits)
    if continuous % vec == 0:
        out = make_linear_layout([stride, continuous])
        out.swizzle_mode = SwizzleMode.NONE
        return out
    raise ValueError(f"no wgmma-compatible layout for a {stride}x{continuous} tile of {bits}-bit elements")


def make_swizzled_layout(buffer, k_major=True, allow_pad=True, dtype=None):
    """The shared layout for a gemm operand tile: the widest swizzle its row
    fits; with `allow_pad` (sm_80 mma path) padding where none fits, else
    (TMA/WGMMA need an unpadded tile) the linear layout."""
    shape, _ = buffer_shape_dtype(buffer, dtype)
    return _expand(_gemm_operand_layout(shape, element_bits(buffer, dtype), k_major, allow_pad), shape)


def make_wgmma_swizzled_layout(buffer, continuity=None, k_major=True, dtype=None):
    """The shared layout WGMMA (and TMA) can read: widest swizzle, no padding.
    `continuity` (the contiguous extent one instruction reads) is accepted for
    API compatibility; it only matters for float64 upstream."""
    shape, _ = buffer_shape_dtype(buffer, dtype)
    return _expand(_gemm_operand_layout(shape, element_bits(buffer, dtype), k_major, False), shape)


def make_tcgen05mma_swizzled_layout(buffer, continuity=None, k_major=True, dtype=None):
    """sm_100 tcgen05 operands use the same swizzle atoms as WGMMA."""
    return make_wgmma_swizzled_layout(buffer, continuity, k_major, dtype)


def make_volta_swizzled_layout(buffer, is_a=True, k_inner=True):
    raise NotImplementedError("Volta (sm_70) mma layouts are not implemented; sm_80+ only")


def detect_swizzle_mode(layout, buffer, dtype=None):
    """Which swizzle `layout` is on `buffer` (NONE when it is none of them)."""
    shape, _ = buffer_shape_dtype(buffer, dtype)
    for mode in (SwizzleMode.SWIZZLE_32B, SwizzleMode.SWIZZLE_64B, SwizzleMode.SWIZZLE_128B):
        try:
            cand = _mode_layout(buffer, mode, dtype)
        except ValueError:
            continue
        if cand.is_equal(layout):
            return mode
    return SwizzleMode.NONE


def is_tma_wgmma_compatible(layout, buffer, dtype=None):
    """True when `layout` stores each element where a TMA load with the
    detected swizzle mode (box inner extent = atom width) puts it, i.e. the
    byte offset inside every 8-row atom equals CUTLASS `Swizzle<B,4,3>` of the
    unswizzled row-major byte offset, and atoms are laid out strip by strip.
    A linear layout counts as SWIZZLE_NONE when rows are 16-byte multiples."""
    shape, _ = buffer_shape_dtype(buffer, dtype)
    bits = element_bits(buffer, dtype)
    mode = detect_swizzle_mode(layout, buffer, dtype)
    rows, cols = const_shape(shape[-2:])
    if mode.is_none():
        return (cols * bits) % 128 == 0 and layout.is_equal(make_linear_layout(shape))
    import numpy as np
    width = mode.value                          # bytes per atom row
    ebytes = bits // 8
    per_row = width // ebytes                   # elements per atom row
    i, j = np.indices((rows, cols))
    strip, r = j // per_row, i
    linear_bytes = r * width + (j % per_row) * ebytes        # row-major inside the strip
    hw = apply_cutlass_swizzle(linear_bytes, *mode.cutlass_swizzle()) + strip * rows * width
    offs = layout.offsets().reshape(-1, rows, cols) * ebytes
    return bool(np.all(offs - offs[:, :1, :1] == hw[None]))
