"""`CUDA(target)`: the numbers a tile-size heuristic needs for an NVIDIA GPU."""
from __future__ import annotations


def _arch_of(target):
    from tilelang.backend.registry import parse_target
    t = parse_target(target if target is not None else "cuda")
    return t.arch or "sm_90a"


class CUDA:
    def __init__(self, target="cuda"):
        self.target = target
        self.arch = _arch_of(target)
        digits = "".join(ch for ch in self.arch if ch.isdigit())
        self.compute_capability = digits
        self.sm_version = int(digits)
        self.platform = "CUDA"
        try:
            from tilelang.carver.arch import driver
            self.num_sms = driver.get_num_sms()
            self.smem_cap = driver.get_shared_memory_per_block()
        except Exception:  # noqa: BLE001 - no GPU: datasheet values of the arch
            self.num_sms = {90: 132, 80: 108, 89: 128}.get(self.sm_version, 108)
            self.smem_cap = 232448 if self.sm_version >= 90 else 166912
        self.warp_size = 32
        self.max_smem_usage = self.smem_cap
        self.reg_cap = 65536
        self.l2_cache_size_bytes = 50 * 2 ** 20 if self.sm_version >= 90 else 40 * 2 ** 20
        self.transaction_size = [32, 128]
        self.bandwidth = [750, 12080]

    def __repr__(self):
        return f"CUDA({self.arch}, sms={self.num_sms})"


def auto_infer_current_arch():
    return CUDA("cuda")


def is_hopper_arch(arch) -> bool:
    return getattr(arch, "sm_version", 0) >= 90


def is_ampere_arch(arch) -> bool:
    return 80 <= getattr(arch, "sm_version", 0) < 90
