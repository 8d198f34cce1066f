"""Input generation for profiling and checking: `TensorSupplyType`.

Every dtype the IR knows is supported. Values are chosen so that kernels can be
checked against references with ordinary tolerances:

- Auto: floats (fp16/bf16/fp32/fp64) uniform in [-1, 1]; fp8 from small integers
  (exact in e4m3/e5m2); signed ints in [-2, 2]; unsigned ints in [0, 2]; bool 0/1.
- Integer: small integers in every dtype (floats too: exact products and sums).
- Uniform: uniform in [-1, 1]; Normal / Randn: standard normal (ints get integers).
- Zero / One: constants.

Tensors are torch tensors on the kernel's device when torch is installed, except
for dtypes torch can only hold but not fill (int4/uint4), which come as numpy
(ml_dtypes) arrays on the CPU.
"""
from __future__ import annotations

import enum

import numpy as np

from tilelang.ir.dtypes import as_dtype, numpy_dtype


class TensorSupplyType(enum.Enum):
    Integer = 1
    Uniform = 2
    Normal = 3
    Randn = 4
    Zero = 5
    One = 6
    Auto = 7


_TORCH_UNFILLABLE = {"int4", "uint4"}


def _int_range(dtype):
    if dtype.is_bool:
        return 0, 2
    if dtype.kind == "uint":
        return 0, 3
    return -2, 3


def _plan(dtype, supply):
    """What to generate: ('zero'|'one'|'int'|'uniform'|'normal', low, high)."""
    if supply == TensorSupplyType.Zero:
        return ("zero",)
    if supply == TensorSupplyType.One:
        return ("one",)
    if dtype.is_int or dtype.is_bool:
        return ("int",) + _int_range(dtype)
    if supply == TensorSupplyType.Integer:
        return ("int", -2, 3)
    if supply == TensorSupplyType.Auto:
        if dtype.kind == "float8":
            return ("int", -4, 5)
        return ("uniform",)
    if supply == TensorSupplyType.Uniform:
        return ("uniform",)
    return ("normal",)


def make_tensor(shape, dtype, supply=TensorSupplyType.Auto, device="cpu", use_torch=True, rng=None):
    """A tensor of `shape`/`dtype` filled per `supply` (torch when available)."""
    supply = supply if isinstance(supply, TensorSupplyType) else TensorSupplyType(supply)
    dtype = as_dtype(dtype)
    shape = tuple(int(s) for s in shape)
    if use_torch and dtype.name not in _TORCH_UNFILLABLE:
        try:
            import torch  # noqa: F401
        except ImportError:
            use_torch = False
    else:
        use_torch = False
    plan = _plan(dtype, supply)
    if use_torch:
        return _torch_tensor(shape, dtype, plan, device)
    if device not in ("cpu", None):
        raise TypeError(f"cannot supply a {dtype} tensor on {device!r} without torch support for that dtype")
    return _numpy_tensor(shape, dtype, plan, rng or np.random.default_rng())


def _numpy_tensor(shape, dtype, plan, rng):
    npd = numpy_dtype(dtype)
    if plan[0] == "zero":
        return np.zeros(shape, npd)
    if plan[0] == "one":
        return np.ones(shape, npd)
    if plan[0] == "int":
        return rng.integers(plan[1], plan[2], size=shape).astype(np.float32 if dtype.is_float else np.int64) \
            .astype(npd)
    if plan[0] == "uniform":
        return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32).astype(npd)
    return rng.standard_normal(size=shape).astype(np.float32).astype(npd)


def _torch_tensor(shape, dtype, plan, device):
    import torch
    tdt = dtype.as_torch()
    if plan[0] == "zero":
        return torch.zeros(shape, dtype=tdt, device=device)
    if plan[0] == "one":
        return torch.ones(shape, dtype=tdt, device=device)
    if plan[0] == "int":
        t = torch.randint(plan[1], plan[2], shape, dtype=torch.int64, device=device)
        return (t.float() if dtype.is_float else t).to(tdt)
    if plan[0] == "uniform":
        return torch.empty(shape, dtype=torch.float32, device=device).uniform_(-1.0, 1.0).to(tdt)
    return torch.randn(shape, dtype=torch.float32, device=device).to(tdt)


def get_tensor_supply(supply_type=TensorSupplyType.Integer, device=None):
    """A function that makes one tensor for a kernel parameter (anything with `shape` and
    `dtype`, e.g. a kernel's buffer parameter) filled per `supply_type` — the published
    `tilelang.utils.tensor.get_tensor_supply`. Shapes must be static here: pass tensors
    yourself for dynamic dimensions."""
    from tilelang.ir.expr import const_int_value

    def supply(param):
        shape = getattr(param, "shape", None)
        if not shape and shape != ():
            raise ValueError(f"get_tensor_supply: {param!r} has no shape")
        dims = [const_int_value(d) if not isinstance(d, int) else d for d in shape]
        if any(d is None for d in dims):
            raise ValueError(f"get_tensor_supply: `{getattr(param, 'name', param)}` has the dynamic shape "
                             f"{[str(d) for d in shape]}; a tensor needs a static shape (pass the tensor yourself)")
        dev = device
        if dev is None:
            try:
                import torch
                dev = "cuda" if torch.cuda.is_available() else "cpu"
            except ImportError:
                dev = "cpu"
        return make_tensor(dims, param.dtype, supply_type, dev)

    return supply
