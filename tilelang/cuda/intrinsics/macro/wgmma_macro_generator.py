"""Published path of the wgmma descriptor helper (`tilelang.layout.wgmma_descriptor`)
and the warpgroup emitter of hand-written wgmma GEMMs (`tilelang.language.warpgroup_mma`)."""
from tilelang.layout.wgmma_descriptor import WGMMADescriptorParams, compute_gmma_descriptor  # noqa: F401
from tilelang.language.warpgroup_mma import WGMMATensorCoreIntrinEmitter as TensorCoreIntrinEmitter  # noqa: F401,E402
