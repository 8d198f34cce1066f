"""Block-level reductions (`T.reduce_*`), `T.cumsum`, `T.fill`/`T.clear`."""
from __future__ import annotations

from tilelang.frontend import builder as B
from tilelang.ir import tile_ops as TO
from tilelang.ir.buffer import Buffer, BufferRegion, to_region
from tilelang.ir.expr import const_int_value, convert, cast, literal, PrimExpr
from tilelang.ir.errors import ShapeMismatchError, TileLangError


def _shape(r):
    return [const_int_value(e) if const_int_value(e) is not None else e for e in r.extents]


def _reduce(kind, buffer, out, dim, clear):
    b = B.require(f"T.reduce_{kind}")
    if not isinstance(buffer, (Buffer, BufferRegion)) or not isinstance(out, (Buffer, BufferRegion)):
        raise TileLangError(f"T.reduce_{kind} takes two buffers (source, destination)")
    src, dst = to_region(buffer), to_region(out)
    ss, ds = _shape(src), _shape(dst)
    nd = len(ss)
    if not -nd <= dim < nd:
        raise ShapeMismatchError(f"T.reduce_{kind}: dim={dim} is out of range for a {nd}-D source")
    dim = dim % nd
    expect = ss[:dim] + ss[dim + 1:]
    keep = ss[:dim] + [1] + ss[dim + 1:]
    squeeze = [d for d in ds if d != 1]
    if ds != expect and ds != keep and squeeze != [d for d in expect if d != 1]:
        raise ShapeMismatchError(
            f"T.reduce_{kind}: reducing {src.buffer.name} {ss} over dim {dim} gives {expect or [1]}, "
            f"but the destination {dst.buffer.name} is {ds}",
            hint=f"allocate the destination with shape {tuple(expect) or (1,)}")
    b.emit(TO.Reduce(kind, src, dst, dim, clear))


def reduce_sum(buffer, out, dim=-1, clear=True):
    _reduce("sum", buffer, out, dim, clear)


def reduce_max(buffer, out, dim=-1, clear=True):
    _reduce("max", buffer, out, dim, clear)


def reduce_min(buffer, out, dim=-1, clear=True):
    _reduce("min", buffer, out, dim, clear)


def reduce_abssum(buffer, out, dim=-1, clear=True):
    _reduce("abssum", buffer, out, dim, clear)


def reduce_absmax(buffer, out, dim=-1, clear=True):
    _reduce("absmax", buffer, out, dim, clear)


def reduce_bitand(buffer, out, dim=-1, clear=True):
    _reduce("bitand", buffer, out, dim, clear)


def reduce_bitor(buffer, out, dim=-1, clear=True):
    _reduce("bitor", buffer, out, dim, clear)


def reduce_bitxor(buffer, out, dim=-1, clear=True):
    _reduce("bitxor", buffer, out, dim, clear)


def reduce(buffer, out, reduce_type, dim=-1, clear=True):
    _reduce(reduce_type, buffer, out, dim, clear)


def _scan(kind, src, dst, dim, reverse):
    b = B.require(f"T.cum{kind}")
    s = to_region(src)
    d = to_region(dst) if dst is not None else s
    if _shape(s) != _shape(d):
        raise ShapeMismatchError(f"T.cum{kind}: source {_shape(s)} and destination {_shape(d)} differ")
    nd = len(s.extents)
    if not -nd <= dim < nd:
        raise ShapeMismatchError(f"T.cum{kind}: dim={dim} is out of range for a {nd}-D buffer")
    b.emit(TO.CumSum(s, d, dim % nd, reverse, kind))


def cumsum(src, dst=None, dim=0, reverse=False):
    """Inclusive running sum along `dim` (in place when `dst` is None)."""
    _scan("sum", src, dst, dim, reverse)


def cummax(src, dst=None, dim=0, reverse=False):
    """Inclusive running maximum along `dim` (in place when `dst` is None)."""
    _scan("max", src, dst, dim, reverse)


def fill(buffer, value):
    """Fill a buffer, a slice, or one element (`T.fill(buf[i], v)`: extent 1 at i)."""
    b = B.require("T.fill")
    r = to_region(buffer)
    v = value
    if isinstance(v, Buffer) and v.is_var():
        v = v.load()
    v = cast(convert(v), r.buffer.dtype) if not isinstance(v, (int, float, bool)) else \
        literal(v, r.buffer.dtype)
    b.emit(TO.Fill(r, v))


def clear(buffer):
    buf = buffer.buffer if isinstance(buffer, BufferRegion) else buffer
    fill(buffer, 0)
