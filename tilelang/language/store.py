"""`buf[i, j] = v` in a kernel body: an element store, or, to a slice, a tile copy
(`A[0, 4:8] = B[0, 0:4]`) or fill (`A[0, 4:8] = x`). Installed as the IR buffers' store
hook when the language is imported (ir/buffer.py `set_store_handler`)."""
from __future__ import annotations

from tilelang.ir import stmt as S
from tilelang.ir.buffer import Buffer, BufferRegion, set_store_handler
from tilelang.ir.builder import require
from tilelang.ir.expr import PrimExpr, cast, convert, literal


def store(buffer, value, indices):
    b = require("a buffer store")
    if isinstance(indices, BufferRegion):   # a store to a slice: a tile copy or fill
        if isinstance(value, (BufferRegion, Buffer)) and not (isinstance(value, Buffer) and value.is_var()):
            from tilelang.language.copy import copy
            copy(value, indices)
        else:
            from tilelang.language.reduce import fill
            fill(indices, value)
        return
    if not isinstance(value, PrimExpr):
        if isinstance(value, Buffer) and value.is_var():
            value = value.load()
        else:
            value = literal(value, buffer.dtype) if isinstance(value, (int, float, bool)) else convert(value)
    if value.dtype is not buffer.dtype:
        value = cast(value, buffer.dtype)
    b.emit(S.BufferStore(buffer, value, indices))


set_store_handler(store)
