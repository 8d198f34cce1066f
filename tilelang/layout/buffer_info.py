"""Shape and dtype of whatever a layout factory is handed: a buffer, a region
or load of one, or (our extension, handy in tests and codegen) a plain shape."""
from __future__ import annotations

from tilelang.ir.buffer import Buffer, BufferRegion
from tilelang.ir.dtypes import as_dtype
from tilelang.ir.expr import BufferLoad


def buffer_shape_dtype(obj, dtype=None):
    """(shape list, DataType or None)."""
    if isinstance(obj, Buffer):
        return list(obj.shape), obj.dtype
    if isinstance(obj, (BufferRegion, BufferLoad)):
        return list(obj.buffer.shape), obj.buffer.dtype
    if isinstance(obj, int):
        return [obj], (as_dtype(dtype) if dtype is not None else None)
    if isinstance(obj, (list, tuple)):
        return list(obj), (as_dtype(dtype) if dtype is not None else None)
    raise TypeError(f"expected a buffer, region or shape, got {type(obj).__name__}")


def element_bits(obj, dtype=None):
    _, dt = buffer_shape_dtype(obj, dtype)
    if dt is None:
        raise TypeError("a swizzle for a plain shape needs `dtype=`")
    return dt.bits
