"""Array interop: numpy arrays and torch tensors (bf16/fp8 included) as kernel
arguments; outputs are allocated in the caller's array type."""
from __future__ import annotations

import numpy as np

from tilelang.ir.dtypes import as_dtype, numpy_dtype, DataType


def is_torch(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def is_array(x) -> bool:
    return isinstance(x, np.ndarray) or is_torch(x) or hasattr(x, "__dlpack__")


def array_dtype(x) -> DataType:
    return as_dtype(x.dtype)


def array_strides(x):
    if is_torch(x):
        return tuple(int(s) for s in x.stride())
    if isinstance(x, np.ndarray):
        return tuple(s // x.itemsize for s in x.strides)
    return ()


def is_contiguous(x) -> bool:
    if is_torch(x):
        return x.is_contiguous()
    if isinstance(x, np.ndarray):
        return x.flags["C_CONTIGUOUS"]
    return True


def device_type(x) -> str:
    if is_torch(x):
        return x.device.type
    return "cpu"


def torch_if_available():
    """A CPU torch tensor to allocate outputs like, or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    return torch.empty(0)


def empty(shape, dtype, like=None, device="cpu"):
    """An uninitialised array: torch when `like` is a torch tensor (or torch is the
    only way to reach the device), numpy otherwise. 4-bit element types come packed two
    per byte (an int8 array whose last dimension is halved; torch's float4_e2m1fn_x2 for
    float4_e2m1fn where torch has it), as the published package allocates them."""
    dt = as_dtype(dtype)
    shape = tuple(shape)
    packed = dt.bits < 8
    if packed and shape:
        shape = shape[:-1] + ((shape[-1] + 1) // 2,)
    if (like is not None and is_torch(like)) or device != "cpu":
        import torch
        dev = like.device if like is not None and is_torch(like) else device
        tdt = (getattr(torch, "float4_e2m1fn_x2", torch.int8) if dt.name == "float4_e2m1fn" else torch.int8) \
            if packed else dt.as_torch()
        return torch.empty(shape, dtype=tdt, device=dev)
    return np.empty(shape, dtype=np.int8 if packed else numpy_dtype(dt))


def to_numpy(x):
    if is_torch(x):
        import torch
        t = x.detach().cpu()
        if t.dtype in (torch.bfloat16,) or "float8" in str(t.dtype):
            return t.float().numpy()
        return t.numpy()
    return np.asarray(x)
