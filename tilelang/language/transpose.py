"""`T.transpose(src, dst)`: dst[..., j, i] = src[..., i, j] for tiles of the block,
recorded as a T.Parallel nest, so each backend spreads and synchronises it as any
other parallel loop (on the GPU: over the block's threads, with the barriers the
surrounding code needs)."""
from __future__ import annotations

from tilelang.ir import builder as B
from tilelang.ir import stmt as S
from tilelang.ir.buffer import Buffer, BufferRegion, full_region
from tilelang.ir.errors import ShapeMismatchError, TileLangError
from tilelang.ir.expr import BufferLoad, IntImm, Var, const_int_value
from tilelang.arith.simplify import simplify


def _region(x, what):
    if isinstance(x, BufferRegion):
        return x
    if isinstance(x, Buffer) and not x.is_var():
        return full_region(x)
    raise TileLangError(f"T.transpose: the {what} must be a buffer or a region such as S[0:64, 0:32], "
                        f"got {type(x).__name__}")


def _tile_dims(r):
    """(dims whose extent is not 1, their extents): the tile's own shape."""
    dims = [d for d, e in enumerate(r.extents) if const_int_value(e) != 1]
    return dims, [r.extents[d] for d in dims]


def transpose(src, dst):
    b = B.require("T.transpose")
    s, d = _region(src, "source"), _region(dst, "destination")
    sd, se = _tile_dims(s)
    dd, de = _tile_dims(d)
    if len(sd) < 2 or len(sd) != len(dd):
        raise ShapeMismatchError(f"T.transpose needs two tiles of one rank (at least 2), got extents "
                                 f"{list(se)} and {list(de)}")
    want = list(se[:-2]) + [se[-1], se[-2]]
    if any(const_int_value(simplify(a - b_)) != 0 for a, b_ in zip(want, de)):
        raise ShapeMismatchError(f"T.transpose: a ({', '.join(map(str, se))}) source needs a "
                                 f"({', '.join(map(str, want))}) destination, got ({', '.join(map(str, de))})")
    vs = [Var(n) for n in ["i", "j", "k", "l", "m", "n"][:len(se)]]
    src_idx, dst_idx = list(s.starts), list(d.starts)
    for v, dim in zip(vs, sd):
        src_idx[dim] = simplify(src_idx[dim] + v)
    swapped = vs[:-2] + [vs[-1], vs[-2]]
    for v, dim in zip(swapped, dd):
        dst_idx[dim] = simplify(dst_idx[dim] + v)
    body = S.BufferStore(d.buffer, BufferLoad(s.buffer, src_idx), dst_idx)
    for v, e in reversed(list(zip(vs, se))):
        body = S.For(v, IntImm(0), e, S.PARALLEL, body)
    b.emit(body)
