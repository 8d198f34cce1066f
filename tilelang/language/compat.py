"""Smaller published `T.*` names with the same meaning on every backend."""
from __future__ import annotations

from tilelang.frontend import builder as B
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
    """An element read (blocks run one after another per CPU thread; on the GPU the
    access is a single aligned load)."""
    return src


def atomic_store(dst, value, memory_order=None):
    if not isinstance(dst, BufferLoad):
        raise TileLangError("T.atomic_store takes an element such as C[i] as its destination")
    dst.buffer[tuple(dst.indices)] = value


def index_to_coordinates(index, shape):
    """The row-major coordinates of the flat `index` in an array of `shape`."""
    coords = []
    for extent in reversed(list(shape)):
        coords.append(index % extent)
        index = index // extent
    return coords[::-1]
