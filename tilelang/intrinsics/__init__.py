"""Older published path of `tilelang.cuda.intrinsics` (TileLang <= 0.1.6 examples)."""
from tilelang.cuda.intrinsics import (  # noqa: F401
    TensorCoreIntrinEmitter,
    get_swizzle_layout,
    make_mma_swizzle_layout,
    mma_store_index_map,
    get_ldmatrix_offset,
    get_mma_micro_size,
)
