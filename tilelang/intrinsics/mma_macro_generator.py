"""Older published path of `tilelang.cuda.intrinsics.macro.mma_macro_generator`."""
from tilelang.language.warp_mma import TensorCoreIntrinEmitter  # noqa: F401
