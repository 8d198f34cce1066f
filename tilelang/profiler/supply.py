"""Input generation for profiling and checking: `TensorSupplyType`."""
from __future__ import annotations

import enum

import numpy as np

from tilelang.ir.dtypes import numpy_dtype


class TensorSupplyType(enum.Enum):
    Integer = 1
    Uniform = 2
    Normal = 3
    Randn = 4
    Zero = 5
    One = 6
    Auto = 7


def make_tensor(shape, dtype, supply, device="cpu", use_torch=True, rng=None):
    """A tensor of `shape`/`dtype` filled per `supply` (torch when available)."""
    supply = supply if isinstance(supply, TensorSupplyType) else TensorSupplyType(supply)
    shape = tuple(int(s) for s in shape)
    if use_torch:
        try:
            import torch
        except ImportError:
            use_torch = False
    if use_torch:
        return _torch_tensor(shape, dtype, supply, device)
    rng = rng or np.random.default_rng()
    npd = numpy_dtype(dtype)
    if supply == TensorSupplyType.Zero:
        return np.zeros(shape, npd)
    if supply == TensorSupplyType.One:
        return np.ones(shape, npd)
    if dtype.is_int or dtype.is_bool or supply == TensorSupplyType.Integer:
        lo, hi = (0, 2) if dtype.is_bool else ((0, 4) if dtype.kind == "uint" else (-2, 3))
        return rng.integers(lo, hi, size=shape).astype(npd)
    if supply == TensorSupplyType.Uniform:
        return rng.uniform(-1.0, 1.0, size=shape).astype(npd)
    return rng.standard_normal(size=shape).astype(np.float32).astype(npd)


def _torch_tensor(shape, dtype, supply, device):
    import torch
    tdt = dtype.as_torch()
    if supply == TensorSupplyType.Zero:
        return torch.zeros(shape, dtype=tdt, device=device)
    if supply == TensorSupplyType.One:
        return torch.ones(shape, dtype=tdt, device=device)
    if dtype.is_bool:
        return torch.randint(0, 2, shape, device=device).to(tdt)
    if dtype.is_int:
        lo, hi = (0, 4) if dtype.kind == "uint" else (-2, 3)
        return torch.randint(lo, hi, shape, dtype=torch.int64, device=device).to(tdt)
    if supply == TensorSupplyType.Integer:
        return torch.randint(-2, 3, shape, dtype=torch.int64, device=device).to(tdt)
    if supply == TensorSupplyType.Uniform:
        return torch.empty(shape, dtype=torch.float32, device=device).uniform_(-1.0, 1.0).to(tdt)
    return torch.randn(shape, dtype=torch.float32, device=device).to(tdt)
