"""`CUDA(target)`: the figures of an NVIDIA GPU that a tile-size recommender reads.

With a GPU visible the SM count and shared memory come from the device; without one, from
the datasheet of the target's arch (so hints can be computed on a CPU-only machine)."""
from __future__ import annotations

import re

from tilelang.carver.arch.arch_base import TileDevice

# one optional "sm_" prefix, the compute capability, then feature letters (sm_90a, sm_100a)
_SM_VERSION = re.compile(r"^(?:sm_)?(\d+)[a-zA-Z]*$")

# datasheet figures by compute capability: SMs of the largest part, opt-in shared memory per
# block, shared memory per SM, L2 bytes
_DATASHEET = {
    70: (80, 98304, 98304, 6 << 20),
    75: (72, 65536, 65536, 6 << 20),
    80: (108, 166912, 167936, 40 << 20),
    86: (84, 101376, 102400, 6 << 20),
    89: (128, 101376, 102400, 72 << 20),
    90: (132, 232448, 233472, 50 << 20),
    100: (148, 232448, 233472, 126 << 20),
    120: (84, 101376, 102400, 64 << 20),
}

# (input dtype, accumulator dtype) pairs the tensor cores of each generation multiply
_TC_VOLTA = {("float16", "float32"), ("float16", "float16")}
_TC_AMPERE = _TC_VOLTA | {("bfloat16", "float32"), ("int8", "int32"), ("int4", "int32"),
                          ("tfloat32", "float32"), ("float32", "float32")}
_TC_ADA = _TC_AMPERE | {("float8_e4m3fn", "float32"), ("float8_e5m2", "float32"),
                        ("float8_e4m3fn", "float16"), ("float8_e5m2", "float16")}


def check_sm_version(arch: str) -> int:
    """The compute capability of an arch string as an int ("sm_90a" -> 90), -1 if it is not
    one (e.g. an AMD "gfx942")."""
    m = _SM_VERSION.match(str(arch))
    return int(m.group(1)) if m else -1


def _target_of(target):
    from tilelang.backend.registry import parse_target
    t = parse_target(target if target is not None else "cuda")
    if t.kind != "cuda":
        raise ValueError(f"CUDA(target): {target!r} is a {t.kind!r} target, not a CUDA one")
    return t


class CUDA(TileDevice):
    platform = "CUDA"
    warp_size = 32
    sm_partition = 4
    transaction_size = (32, 128)
    bandwidth = (750, 12080)

    def __init__(self, target="cuda"):
        t = _target_of(target)
        self.target = t
        self.arch = t.arch or "sm_90a"
        self.sm_version = check_sm_version(self.arch)
        self.compute_capability = str(self.sm_version)
        near = max((v for v in _DATASHEET if v <= self.sm_version), default=80)
        sms, smem_block, smem_sm, l2 = _DATASHEET[near]
        self.name = f"sm_{self.sm_version}"
        try:
            from tilelang.carver.arch import driver
            sms = driver.get_num_sms()
            smem_block = driver.get_shared_memory_per_block()
            self.name = driver.get_device_name()
        except Exception:  # noqa: BLE001 - no GPU visible: the datasheet figures of the arch
            pass
        self.compute_max_core = sms
        self.smem_cap = smem_block
        self.max_smem_usage = max(smem_sm, smem_block)
        self.reg_cap = 65536
        self.l2_cache_size_bytes = l2

    def get_avaliable_tensorintrin_shapes(self):
        return [[16, 16]]   # mma.sync m16n8k16 pairs and wgmma m64nNk16 both tile by 16 x 16

    def __repr__(self):
        return f"CUDA({self.arch}, sms={self.num_sms})"


def auto_infer_current_arch():
    """The device kernels compile for by default: the visible GPU, or the default CUDA arch."""
    return CUDA("cuda")


def is_cuda_arch(arch) -> bool:
    return isinstance(arch, CUDA)


def is_volta_arch(arch) -> bool:
    return is_cuda_arch(arch) and 70 <= arch.sm_version < 80


def is_ampere_arch(arch) -> bool:
    return is_cuda_arch(arch) and 80 <= arch.sm_version < 89


def is_ada_arch(arch) -> bool:
    return is_cuda_arch(arch) and arch.sm_version == 89


def is_hopper_arch(arch) -> bool:
    return is_cuda_arch(arch) and arch.sm_version == 90


def has_mma_support(arch) -> bool:
    return is_cuda_arch(arch) and arch.sm_version >= 80


def is_tensorcore_supported_precision(in_dtype, accum_dtype, arch) -> bool:
    """Whether the tensor cores of `arch` multiply `in_dtype` into `accum_dtype`."""
    from tilelang.ir.dtypes import as_dtype
    pair = (str(as_dtype(in_dtype)), str(as_dtype(accum_dtype)))
    v = getattr(arch, "sm_version", -1)
    if not is_cuda_arch(arch) or v < 70:
        return False
    table = _TC_VOLTA if v < 80 else _TC_AMPERE if v < 89 else _TC_ADA
    return pair in table
