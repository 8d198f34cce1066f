"""Operands of the per-thread tensor-core intrinsics (ops/tensor_core_ptx.py, warpgroup.py,
descriptor.py) as the published API writes them: `buf.data` plus an element offset,
`T.access_ptr(buf[i], ...)`, an element `buf[i]`, a region or a whole buffer. Each
becomes one element of a buffer (the first the instruction touches)."""
from __future__ import annotations

from tilelang.arith.simplify import simplify
from tilelang.ir.buffer import Buffer, BufferData, BufferRegion
from tilelang.ir.dtypes import as_dtype
from tilelang.ir.errors import TileLangError
from tilelang.ir.expr import BufferLoad, IntImm, StringImm, addressed_load, const_int_value, convert

# the published abbreviations (and full dtype names) -> PTX type names
PTX_TYPES = {
    "fp16": "f16", "float16": "f16", "f16": "f16", "bf16": "bf16", "bfloat16": "bf16",
    "fp32": "f32", "float32": "f32", "f32": "f32", "tf32": "tf32", "tfloat32": "tf32",
    "fp64": "f64", "float64": "f64", "f64": "f64",
    "int8": "s8", "s8": "s8", "uint8": "u8", "u8": "u8", "int32": "s32", "s32": "s32",
    "e4m3": "e4m3", "float8_e4m3": "e4m3", "float8_e4m3fn": "e4m3", "fp8_e4m3": "e4m3",
    "e5m2": "e5m2", "float8_e5m2": "e5m2", "fp8_e5m2": "e5m2",
}
PTX_BITS = {"f16": 16, "bf16": 16, "f32": 32, "tf32": 32, "f64": 64, "s8": 8, "u8": 8, "s32": 32,
            "e4m3": 8, "e5m2": 8}


def ptx_type(t, what) -> str:
    """The PTX name of a dtype given as the published abbreviation ("fp16"), a dtype
    name or a T.* dtype."""
    if isinstance(t, StringImm):
        t = t.value
    name = t if isinstance(t, str) else getattr(as_dtype(t), "name", str(t)) if t is not None else None
    if name not in PTX_TYPES:
        raise TileLangError(f"{what}: unknown element type {t!r}",
                            hint=f"use one of {', '.join(sorted(set(PTX_TYPES) - set(PTX_TYPES.values())))}")
    return PTX_TYPES[name]


def const_str(v, what) -> str:
    if isinstance(v, StringImm):
        return v.value
    if not isinstance(v, str):
        raise TileLangError(f"{what} must be a string, got {v!r}")
    return v


def const_bool(v, what) -> bool:
    if isinstance(v, bool):
        return v
    c = const_int_value(convert(v)) if not isinstance(v, int) else v
    if c is None:
        raise TileLangError(f"{what} must be a compile-time bool, got {v!r}")
    return bool(c)


def const_int(v, what) -> int:
    c = v if isinstance(v, int) and not isinstance(v, bool) else const_int_value(convert(v))
    if c is None:
        raise TileLangError(f"{what} must be a compile-time integer, got {v!r}")
    return int(c)


def _flat(load: BufferLoad):
    total = None
    for i, s in zip(load.indices, load.buffer.get_strides()):
        t = convert(i) * s
        total = t if total is None else total + t
    return total if total is not None else IntImm(0)


def element_at(buf: Buffer, flat) -> BufferLoad:
    """buf's element at row-major position `flat`."""
    if buf.ndim <= 1:
        return BufferLoad(buf, [simplify(convert(flat))])
    idx = []
    for s, d in zip(buf.get_strides(), buf.shape):
        idx.append(simplify((convert(flat) // s) % d))
    return BufferLoad(buf, idx)


def element(x, offset=0, what="operand") -> BufferLoad:
    """The element that operand `x` (plus `offset` elements) denotes."""
    if isinstance(x, BufferData):
        load = BufferLoad(x.buffer, [IntImm(0)] * max(1, x.buffer.ndim))
    elif addressed_load(x) is not None:
        load = addressed_load(x)
    elif isinstance(x, BufferLoad):
        load = x
    elif isinstance(x, BufferRegion):
        load = BufferLoad(x.buffer, list(x.starts))
    elif isinstance(x, Buffer):
        load = BufferLoad(x, [IntImm(0)] * max(1, x.ndim))
    else:
        raise TileLangError(f"{what} must be a buffer's `.data`, T.access_ptr(buf[i], ...), an element "
                            f"buf[i] or a buffer, got {type(x).__name__}")
    if isinstance(offset, Buffer) and offset.is_var():
        offset = offset.load()
    if const_int_value(convert(offset)) == 0:
        return load
    return element_at(load.buffer, simplify(_flat(load) + convert(offset)))


def registers(x, offset, what) -> BufferLoad:
    """An operand that must live in this thread's registers (T.alloc_local)."""
    load = element(x, offset, what)
    if load.buffer.scope != "local":
        raise TileLangError(f"{what} must be a per-thread register array (T.alloc_local); "
                            f"`{load.buffer.name}` is {load.buffer.scope}",
                            hint="allocate it with T.alloc_local((n,), dtype)")
    return load


def check_room(load: BufferLoad, n_elems: int, what):
    """The buffer holds `n_elems` elements from `load` on (when both are known)."""
    start = const_int_value(simplify(_flat(load)))
    total = 1
    for d in load.buffer.shape:
        c = const_int_value(d)
        if c is None:
            return
        total *= c
    if start is not None and start + n_elems > total:
        raise TileLangError(f"{what} needs {n_elems} elements of `{load.buffer.name}` from element {start}; "
                            f"it holds {total}")
