"""Block-level reductions (`T.reduce_*`), `T.cumsum`, `T.fill`/`T.clear`."""
from __future__ import annotations

from tilelang.ir import builder as B
from tilelang.ir import tile_ops as TO
from tilelang.ir.buffer import Buffer, BufferRegion, to_region
from tilelang.ir.expr import const_int_value, convert, cast, literal, PrimExpr
from tilelang.ir.errors import ShapeMismatchError, TileLangError, located


def _shape(r):
    return [const_int_value(e) if const_int_value(e) is not None else e for e in r.extents]


def _reduce(kind, buffer, out, dim, clear, batch=1, nan_propagate=False):
    b = B.require(f"T.reduce_{kind}")
    if not isinstance(buffer, (Buffer, BufferRegion)) or not isinstance(out, (Buffer, BufferRegion)):
        raise TileLangError(f"T.reduce_{kind} takes two buffers (source, destination)")
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise located(ValueError, f"T.reduce_{kind}: batch must be an int >= 1, got {batch!r}")
    src, dst = to_region(buffer), to_region(out)
    if kind in ("bitand", "bitor", "bitxor") and not (dst.buffer.dtype.is_int or dst.buffer.dtype.is_bool):
        raise located(TypeError, f"T.reduce_{kind} needs an integer or bool destination, got {dst.buffer.dtype}")
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
    b.emit(TO.Reduce(kind, src, dst, dim, clear, nan_propagate=nan_propagate, batch=batch))


# `batch`: outputs per cross-thread combine on the GPU (results do not depend on it);
# `annotations`: backend hints (accepted for compatibility, none changes results).
def reduce_sum(buffer, out, dim=-1, clear=True, batch=1, annotations=None):
    _reduce("sum", buffer, out, dim, clear, batch)


def reduce_max(buffer, out, dim=-1, clear=True, batch=1, nan_propagate=False, annotations=None):
    """Row maxima; a NaN is ignored in favour of the other operand unless `nan_propagate`."""
    _reduce("max", buffer, out, dim, clear, batch, nan_propagate)


def reduce_min(buffer, out, dim=-1, clear=True, batch=1, nan_propagate=False, annotations=None):
    _reduce("min", buffer, out, dim, clear, batch, nan_propagate)


def reduce_abssum(buffer, out, dim=-1, batch=1, annotations=None, *, clear=True):
    _reduce("abssum", buffer, out, dim, clear, batch)


def reduce_absmax(buffer, out, dim=-1, clear=True, batch=1, nan_propagate=False, annotations=None):
    _reduce("absmax", buffer, out, dim, clear, batch, nan_propagate)


def reduce_bitand(buffer, out, dim=-1, clear=True, batch=1, annotations=None):
    _reduce("bitand", buffer, out, dim, clear, batch)


def reduce_bitor(buffer, out, dim=-1, clear=True, batch=1, annotations=None):
    _reduce("bitor", buffer, out, dim, clear, batch)


def reduce_bitxor(buffer, out, dim=-1, clear=True, batch=1, annotations=None):
    _reduce("bitxor", buffer, out, dim, clear, batch)


def reduce(buffer, out, reduce_type, dim=-1, clear=True, batch=1, nan_propagate=False, annotations=None):
    _reduce(reduce_type, buffer, out, dim, clear, batch, nan_propagate)


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


def cumsum(src, dst=None, dim=0, reverse=False, annotations=None):
    """Inclusive running sum along `dim` (in place when `dst` is None)."""
    _scan("sum", src, dst, dim, reverse)


def cummax(src, dst=None, dim=0, reverse=False, annotations=None):
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
