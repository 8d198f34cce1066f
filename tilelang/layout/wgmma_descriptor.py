"""The wgmma shared-memory matrix descriptor of a tile in a given layout.

A wgmma reads each operand through a descriptor: start address, swizzle mode, and two
byte offsets (LBO, SBO, stored >> 4). Which offset means what depends on the operand's
major-ness and swizzle (PTX ISA, "matrix descriptor"):

- K-major, swizzled (atom rows of AW = 32/64/128 bytes, 8 rows an atom): SBO is the
  step between 8-row groups along MN; LBO is unused (1). K past one atom width is the
  next swizzle strip, reached by moving the start address.
- MN-major, swizzled: LBO is the step between atoms along MN (0 when there is one),
  SBO the step between 8-row groups along K.
- no swizzle: 8 x 16-byte core matrices, each 128 contiguous bytes; K-major: SBO steps
  along MN, LBO along K; MN-major: SBO along MN, LBO along K.

`compute_gmma_descriptor` reads the offsets off the layout's own element offsets and
then checks the whole tile against the canonical form they describe, so any layout
wgmma can read is accepted (ours, a user's `T.Layout`, a slice of a staged buffer) and
any other is a clear error instead of a wrong descriptor."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilelang.ir.buffer import BufferRegion
from tilelang.ir.expr import PrimExpr, const_int_value
from tilelang.layout.buffer_info import buffer_shape_dtype
from tilelang.layout.swizzle import SwizzleMode, apply_cutlass_swizzle

_MODES = (SwizzleMode.SWIZZLE_128B, SwizzleMode.SWIZZLE_64B, SwizzleMode.SWIZZLE_32B, SwizzleMode.NONE)
_MAX_OFFSET = (1 << 14) * 16     # the descriptor holds 14 bits of each offset >> 4


@dataclass(frozen=True)
class WGMMADescriptorParams:
    """What a descriptor of the tile needs (offsets already >> 4, as
    `T.initialize_wgmma_descriptor` takes them), plus what an atom's start address needs."""
    swizzle_mode: SwizzleMode
    leading_byte_offset: int
    stride_byte_offset: int
    swizzle_atom_elems: int      # elements of one swizzle atom row along MN (the whole MN extent unswizzled)
    k_atom_size: int             # max(swizzle_atom_elems // micro_size_k, 1)
    elems_in_bytes: int
    is_k_major: bool
    slice_byte_offset: object = 0  # bytes from the buffer's start to the tile's first element
    strip_byte_offset: int = 0     # bytes between swizzle strips along the contiguous dimension

    def atom_byte_offset(self, mn0, k0):
        """Bytes from the tile's start to the wgmma atom whose first element is (mn0, k0)
        (mn0 and, MN-major, k0 multiples of 8): what the descriptor's start address advances."""
        eb, sbo, lbo = self.elems_in_bytes, self.stride_byte_offset * 16, self.leading_byte_offset * 16
        sw = self.swizzle_mode
        if self.is_k_major:
            kb = k0 * eb
            if sw.is_none():
                return mn0 // 8 * sbo + kb // 16 * lbo + kb % 16
            return mn0 // 8 * sbo + kb // sw.value * self.strip_byte_offset + kb % sw.value
        mb = mn0 * eb
        if sw.is_none():
            return mb // 16 * sbo + k0 // 8 * lbo + mb % 16
        return mb // sw.value * lbo + k0 // 8 * sbo + mb % sw.value


def _canonical(mode, k_major, rows, cols, eb, lbo, sbo, strip):
    """Byte offset of every (row, col) of a canonical tile: (MN, K) when K-major, else (K, MN)."""
    r, c = np.indices((rows, cols), dtype=np.int64)
    cb = c * eb                                   # bytes along the contiguous dimension
    if mode.is_none():
        near = r % 8 * 16 + cb % 16
        return (r // 8 * sbo + cb // 16 * lbo if k_major else cb // 16 * sbo + r // 8 * lbo) + near
    aw = mode.value
    inner = apply_cutlass_swizzle(r % 8 * aw + cb % aw, *mode.cutlass_swizzle())
    return (cb // aw) * (strip if k_major else lbo) + r // 8 * sbo + inner


def _tile_offsets(layout, shape, region):
    """Element offsets of the (rows, cols) tile the region selects, and its origin's offset."""
    offs = layout.offsets()
    if list(offs.shape) != [const_int_value(d) if isinstance(d, PrimExpr) else d for d in shape]:
        raise ValueError(f"compute_gmma_descriptor: the layout covers {list(offs.shape)}, the buffer is {list(shape)}")
    if region is None:
        ranges = [(0, d) for d in offs.shape]
    else:
        ranges = []
        for start, extent in (region.ranges if isinstance(region, BufferRegion) else region):
            s, e = (x if isinstance(x, int) else const_int_value(x) for x in (start, extent))
            if s is None or e is None:
                raise ValueError("compute_gmma_descriptor: the operand's region must have a constant origin and "
                                 "extent (build the descriptor at the buffer's start and advance it with "
                                 "T.increase_descriptor_offset)")
            ranges.append((s, e))
    if sum(e != 1 for _, e in ranges[:-2]) or len(ranges) < 2:
        raise ValueError(f"compute_gmma_descriptor: the operand must be a 2-D tile, got extents "
                         f"{[e for _, e in ranges]}")
    tile = offs[tuple(slice(s, s + e) for s, e in ranges)].reshape(ranges[-2][1], ranges[-1][1])
    return tile, int(offs[tuple(s for s, _ in ranges)]) if region is not None else int(offs.flat[0])


def compute_gmma_descriptor(tl_layout, buffer, transposed: bool, micro_size_k: int = 16,
                            region=None) -> WGMMADescriptorParams:
    """The descriptor of `buffer` (or its `region`) stored in `tl_layout`. The tile is
    (MN, K), K contiguous (K-major) unless `transposed`: (K, MN), MN contiguous."""
    shape, dtype = buffer_shape_dtype(buffer)
    if dtype is None or dtype.bits not in (8, 16, 32):
        raise ValueError(f"compute_gmma_descriptor: wgmma reads 8-, 16- or 32-bit elements, got {dtype}")
    if region is None and isinstance(buffer, BufferRegion):
        region = buffer
    eb = dtype.bits // 8
    tile, origin = _tile_offsets(tl_layout, shape, region)
    rows, cols = tile.shape
    tb = (tile - tile[0, 0]) * eb
    k_major = not transposed
    if rows % 8:
        raise ValueError(f"compute_gmma_descriptor: wgmma reads 8-row groups; the tile has {rows} rows")
    for mode in _MODES:
        aw = 16 if mode.is_none() else mode.value
        if (cols * eb) % aw:
            continue
        step = aw // eb                                   # elements of one atom row / core-matrix row
        next_rows = int(tb[8, 0]) if rows > 8 else 8 * aw
        next_cols = int(tb[0, step]) if cols > step else 0
        if mode.is_none():
            lbo, sbo = (next_cols, next_rows) if k_major else (next_rows, next_cols)
            strip = 0
        elif k_major:
            lbo, sbo, strip = 16, next_rows, next_cols
        else:
            lbo, sbo, strip = next_cols, next_rows, next_cols
        if not np.array_equal(tb, _canonical(mode, k_major, rows, cols, eb, lbo, sbo, strip)):
            continue
        if any(v % 16 or not 0 <= v < _MAX_OFFSET for v in (lbo, sbo)):
            raise ValueError(f"compute_gmma_descriptor: offsets LBO={lbo}, SBO={sbo} bytes do not fit the "
                             f"descriptor (multiples of 16 below {_MAX_OFFSET})")
        atom = (cols if not k_major else rows) if mode.is_none() else mode.value // eb
        return WGMMADescriptorParams(mode, lbo // 16, sbo // 16, atom, max(atom // micro_size_k, 1), eb,
                                     k_major, origin * eb, strip)
    raise ValueError(f"compute_gmma_descriptor: the layout of `{getattr(buffer, 'name', buffer)}` is not one wgmma "
                     f"reads {'K' if k_major else 'MN'}-major (a 32B/64B/128B swizzle of 8-row atoms, or "
                     f"8 x 16-byte core matrices); check `transposed`")
