"""`T.atomic_add/max/min`: read-modify-write that is safe across blocks."""
from __future__ import annotations

from tilelang.ir import builder as B
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.buffer import Buffer, BufferRegion, to_region
from tilelang.ir.expr import BufferLoad, IntImm, Var, convert, cast, const_int_value, literal, PrimExpr
from tilelang.ir.errors import TileLangError, ShapeMismatchError, located
from tilelang.ir.tile_ops import atomic_call

MEMORY_ORDERS = ("relaxed", "consume", "acquire", "release", "acq_rel", "seq_cst")


def memory_order_arg(memory_order, allowed=MEMORY_ORDERS, what="atomic"):
    """The order of an atomic as stored in the IR: None for relaxed, else its name
    (`consume` is treated as `acquire`, as C++ compilers do)."""
    if memory_order is None:
        return None
    if memory_order not in allowed:
        raise located(ValueError, f"T.{what} does not support memory_order={memory_order!r}; "
                                  f"use one of {', '.join(allowed)}")
    if memory_order == "relaxed":
        return None
    return "acquire" if memory_order == "consume" else memory_order


def _atomic(kind, dst, value, return_prev=False, memory_order=None, use_tma=False):
    b = B.require(f"T.atomic_{kind}")
    memory_order = memory_order_arg(memory_order, what=f"atomic_{kind}")
    if return_prev:
        # one element; the call is an expression whose value is the previous content
        if not isinstance(dst, BufferLoad):
            raise TileLangError(f"T.atomic_{kind}(..., return_prev=True) needs one element, e.g. C[i]")
        if isinstance(value, Buffer) and value.is_var():
            value = value.load()
        v = literal(value, dst.dtype) if isinstance(value, (int, float)) else cast(convert(value), dst.dtype)
        return atomic_call(kind, dst, v, memory_order)
    if isinstance(value, (Buffer, BufferRegion)) and not (isinstance(value, Buffer) and value.is_var()):
        if isinstance(dst, BufferLoad):
            from tilelang.language.copy import copy_regions
            vs, ds = copy_regions(value, dst)
        else:
            from tilelang.language.copy import copy_regions
            vs, ds = copy_regions(value, dst)
        b.emit(TO.Atomic(kind, ds, vs, return_prev, memory_order, use_tma=_tma_operands(use_tma, vs, ds)))
        return None
    if isinstance(dst, BufferLoad):
        d = to_region(dst)
    elif isinstance(dst, (Buffer, BufferRegion)):
        d = to_region(dst)
    else:
        raise TileLangError(f"T.atomic_{kind} destination must be a buffer element or region")
    if isinstance(value, Buffer) and value.is_var():
        value = value.load()
    v = value if isinstance(value, PrimExpr) else convert(value)
    b.emit(TO.Atomic(kind, d, cast(v, d.buffer.dtype) if not (isinstance(value, (int, float))) else
                     literal(value, d.buffer.dtype), return_prev, memory_order))
    return None


def atomic_add(dst, value, memory_order=None, return_prev=False, use_tma=False):
    """dst += value elementwise, atomically. `use_tma=True` (value a shared tile, dst
    global): one bulk tensor reduction adds the whole tile (sm_90+)."""
    return _atomic("add", dst, value, return_prev, memory_order, use_tma)


def _tma_operands(use_tma, value, dst):
    """use_tma where a bulk tensor reduction could do it (a shared tile into a global
    tensor); otherwise the request is dropped and the threads add (as published)."""
    return bool(use_tma) and value.buffer.scope.startswith("shared") and dst.buffer.scope == "global"


def atomic_max(dst, value, memory_order=None, return_prev=False):
    return _atomic("max", dst, value, return_prev, memory_order)


def atomic_min(dst, value, memory_order=None, return_prev=False):
    return _atomic("min", dst, value, return_prev, memory_order)


def _bitwise(kind, dst, value, return_prev, memory_order):
    d = dst.buffer if isinstance(dst, (BufferLoad, BufferRegion)) else dst
    if not (d.dtype.is_int and d.dtype.bits in (32, 64)):
        raise TileLangError(f"T.atomic_{kind} needs a 32- or 64-bit integer destination, got {d.dtype}")
    return _atomic(kind, dst, value, return_prev, memory_order)


def atomic_or(dst, value, memory_order=None, return_prev=False):
    """dst |= value, atomically (32/64-bit integers)."""
    return _bitwise("or", dst, value, return_prev, memory_order)


def atomic_and(dst, value, memory_order=None, return_prev=False):
    return _bitwise("and", dst, value, return_prev, memory_order)


def atomic_xor(dst, value, memory_order=None, return_prev=False):
    return _bitwise("xor", dst, value, return_prev, memory_order)


def _lanes(x, n, what):
    """`A[..., j]` as the n consecutive elements A[..., j:j+n] (the vector atomics)."""
    if isinstance(x, Buffer) and x.is_var():
        return x.load()
    if not isinstance(x, BufferLoad):
        return x
    if x.buffer.shape and const_int_value(x.buffer.shape[-1]) is not None and \
            const_int_value(x.buffer.shape[-1]) < n:
        raise ShapeMismatchError(f"T.atomic_addx{n}: the {what} `{x.buffer.name}` has fewer than {n} elements "
                                 f"in its last dimension")
    return BufferRegion(x.buffer, [(i, 1) for i in x.indices[:-1]] + [(x.indices[-1], n)])


def _atomic_add_vector(n, dst, value, return_prev, memory_order=None):
    """`T.atomic_addx{n}(C[i, j], V[k, l])`: C[i, j + t] += V[k, l + t] for t < n (a
    scalar value is added to each of the n elements)."""
    if return_prev:
        return _vector_return_prev(n, dst, value, memory_order)
    if isinstance(dst, BufferRegion):   # `C[i, j:j + n]`
        _lane_elements(dst, n, "destination")   # checks it is n consecutive elements
    elif not isinstance(dst, BufferLoad):
        raise TileLangError(f"T.atomic_addx{n} takes the first destination element or {n} of them, "
                            f"e.g. C[i, j] or C[i, j:j + {n}]")
    b = B.require(f"T.atomic_addx{n}")
    memory_order = memory_order_arg(memory_order, what=f"atomic_addx{n}")
    ds, vs = _lane_elements(dst, n, "destination"), _lane_elements(value, n, "value")
    b.emit(_lane_loop(n, ds, vs, memory_order))
    return None


def _lane_loop(n, ds, vs, memory_order, prev=None):
    """`for lane in T.vectorized(n): [prev[lane] =] atomic_add(D[..., j + lane], v)`: one
    thread's n lanes, which the CUDA backend adds with one vector atomic
    (backend/cuda/ops/vector_atomic.py); `prev` receives the previous values."""
    dt = ds[0].dtype
    lane = Var("lane")

    def at_lane(x):
        return BufferLoad(x.buffer, list(x.indices[:-1]) + [x.indices[-1] + lane])
    v = at_lane(vs[0]) if vs[0] is not vs[-1] else vs[0]   # n elements, or one value for all
    v = literal(v, dt) if isinstance(v, (int, float)) else cast(convert(v), dt)
    add = atomic_call("add", at_lane(ds[0]), v, memory_order)
    body = S.Evaluate(add) if prev is None else S.BufferStore(prev, add, [lane])
    return S.For(lane, IntImm(0), IntImm(n), S.VECTORIZED, body)


def _lane_elements(x, n, what):
    """The n elements `x` names: `A[i, j]` (the first of n consecutive ones) or a region
    `A[i, j:j + n]`; a scalar value stands for all n."""
    if isinstance(x, Buffer) and x.is_var():
        x = x.load()
    if isinstance(x, BufferLoad):
        x = _lanes(x, n, what)
    if isinstance(x, BufferRegion):
        sizes = [const_int_value(e) for e in x.extents]
        if sizes[-1] != n or any(s != 1 for s in sizes[:-1]):
            raise ShapeMismatchError(f"T.atomic_addx{n}: the {what} must be {n} consecutive elements, "
                                     f"got a region of shape {tuple(sizes)}")
        base = list(x.starts)
        return [BufferLoad(x.buffer, base[:-1] + [base[-1] + t]) for t in range(n)]
    if isinstance(x, (int, float, PrimExpr)):
        return [x] * n
    raise TileLangError(f"T.atomic_addx{n}: the {what} must be a buffer element or region, got {x!r}")


def _vector_return_prev(n, dst, value, memory_order):
    """`prev = T.atomic_addx{n}(C[i, j:j+n], V[...], return_prev=True)`: each lane's atomic add,
    their previous values in a local tile of n elements (read it as `prev[0:n]` or store it
    to a region: `P[i, j:j+n] = T.atomic_addx{n}(...)`)."""
    b = B.require(f"T.atomic_addx{n}")
    memory_order = memory_order_arg(memory_order, what=f"atomic_addx{n}")
    ds = _lane_elements(dst, n, "destination")
    if not isinstance(ds[0], BufferLoad):
        raise TileLangError(f"T.atomic_addx{n}: the destination must be a buffer element or region")
    vs = _lane_elements(value, n, "value")
    dt = ds[0].dtype
    prev = Buffer(B.source_names("assign")[0] if B.source_names("assign") else f"atomic_addx{n}_prev",
                  (n,), dt, "local")
    b.emit(S.DeclBuffer(prev))
    b.emit(_lane_loop(n, ds, vs, memory_order, prev))
    return BufferRegion(prev, [(IntImm(0), IntImm(n))])


def atomic_addx2(dst, value, return_prev=False, memory_order=None):
    return _atomic_add_vector(2, dst, value, return_prev, memory_order)


def atomic_addx4(dst, value, return_prev=False, memory_order=None):
    return _atomic_add_vector(4, dst, value, return_prev, memory_order)
