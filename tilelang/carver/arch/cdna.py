"""`CDNA(target)`: the figures of an AMD Instinct GPU (the HIP backend's gfx90a / gfx94x) that
a tile-size recommender reads. No HIP runtime is queried: the figures are the datasheet's."""
from __future__ import annotations

from tilelang.carver.arch.arch_base import TileDevice

# compute units of the largest part of each processor (one MI250X die, MI300A, MI300X) and L2
_DATASHEET = {
    "gfx90a": (110, 8 << 20),
    "gfx940": (228, 4 << 20),
    "gfx941": (304, 4 << 20),
    "gfx942": (304, 4 << 20),
}


class CDNA(TileDevice):
    platform = "CDNA"
    warp_size = 64          # a wavefront
    sm_partition = 4        # SIMDs per CU
    transaction_size = (32, 128)
    bandwidth = (1300, 14000)

    def __init__(self, target="hip"):
        from tilelang.backend.registry import parse_target
        t = parse_target(target if target is not None else "hip")
        if t.kind != "hip":
            raise ValueError(f"CDNA(target): {target!r} is a {t.kind!r} target, not a HIP one")
        from tilelang.backend.hip.target import LDS_BYTES
        self.target = t
        self.arch = t.arch
        self.name = t.arch
        self.compute_capability = t.arch
        self.compute_max_core, self.l2_cache_size_bytes = _DATASHEET[t.arch]
        self.smem_cap = LDS_BYTES
        self.max_smem_usage = LDS_BYTES
        self.reg_cap = 32768

    def get_avaliable_tensorintrin_shapes(self):
        return [[16, 16], [32, 32]]   # v_mfma_*_16x16x* and 32x32x*

    def __repr__(self):
        return f"CDNA({self.arch}, cus={self.num_sms})"


def is_cdna_arch(arch) -> bool:
    return isinstance(arch, CDNA)
