"""Shared-memory swizzles for hand-written mma GEMMs (also at the published path
`tilelang.cuda.intrinsics.layout.mma_layout`). The same XOR pattern as
`tilelang.layout.swizzle` (16-byte chunks permuted within 8-row atoms), written
as a (strip, row, column-in-strip) memory index."""
from __future__ import annotations

from tilelang.ir.dtypes import as_dtype
from tilelang.ir.expr import const_int_value


def get_swizzle_layout(row_idx, col_idx, row_size, dtype, swizzle_bytes=None):
    """Memory index (strip, row, swizzled column) of element (row_idx, col_idx) in a
    tile whose rows hold `row_size` elements of `dtype`. Strips are `swizzle_bytes`
    wide (default: the row, at most 128 bytes); inside a strip, 16-byte chunk c of
    row r moves to c ^ ((r % 8) // (8 / chunks per strip))."""
    bits = as_dtype(dtype).bits
    row_bytes = bits * int(row_size) // 8
    if row_bytes % 32:
        raise ValueError(f"a swizzled row must be a multiple of 32 bytes, got {row_bytes}")
    width = min(128, row_bytes) if swizzle_bytes is None else int(swizzle_bytes)
    vec = 128 // bits                 # elements per 16-byte chunk
    chunks = width // 16              # chunks per strip row
    chunk = col_idx // vec
    xor = (row_idx % 8) // (8 // chunks)
    return chunk // chunks, row_idx, ((chunk % chunks) ^ xor) * vec + col_idx % vec


def make_mma_swizzle_layout(shared_buf, is_smooth=False):
    """`T.Layout` for a shared mma operand: the swizzle above on the last two
    dimensions when a row is a multiple of 64 bytes, else row-major."""
    from tilelang.layout.layout import Layout
    shape, dtype = list(shared_buf.shape), shared_buf.dtype
    last = const_int_value(shape[-1])
    if is_smooth or last is None or (last * as_dtype(dtype).bits) % 512:
        return Layout(shape, lambda *idx: list(idx))

    def fwd(*idx):
        return list(idx[:-2]) + list(get_swizzle_layout(idx[-2], idx[-1], last, dtype))
    return Layout(shape, fwd)
