"""Calling code the compiler does not generate: `T.import_source` (device source text
put before the kernels), `T.call_extern` (a call by name), `T.access_ptr` (the
address of a buffer element, to pass to such a call) and `T.dp4a`."""
from __future__ import annotations

from tilelang.ir import builder as B
from tilelang.ir.extern import import_source_stmt
from tilelang.ir.buffer import Buffer, BufferRegion, access_mask_value, element_offset
from tilelang.ir.dtypes import as_dtype
from tilelang.ir.expr import PrimExpr, BufferLoad, StringImm, IntImm, call, convert, access_ptr as _ptr
from tilelang.ir.errors import TileLangError


def import_source(source: str | None = None):
    """Put `source` (CUDA C++: device functions, inline PTX) before the kernel in the
    generated file, once per kernel; `T.call_extern` calls what it defines."""
    if source is None:
        return None
    if not isinstance(source, str):
        raise TileLangError(f"T.import_source takes the source text as a str, got {type(source).__name__}")
    B.require("T.import_source").emit(import_source_stmt(source))
    return None


def call_extern(*args, dtype=None):
    """`T.call_extern(dtype, name, *args)` or `T.call_extern(name, *args, dtype=...)`:
    a call of the function `name` returning `dtype` ("handle" for void). Used as a
    statement, the call is evaluated for its effects."""
    if dtype is None:
        if len(args) < 2:
            raise TileLangError("T.call_extern needs a return dtype and a function name",
                                hint='write T.call_extern("handle", "my_func", ...)')
        dtype, args = args[0], args[1:]
    if not args or not isinstance(args[0], str):
        raise TileLangError(f"T.call_extern: the function name must be a str, got {args[0]!r}" if args else
                            "T.call_extern needs a function name")
    name, rest = args[0], args[1:]
    try:
        dt = as_dtype("handle" if dtype == "void" else dtype)   # TVM spells no result "void"
    except (ValueError, TypeError):
        raise TileLangError(f"T.call_extern: {dtype!r} is not a dtype") from None
    return call(name, [_arg(a) for a in rest], dt)


def _arg(a):
    if isinstance(a, PrimExpr):
        return a
    if isinstance(a, Buffer):
        if a.is_var():
            return a.load()
        return _ptr(BufferLoad(a, [IntImm(0)] * a.ndim), 3)
    if isinstance(a, str):
        return StringImm(a)
    return convert(a)


def _element(base, what) -> BufferLoad:
    """The first element of `base`: an element access, a region or a whole buffer."""
    if isinstance(base, BufferLoad):
        return base
    if isinstance(base, BufferRegion):
        return BufferLoad(base.buffer, [s for s, _ in base.ranges])
    if isinstance(base, Buffer):
        return BufferLoad(base, [IntImm(0)] * base.ndim)
    raise TileLangError(f"{what} takes a buffer, a region or an element such as A[i, j], "
                        f"got {type(base).__name__}")


def access_ptr(base, access_type="r", *extents, offset=0, extent=None, ignore_last_ndim=0):
    """`T.access_ptr(A[i, j], "r")`: a pointer to that element (a whole buffer: to its
    first element; `offset` elements further). Extents only document the range."""
    load = _element(base, "T.access_ptr")
    if not (isinstance(offset, int) and offset == 0):
        load = element_offset(load, offset)
    return _ptr(load, access_mask_value(access_type))


def dp4a(A, B_, C):
    """`C[0] += dot(A[0:4], B[0:4])` over int8 elements with an int32 accumulator (one
    `dp4a` instruction on NVIDIA GPUs). Each argument is an element (or a buffer: its
    first element); the four int8 operands are consecutive in memory."""
    a, b, c = (_element(x, "T.dp4a") for x in (A, B_, C))
    for name, ld, want in (("A", a, "int8"), ("B", b, "int8"), ("C", c, "int32")):
        if ld.buffer.dtype != want:
            raise TileLangError(f"T.dp4a needs {'int8 inputs' if want == 'int8' else 'an int32 accumulator'}, "
                                f"got {name} = `{ld.buffer.name}` of {ld.buffer.dtype}")
    return call("tl.dp4a", [_ptr(a, 1), _ptr(b, 1), _ptr(c, 3)], "handle")
