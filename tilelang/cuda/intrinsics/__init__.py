"""`tilelang.cuda.intrinsics`: warp-level tensor-core helpers for hand-written GEMMs
(the emitter lives in `tilelang.language.warp_mma`; these are its published paths)."""
from tilelang.cuda.intrinsics.layout.utils import (  # noqa: F401
    mma_store_index_map,
    get_ldmatrix_offset,
    get_mma_micro_size,
)
from tilelang.cuda.intrinsics.layout.mma_layout import get_swizzle_layout, make_mma_swizzle_layout  # noqa: F401
from tilelang.cuda.intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitter  # noqa: F401
