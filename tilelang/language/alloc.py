"""Buffer allocation: `T.alloc_shared`, `alloc_fragment`, `alloc_local`, `alloc_var`,
`alloc_global`, plus the GPU synchronisation objects (`alloc_barrier`)."""
from __future__ import annotations

import math

from tilelang.ir import builder as B
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.buffer import Buffer
from tilelang.ir.expr import PrimExpr, convert, cast, const_int_value
from tilelang.ir.dtypes import as_dtype
from tilelang.ir.errors import TileLangError, ShapeMismatchError, located


def _name(default):
    names = B.source_names("assign")
    return names[0] if names else default


def _alloc(shape, dtype, scope, default_name):
    b = B.require(f"T.alloc_{default_name}")
    if isinstance(shape, (int, PrimExpr)):
        shape = (shape,)
    try:
        dtype = as_dtype(dtype)
    except TileLangError:
        raise   # already says where and what (an unknown name: the close ones)
    except ValueError as e:
        raise TileLangError(str(e), hint="use a dtype such as 'float16', 'float32' or T.bfloat16") from None
    buf = Buffer(_name(default_name), tuple(shape), dtype, scope)
    b.emit(S.DeclBuffer(buf))
    return buf


def alloc_shared(shape, dtype="float32", scope="shared.dyn"):
    return _alloc(shape, dtype, "shared", "shared")


def alloc_fragment(shape, dtype="float32", scope="local.fragment"):
    return _alloc(shape, dtype, "local.fragment", "fragment")


def alloc_local(shape, dtype="float32", scope="local"):
    return _alloc(shape, dtype, "local", "local")


def alloc_buffer(shape, dtype="float32", scope="local"):
    return _alloc(shape, dtype, scope, "buf")


def alloc_global(shape, dtype="float32"):
    """A global workspace that lives for one call of the function (e.g. split-KV
    partial results read by a second `T.Kernel`)."""
    b = B.require("T.alloc_global")
    if b.kernel_depth:
        raise TileLangError("T.alloc_global must be called outside `with T.Kernel(...)`",
                            hint="allocate the workspace at the top of the function body")
    return _alloc(shape, dtype, "global", "workspace")


def alloc_var(dtype="int32", *args, init=None, scope="local.var"):
    if args:
        init = args[0]
    b = B.require("T.alloc_var")
    dtype = as_dtype(dtype)
    buf = Buffer(_name("var"), (1,), dtype, "local.var")
    if isinstance(init, float) and dtype.is_float and dtype.bits in (16, 32) and init == init \
            and abs(init) != float("inf"):
        import numpy as np
        from tilelang.ir.dtypes import numpy_dtype
        big = float(np.finfo(numpy_dtype(dtype)).max)
        if abs(init) > big:
            raise located(ValueError, f"T.alloc_var: the initializer {init!r} exceeds maximum of {dtype} ({big:g})")
    if init is not None:
        buf.init = cast(convert(init), dtype) if isinstance(init, PrimExpr) else convert(
            dtype(init) if isinstance(init, (int, float, bool)) else init)
    b.emit(S.DeclBuffer(buf))
    return buf


def alloc_barrier(arrive_count=1):
    """Shared-memory mbarriers, one per entry of `arrive_count` (an int: one barrier):
    a phase of barrier i completes after `arrive_count[i]` arrivals (and the bytes
    announced with expect_tx). The block initialises them before its first statement."""
    b = B.require("T.alloc_barrier")
    counts = list(arrive_count) if isinstance(arrive_count, (list, tuple)) else [arrive_count]
    vals = []
    for c in counts:
        v = c if isinstance(c, int) else const_int_value(convert(c))
        if v is None or v <= 0:
            raise TileLangError(f"T.alloc_barrier: arrive counts must be positive constants, got {c!r}")
        vals.append(int(v))
    buf = Buffer(_name("mbarrier"), (len(vals),), "uint64", "shared.barrier")
    buf.arrive_counts = vals
    b.emit(S.DeclBuffer(buf))
    return buf


REDUCER_OPS = ("sum", "max", "min", "bitand", "bitor", "bitxor")


def alloc_reducer(shape, dtype="float32", op="sum", replication=None):
    """A reducer: outputs that T.Parallel iterations contribute to, combined with `op`.

    Epoch form: `T.reducer_init(acc)`, `T.reducer_update(acc[i], v)` inside T.Parallel
    loops, `T.finalize_reducer(acc, dst)` writes the results to the fragment `dst` (the
    reducer itself is never read or written directly; transform/lower_reducers.py checks
    that). Legacy form (no epoch op touches it): `T.clear(acc)`, `acc[i] += v`, then
    `T.finalize_reducer(acc)` in place. On the GPU each thread keeps partial results
    until the finalize combines them."""
    if op not in REDUCER_OPS:
        raise TileLangError(f"T.alloc_reducer: op must be one of {', '.join(REDUCER_OPS)}, got {op!r}")
    dt = as_dtype(dtype)
    if op in ("bitand", "bitor", "bitxor") and not (dt.is_int or dt.is_bool):
        raise located(AssertionError, f"T.alloc_reducer: bitwise reducer op '{op}' requires an integer dtype, "
                                      f"got {dt}")
    buf = alloc_fragment(shape, dtype)
    buf.reducer_op = op
    return buf


def _reducer(acc, what):
    if getattr(acc, "reducer_op", None) is None:
        raise TileLangError(f"T.{what} takes a buffer from T.alloc_reducer, got `{getattr(acc, 'name', acc)}`")
    return acc


def reducer_init(reducer, init=None):
    """Open a reduction epoch of `reducer`; `init` (evaluated here) is combined once into
    every output when the epoch is finalized."""
    from tilelang.ir.expr import literal
    _reducer(reducer, "reducer_init")
    if init is not None:
        if isinstance(init, Buffer) and init.is_var():
            init = init.load()
        if isinstance(init, (bool, int, float)):
            init = literal(init, reducer.dtype)
        init = convert(init)
        if init.dtype != reducer.dtype:
            raise located(TypeError, f"T.reducer_init: the starting value's dtype {init.dtype} does not match "
                                     f"reducer `{reducer.name}` ({reducer.dtype})",
                          hint=f"cast it: T.cast(value, '{reducer.dtype}')")
    B.require("T.reducer_init").emit(TO.ReducerInit(reducer, init))


def reducer_update(target, value):
    """Contribute `value` to the output `acc[indices]` (inside a T.Parallel loop: each
    iteration contributes once)."""
    from tilelang.ir.expr import BufferLoad, literal, cast
    if not isinstance(target, BufferLoad):
        raise located(ValueError, f"T.reducer_update takes `acc[indices]` as its first argument, got "
                                  f"{type(target).__name__}")
    acc = _reducer(target.buffer, "reducer_update")
    if isinstance(value, Buffer) and value.is_var():
        value = value.load()
    v = literal(value, acc.dtype) if isinstance(value, (bool, int, float)) else cast(convert(value), acc.dtype)
    B.require("T.reducer_update").emit(TO.ReducerUpdate(acc, target.indices, v))


def finalize_reducer(reducer, dst=None, batch=1, annotations=None):
    """Combine the partial results of a reducer: into `dst` (the epoch form; the reducer
    is dead afterwards) or in place (the legacy form). `batch` groups outputs per
    cross-thread exchange on the GPU (no effect on results)."""
    _reducer(reducer, "finalize_reducer")
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise located(ValueError, f"finalize_reducer: batch must be >= 1, got {batch!r}")
    sizes = [const_int_value(dim) for dim in reducer.shape]
    n = math.prod(sizes) if None not in sizes else None
    if batch > 1 and n is not None:
        if batch > n:
            raise located(ValueError, f"finalize_reducer: batch ({batch}) exceeds total output elements ({n}) "
                                      f"of `{reducer.name}`")
        if n % batch:
            raise located(ValueError, f"finalize_reducer: batch ({batch}) must evenly divide total output "
                                      f"elements ({n}) of `{reducer.name}`")
    d = None
    if dst is not None:
        from tilelang.ir.buffer import to_region
        d = to_region(dst)
        if d.buffer.dtype != reducer.dtype:
            raise located(TypeError, f"T.finalize_reducer: `{d.buffer.name}` is {d.buffer.dtype}, reducer "
                                     f"`{reducer.name}` is {reducer.dtype}")
    B.require("T.finalize_reducer").emit(TO.FinalizeReducer(reducer, reducer.reducer_op, d, batch))


def empty_like(*a, **k):
    raise TileLangError("empty_like is not supported")


def _alias(buf, shape, dtype, what):
    b = B.require(what)
    if isinstance(shape, (int, PrimExpr)):
        shape = (shape,)
    dtype = as_dtype(dtype) if dtype is not None else buf.dtype
    from tilelang.ir.expr import const_int_value
    old = buf.numel() * buf.dtype.bits
    new = 1
    for d in shape:
        new = new * d
    new = new * dtype.bits
    co, cn = const_int_value(old), const_int_value(new)
    if co is not None and cn is not None and co != cn:
        raise ShapeMismatchError(f"{what}: {buf.name} has {co // 8} bytes, the new view {cn // 8}",
                            hint="the view must cover exactly the same bytes")
    view = Buffer(_name(buf.name + "_view"), tuple(shape), dtype, buf.scope)
    view.alias_of = buf
    b.emit(S.DeclBuffer(view))
    return view


def reshape(buf, shape):
    """A view of `buf` with another shape (same elements, row-major)."""
    return _alias(buf, shape, None, "T.reshape")


def view(buf, shape=None, dtype=None):
    """A view of `buf` with another shape and/or element type (a bit reinterpretation)."""
    if shape is None:
        dt = as_dtype(dtype) if dtype is not None else buf.dtype
        shape = tuple(buf.shape[:-1]) + (buf.shape[-1] * buf.dtype.bits // dt.bits,)
    return _alias(buf, shape, dtype, "T.view")
