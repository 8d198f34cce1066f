"""Published `tilelang.cuda.language.intrinsics`: the hand-written GEMM emitters (sm_80
mma.sync: `tilelang.language.warp_mma`; sm_90a wgmma atoms and the sm_100 tcgen05 name:
`tilelang.language.warpgroup_mma`) and their helpers."""
from tilelang.cuda.intrinsics import (  # noqa: F401
    get_ldmatrix_offset,
    get_mma_micro_size,
    get_swizzle_layout,
    make_mma_swizzle_layout,
    mma_store_index_map,
)
from tilelang.language.warp_mma import TensorCoreIntrinEmitter  # noqa: F401
from tilelang.language.warpgroup_mma import (  # noqa: F401
    TCGEN05TensorCoreIntrinEmitter,
    WGMMATensorCoreIntrinEmitter,
)
from tilelang.layout.wgmma_descriptor import WGMMADescriptorParams, compute_gmma_descriptor  # noqa: F401
