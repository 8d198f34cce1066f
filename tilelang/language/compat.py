"""Smaller published `T.*` names with the same meaning on every backend."""
from __future__ import annotations

from tilelang.ir import builder as B
from tilelang.ir import stmt as S
from tilelang.ir.buffer import BufferRegion
from tilelang.ir.expr import BufferLoad, convert
from tilelang.ir.errors import TileLangError


def region(buffer_load, access_type, *extents):
    """`T.region(A[i, j], "r", 64, 32)`: the box of `extents` starting at an element."""
    if not isinstance(buffer_load, BufferLoad):
        raise TileLangError("T.region takes an element access such as A[i, j] as its first argument")
    buf = buffer_load.buffer
    exts = list(extents)
    if len(exts) < buf.ndim:
        exts = [1] * (buf.ndim - len(exts)) + exts
    return BufferRegion(buf, list(zip(buffer_load.indices, [convert(e) for e in exts])))


def loop_break():
    """`T.loop_break()`: leave the innermost runtime loop."""
    B.require("T.loop_break").emit(S.Break())


def atomic_load(src, memory_order=None):
    """The element `src` read atomically (never cached, never torn); `memory_order`
    relaxed (default), consume, acquire or seq_cst."""
    from tilelang.language.atomic import memory_order_arg
    from tilelang.ir.expr import Call, StringImm
    from tilelang.ir.tile_ops import ATOMIC_LOAD
    order = memory_order_arg(memory_order, ("relaxed", "consume", "acquire", "seq_cst"), "atomic_load")
    if not isinstance(src, BufferLoad):
        raise TileLangError("T.atomic_load takes an element such as C[i]")
    return Call(ATOMIC_LOAD, [src, StringImm(order or "relaxed")], src.dtype)


def atomic_store(dst, value, memory_order=None):
    """Store `value` into the element `dst` atomically; `memory_order` relaxed (default),
    release or seq_cst."""
    from tilelang.language.atomic import memory_order_arg
    from tilelang.ir.expr import Call, StringImm, cast, convert
    from tilelang.ir.tile_ops import ATOMIC_STORE
    order = memory_order_arg(memory_order, ("relaxed", "release", "seq_cst"), "atomic_store")
    if not isinstance(dst, BufferLoad):
        raise TileLangError("T.atomic_store takes an element such as C[i] as its destination")
    v = cast(convert(value), dst.dtype)
    B.require("T.atomic_store").emit(S.Evaluate(Call(ATOMIC_STORE, [dst, v, StringImm(order or "relaxed")], "handle")))


def index_to_coordinates(index, shape):
    """The row-major coordinates of the flat `index` in an array of `shape`."""
    coords = []
    for extent in reversed(list(shape)):
        coords.append(index % extent)
        index = index // extent
    return coords[::-1]
