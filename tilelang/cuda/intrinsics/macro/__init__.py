"""Instruction emitters (published path)."""
from tilelang.cuda.intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitter  # noqa: F401
