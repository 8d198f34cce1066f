"""Index maps of the sm_80 mma fragments (also at the published path
`tilelang.cuda.intrinsics.layout.utils`); the fragments are `tilelang.layout.mma`."""
from __future__ import annotations

from tilelang.ir.dtypes import as_dtype
from tilelang.layout.mma import mma_c_element


def mma_store_index_map(thread_id, local_id):
    """(row, col) in a 16 x 16 accumulator atom of slot `local_id` (0..7) of lane
    `thread_id`: two 16 x 8 mma accumulators side by side."""
    row, col = mma_c_element(thread_id, local_id % 4)
    return row, col + 8 * (local_id // 4)


def get_ldmatrix_offset(matrix, row_idx, col_idx, stride, dtype="float16", transposed=False):
    """(row, col) of the tile row that lane `row_idx` points `ldmatrix.x4` at
    (plus `col_idx` within the 16-byte row), so that the loaded registers form the
    mma A (`matrix="A"`) or a 16-wide B operand (`"B"`, stored N x K when
    `transposed`). 8-bit operands are loaded as b16 pairs: only A stored M x K and
    B stored N x K can use ldmatrix."""
    if matrix not in ("A", "B"):
        raise ValueError("matrix must be 'A' or 'B'")
    bits = as_dtype(dtype).bits
    lane = row_idx
    if bits == 16:
        if transposed:
            return 8 * (lane // 16) + lane % 8, 8 * ((lane % 16) // 8) + col_idx % 8
        return lane % 16, 8 * (lane // 16) + col_idx % 8
    if bits <= 8:
        pack = 8 // bits
        if matrix == "A" and not transposed:
            return lane % 16, (col_idx + 16 * (lane // 16)) * pack
        if matrix == "B" and transposed:
            return 8 * (lane // 16) + lane % 8, (col_idx + 16 * ((lane % 16) // 8)) * pack
        raise ValueError("8-bit ldmatrix needs A stored M x K or B stored N x K")
    raise ValueError(f"no ldmatrix offsets for {bits}-bit elements")


def get_mma_micro_size(dtype):
    """(x, y, k) of the mma atom: 16 x 16, K = 16 for 16-bit and 32 for 8-bit inputs."""
    k = 32 if as_dtype(dtype).bits == 8 else 16
    return 16, 16, k
