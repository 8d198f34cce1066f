"""Explicit-width loads and stores: `T.ldg32/64/128/256` and `T.stg*` (global memory),
`T.lds32/64/128` and `T.sts*` (shared memory). Each moves 4 to 32 bytes starting at
one element, as raw 32-bit words, whatever the buffer's dtype.

A 32-bit load is a `uint32` expression. A wider one is materialised where it is
written, into a fresh per-thread array of `uint32` words (the published API returns
a `uint32xN` vector): pass it to the store of the same width, read `v[k]`, or bit-cast
a word with `T.reinterpret`. A false `pred` skips the global access: loads give zeros.
The CUDA backend emits `ld/st.global.v*.b32` and 16-byte shared accesses; the CPU
backend copies the bytes."""
from __future__ import annotations

from tilelang.ir import builder as B
from tilelang.ir import stmt as S
from tilelang.ir.buffer import Buffer, BufferRegion
from tilelang.ir.dtypes import DataType
from tilelang.ir.errors import TileLangError
from tilelang.ir.expr import (BufferLoad, IntImm, PrimExpr, access_ptr, as_bool, call, const_int_value,
                              convert)

UINT32 = DataType("uint32")


def _first_element(x, what):
    """(first element, bytes the operand covers or None) of an element, region or buffer."""
    if isinstance(x, BufferLoad):
        return x, None
    if isinstance(x, BufferRegion):
        load, ext = BufferLoad(x.buffer, x.starts), x.extents
    elif isinstance(x, Buffer) and not x.is_var():
        load, ext = BufferLoad(x, [IntImm(0)] * x.ndim), x.shape
    else:
        raise TileLangError(f"{what} takes a buffer, a region such as A[i:i + 4] or an element such as A[i], "
                            f"got {type(x).__name__}")
    n = 1
    for e in ext:
        c = const_int_value(e)
        if c is None:
            return load, None
        n *= c
    return load, n * load.buffer.dtype.bits // 8


def _operand(x, nbytes, scope, what):
    load, covered = _first_element(x, what)
    buf = load.buffer
    if not buf.scope.startswith(scope):
        raise TileLangError(f"{what} accesses {scope} memory; `{buf.name}` is {buf.scope}",
                            hint="use T.ldg*/T.stg* for global and T.lds*/T.sts* for shared buffers")
    if covered is not None and covered != nbytes:
        raise TileLangError(f"{what} moves {nbytes} bytes; the region of `{buf.name}` holds {covered}",
                            hint=f"pass {nbytes * 8 // buf.dtype.bits} elements of {buf.dtype}, or one element")
    return load


def _pred(pred):
    if pred is None:
        return IntImm(1, "bool")
    if isinstance(pred, Buffer) and pred.is_var():
        pred = pred.load()
    return as_bool(convert(pred))


def _words(nbytes, what):
    """A fresh per-thread array that receives a load of `nbytes`."""
    b = B.require(what)
    names = B.source_names("assign")
    buf = Buffer(names[0] if names else what.split(".")[-1], (nbytes // 4,), UINT32, "local")
    b.emit(S.DeclBuffer(buf))
    return buf


def _load(nbytes, src, pred, scope, what):
    load = _operand(src, nbytes, scope, what)
    args = [access_ptr(load, 1)] + ([_pred(pred)] if scope == "global" else [])
    if nbytes == 4:
        return call(f"tl.ld{scope[0]}32", args, UINT32)
    words = _words(nbytes, what)
    B.emit(S.Evaluate(call(f"tl.ld{scope[0]}", [access_ptr(BufferLoad(words, [IntImm(0)]), 2), *args[:1],
                                                   IntImm(nbytes), *args[1:]], "handle")))
    return words


def _value_words(value, nbytes, what):
    """The source of a store wider than 32 bits: memory holding the words, i.e. what
    the load of that width returned, or a buffer or region of the same size."""
    if not isinstance(value, (Buffer, BufferRegion)) or (isinstance(value, Buffer) and value.is_var()):
        raise TileLangError(f"{what} stores {nbytes} bytes from memory: pass what T.ldg{nbytes * 8} / "
                            f"T.lds{nbytes * 8} returned, or a buffer or region of {nbytes} bytes",
                            hint="a 32-bit value goes through T.stg32 / T.sts32")
    load, covered = _first_element(value, what)
    if covered is not None and covered != nbytes:
        raise TileLangError(f"{what} stores {nbytes} bytes; `{load.buffer.name}` holds {covered}")
    return access_ptr(load, 1)


def _value32(value, what):
    if isinstance(value, Buffer) and value.is_var():
        value = value.load()
    v = convert(value)
    if v.dtype.bits != 32:
        raise TileLangError(f"{what} stores a 32-bit value, got {v.dtype}",
                            hint="bit-cast it first, e.g. T.reinterpret(x, 'uint32')")
    return v if v.dtype == UINT32 else call("reinterpret", [v], UINT32)


def _store(nbytes, dst, value, pred, scope, what):
    B.require(what)
    load = _operand(dst, nbytes, scope, what)
    tail = [_pred(pred)] if scope == "global" else []
    if nbytes == 4:
        return call(f"tl.st{scope[0]}32", [access_ptr(load, 2), _value32(value, what), *tail], "handle")
    return call(f"tl.st{scope[0]}", [access_ptr(load, 2), _value_words(value, nbytes, what), IntImm(nbytes),
                                     *tail], "handle")


def ldg(src):
    """`T.__ldg(A[i])`: the element, read through the read-only (texture) cache; the same
    value as `A[i]` (the tensor must not be written by this kernel while it runs)."""
    B.require("T.__ldg")
    if isinstance(src, BufferRegion):
        src = src.buffer[tuple(s for s in src.starts)] if all(const_int_value(e) == 1 for e in src.extents) else src
    if not isinstance(src, BufferLoad) or src.buffer.scope != "global":
        raise TileLangError(f"T.__ldg reads one element of a global tensor, e.g. T.__ldg(A[i]); got {src!r}")
    return call("tl.ldg_value", [src], src.dtype)


def ldg32(src, pred=None):
    """32 bits from global memory at `src` as a uint32 (0 when `pred` is false)."""
    return _load(4, src, pred, "global", "T.ldg32")


def ldg64(src, pred=None):
    return _load(8, src, pred, "global", "T.ldg64")


def ldg128(src, pred=None):
    return _load(16, src, pred, "global", "T.ldg128")


def ldg256(src, pred=None):
    return _load(32, src, pred, "global", "T.ldg256")


def stg32(dst, value, pred=None):
    """Store the 32-bit `value` to global memory at `dst` (skipped when `pred` is false)."""
    return _store(4, dst, value, pred, "global", "T.stg32")


def stg64(dst, value, pred=None):
    return _store(8, dst, value, pred, "global", "T.stg64")


def stg128(dst, value, pred=None):
    return _store(16, dst, value, pred, "global", "T.stg128")


def stg256(dst, value, pred=None):
    return _store(32, dst, value, pred, "global", "T.stg256")


def lds32(src):
    """32 bits from shared memory at `src` as a uint32."""
    return _load(4, src, None, "shared", "T.lds32")


def lds64(src):
    return _load(8, src, None, "shared", "T.lds64")


def lds128(src):
    return _load(16, src, None, "shared", "T.lds128")


def sts32(dst, value):
    return _store(4, dst, value, None, "shared", "T.sts32")


def sts64(dst, value):
    return _store(8, dst, value, None, "shared", "T.sts64")


def sts128(dst, value):
    return _store(16, dst, value, None, "shared", "T.sts128")
