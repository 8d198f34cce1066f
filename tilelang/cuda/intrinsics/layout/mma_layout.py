"""Published path of the hand-written mma GEMMs' shared-memory swizzles (`tilelang.layout.mma_swizzle`)."""
from tilelang.layout.mma_swizzle import get_swizzle_layout, make_mma_swizzle_layout  # noqa: F401
