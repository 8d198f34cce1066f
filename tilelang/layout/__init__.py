"""Layouts: `Layout` (logical index -> memory offset, swizzles included) and
`Fragment` (logical index -> (thread, register slot)), plus the MMA/WGMMA
fragments and shared-memory swizzles the CUDA backend lowers with.

Public names follow the published `tilelang.layout`."""
from tilelang.layout.layout import Layout, make_linear_layout  # noqa: F401
from tilelang.layout.fragment import Fragment, make_fully_replicated_layout_fragment  # noqa: F401
from tilelang.layout.swizzle import (  # noqa: F401
    SwizzleMode,
    make_swizzled_layout,
    make_volta_swizzled_layout,
    make_wgmma_swizzled_layout,
    make_tcgen05mma_swizzled_layout,
    make_full_bank_swizzled_layout,
    make_half_bank_swizzled_layout,
    make_quarter_bank_swizzled_layout,
    make_padded_layout,
    make_swizzle_layout_2d,
    widest_swizzle,
    detect_swizzle_mode,
    is_tma_wgmma_compatible,
)
from tilelang.layout.mma import make_gemm_fragment_8x8, make_gemm_fragment_8x8_transposed  # noqa: F401
from tilelang.layout.gemm_partition import (  # noqa: F401
    compute_warp_partition,
    make_gemm_accumulator_fragment,
    make_mma_accumulator_fragment,
    make_mma_a_fragment,
)
from tilelang.layout.wgmma import make_wgmma_accumulator_fragment, wgmma_accumulator_fragment  # noqa: F401
from tilelang.layout.bank_conflicts import is_bank_conflict_free, max_conflict_ways  # noqa: F401
