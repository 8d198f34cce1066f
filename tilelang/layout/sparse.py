"""2:4 structured sparsity metadata (also at the published path
`tilelang.cuda.intrinsics.sparse_layout`), the contract between a compressor and
`T.gemm_sp` (language/gemm_sp.py has the full format).

Along K, dense elements come in groups of `group`; `elem` of each group are kept.
Each kept element's position in its group is a 2-bit index (in 16-bit units, so a
32-bit element at position p is written 2p); one group's indices fill a 4-bit nibble,
lowest bits first, and a metadata integer of b bits packs b / 4 consecutive nibbles,
lowest first."""
from __future__ import annotations

from tilelang.ir.dtypes import DataType, as_dtype

GROUP_CONFIG = {
    DataType("float32"): (1, 2),
    DataType("float16"): (2, 4),
    DataType("bfloat16"): (2, 4),
    DataType("int8"): (2, 4),
    DataType("uint8"): (2, 4),
    DataType("float8_e4m3fn"): (2, 4),
    DataType("float8_e5m2"): (2, 4),
}

BITS_PER_GROUP = 4


def group_config(a_dtype):
    """(kept elements, group size) of `a_dtype`."""
    dt = as_dtype(a_dtype)
    if dt not in GROUP_CONFIG:
        raise ValueError(f"no 2:4 sparsity format for {dt}")
    return GROUP_CONFIG[dt]


def get_e_factor(a_dtype, meta_dtype):
    """Dense A elements described by one metadata element."""
    _, group = group_config(a_dtype)
    return (as_dtype(meta_dtype).bits // BITS_PER_GROUP) * group


def get_e_replicate_factor(a_dtype):
    """Consecutive threads that share one metadata value in the sparse mma (2 for
    16-bit operands, 1 for 8-bit)."""
    return 1 if as_dtype(a_dtype).bits <= 8 else 2
