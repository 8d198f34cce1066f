"""Whether this machine can run HIP kernels: a ROCm build of torch that sees a device."""
from __future__ import annotations


def check_hip_availability() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(getattr(torch.version, "hip", None)) and torch.cuda.is_available()
