"""`tilelang.language.dtypes` (published module): the dtype class and one object per
element type, plus the torch -> name table that user code imports. Our dtype is
`tilelang.ir.dtypes.DataType`."""
from __future__ import annotations

from tilelang.ir.dtypes import DataType

dtype = DataType

bool = DataType("bool")  # noqa: A001 - published names shadow builtins here
short, int, long = DataType("int16"), DataType("int32"), DataType("int64")  # noqa: A001
half, float, double = DataType("float16"), DataType("float32"), DataType("float64")  # noqa: A001
int4, uint4 = DataType("int4"), DataType("uint4")
int8, int16, int32, int64 = (DataType(n) for n in ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = (DataType(n) for n in ("uint8", "uint16", "uint32", "uint64"))
float16, bfloat16, float32, float64 = (DataType(n) for n in ("float16", "bfloat16", "float32", "float64"))
float8_e4m3fn = float8_e4m3 = DataType("float8_e4m3fn")
float8_e5m2 = DataType("float8_e5m2")
float8_e4m3fnuz, float8_e5m2fnuz = DataType("float8_e4m3fnuz"), DataType("float8_e5m2fnuz")
tfloat32 = DataType("tfloat32")
float4_e2m1fn, float4_e2m1_unpacked = DataType("float4_e2m1fn"), DataType("float4_e2m1_unpacked")


def is_float4_e2m1fn(value) -> bool:
    """Whether `value` names the packed fp4 type (two values a byte in tensors)."""
    return DataType(value).name in ("float4_e2m1fn", "float4_e2m1fnx2")


def is_float4_e2m1_unpacked(value) -> bool:
    """Whether `value` names the unpacked fp4 shared-memory storage (one value a byte slot)."""
    return DataType(value).name == "float4_e2m1_unpacked"


def is_float4(value) -> bool:
    """Whether `value` is an fp4 E2M1 type, packed or unpacked."""
    return is_float4_e2m1fn(value) or is_float4_e2m1_unpacked(value)


def _names():
    """Every dtype name `T.<name>` resolves to: the short C-style names, each element type
    and its vectors of 2 to 64 lanes."""
    from tilelang.ir.dtypes import _TABLE, _ALIASES
    short = [n for n in ("bool", "short", "int", "uint", "long", "half", "float", "double") if n in _ALIASES or
             n in _TABLE]
    scalars = [n for n in _TABLE if n != "handle"]
    vectors = [f"{n}x{k}" for n in scalars if _TABLE[n][0] in ("int", "uint", "float", "bfloat", "float8")
               and _TABLE[n][1] >= 8 for k in (2, 4, 8, 16, 32, 64)]
    return short + scalars + vectors


_all_dtypes = _names()


def _torch_names():
    """torch dtype -> canonical name, for the torch dtypes we have a DataType for."""
    try:
        import torch
    except ImportError:  # torch is optional
        return {}
    out = {}
    for attr in ("bool", "short", "int", "long", "half", "float", "double", "int8", "int16", "int32", "int64",
                 "uint8", "uint16", "uint32", "uint64", "float16", "bfloat16", "float32", "float64",
                 "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"):
        t = getattr(torch, attr, None)
        if t is not None:
            out[t] = DataType(str(t).replace("torch.", "")).name
    return out


_TORCH_DTYPE_TO_STR = _torch_names()
_STR_TO_TORCH_DTYPE = {v: k for k, v in _TORCH_DTYPE_TO_STR.items()}


def resolve_torch_storage_dtype(dt):
    """The dtype whose torch tensors hold `dt`'s values: itself, or for 4-bit types the
    packed storage (torch's float4_e2m1fn_x2 for fp4 where torch has it, else int8)."""
    dt = DataType(dt) if not isinstance(dt, DataType) else dt
    if dt.name in ("float4_e2m1fn", "float4_e2m1fnx2"):
        import torch
        return DataType("float4_e2m1fnx2") if hasattr(torch, "float4_e2m1fn_x2") else DataType("int8")
    if dt.bits < 8:
        return DataType("int8")
    return dt
