"""Thin wrappers over single PTX instructions from the published API."""
from __future__ import annotations

from tilelang.ir import builder as B
from tilelang.ir.async_copy import CP_ASYNC_BYTES, PTX_CP_ASYNC_LANE, cp_async_call
from tilelang.ir.buffer import Buffer, BufferRegion, is_packed
from tilelang.ir.errors import TileLangError
from tilelang.ir.expr import BufferLoad, Call, IntImm, access_ptr, addressed_load, as_bool, const_int_value, convert


def _pointer(x, mask, what):
    """An element pointer from `T.access_ptr(...)`, an element `A[i]`, a region or a buffer."""
    load = addressed_load(x)
    if load is None:
        if isinstance(x, BufferLoad):
            load = x
        elif isinstance(x, BufferRegion):
            load = BufferLoad(x.buffer, [s for s, _ in x.ranges])
        elif isinstance(x, Buffer) and not x.is_var():
            load = BufferLoad(x, [IntImm(0)] * x.ndim)
        else:
            raise TileLangError(f"T.ptx_cp_async: the {what} must be T.access_ptr(...) or a buffer element, "
                                f"got {type(x).__name__}")
    return access_ptr(load, mask), load


def ptx_cp_async(dst_access_ptr, src_access_ptr, num_elems, predicate=None):
    """`T.ptx_cp_async(dst, src, n)`: this thread copies `n` elements (4, 8 or 16 bytes)
    from global memory `src` to shared memory `dst`; with `predicate` false the
    destination is zero-filled instead."""
    B.require("T.ptx_cp_async")
    dst, dload = _pointer(dst_access_ptr, 2, "destination")
    src, sload = _pointer(src_access_ptr, 1, "source")
    if not dload.buffer.scope.startswith("shared"):
        raise TileLangError(f"T.ptx_cp_async writes shared memory; `{dload.buffer.name}` is {dload.buffer.scope}")
    if dload.buffer.dtype.bits != sload.buffer.dtype.bits:
        raise TileLangError(f"T.ptx_cp_async copies raw bytes between elements of one width: "
                            f"`{dload.buffer.name}` is {dload.buffer.dtype}, `{sload.buffer.name}` is "
                            f"{sload.buffer.dtype}")
    if is_packed(dload.buffer) != is_packed(sload.buffer):
        raise TileLangError(f"T.ptx_cp_async copies raw bytes: `{sload.buffer.name}` ({sload.buffer.scope}) stores "
                            f"two {sload.buffer.dtype} elements per byte and `{dload.buffer.name}` "
                            f"({dload.buffer.scope}) one per byte here",
                            hint="copy 4-bit tensors with T.copy")
    n = const_int_value(convert(num_elems)) if not isinstance(num_elems, int) else num_elems
    if n is None:
        raise TileLangError("T.ptx_cp_async: the element count must be a compile-time constant")
    nbits = n * dload.buffer.dtype.bits
    if isinstance(predicate, Buffer) and predicate.is_var():
        predicate = predicate.load()
    pred = IntImm(1, "bool") if predicate is None else as_bool(predicate)
    if nbits < 32 and B.current().vectorized_depth:
        # one lane of a wider copy: the loop's lanes become one cp.async
        # (transform/fold_vectorized_cp_async.py)
        return Call(PTX_CP_ASYNC_LANE, [dst, src, IntImm(nbits), pred], "handle")
    if nbits % 8 or nbits // 8 not in CP_ASYNC_BYTES:
        raise TileLangError(f"T.ptx_cp_async moves 4, 8 or 16 bytes; {n} x {dload.buffer.dtype} is {nbits / 8:g}",
                            hint="copy wider chunks with several calls, or copy one element per lane "
                                 "of a T.vectorized loop")
    return cp_async_call(dst, src, nbits // 8, pred)
