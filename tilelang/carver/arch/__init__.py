"""`tilelang.carver.arch`: the figures of a device that tile-size choices read (`CUDA`,
`CDNA`, `driver`, `auto_infer_current_arch`, `get_arch`)."""
from tilelang.carver.arch import driver  # noqa: F401
from tilelang.carver.arch.arch_base import TileDevice  # noqa: F401
from tilelang.carver.arch.cuda import (  # noqa: F401
    CUDA, auto_infer_current_arch, check_sm_version, has_mma_support, is_ada_arch, is_ampere_arch,
    is_cuda_arch, is_hopper_arch, is_tensorcore_supported_precision, is_volta_arch)
from tilelang.carver.arch.cdna import CDNA, is_cdna_arch  # noqa: F401


def get_arch(target="cuda") -> TileDevice:
    """The device description of a target: "cuda[ -arch=sm_XX]" or "hip[ -arch=gfxXXX]"."""
    from tilelang.backend.registry import parse_target
    kind = parse_target(target).kind
    if kind == "cuda":
        return CUDA(target)
    if kind == "hip":
        return CDNA(target)
    raise ValueError(f"get_arch: no device description for target kind {kind!r} (cuda or hip)")


def is_rdna_arch(arch) -> bool:   # published predicate; RDNA GPUs have no backend here
    return False
