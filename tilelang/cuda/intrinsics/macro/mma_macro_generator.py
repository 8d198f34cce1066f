"""Published path of the sm_80+ mma emitter (`tilelang.language.warp_mma`)."""
from tilelang.language.warp_mma import TensorCoreIntrinEmitter  # noqa: F401
