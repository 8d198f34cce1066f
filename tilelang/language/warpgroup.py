"""Ordering of hand-written wgmma (sm_90a): `T.warpgroup_arrive()` before a batch of
`T.ptx_wgmma_*` (wgmma.fence: earlier register and shared-memory writes are seen by
it), `T.warpgroup_commit_batch()` after it, `T.warpgroup_wait(n)` until at most `n`
batches are in flight, and `T.warpgroup_fence_operand(C)` that keeps the compiler
from moving reads or writes of the accumulator registers across the asynchronous
mma. Every thread of the warpgroup runs each of them."""
from __future__ import annotations

from tilelang.ir import builder as B
from tilelang.language.register_operand import const_int, registers
from tilelang.ir import tensor_core_calls as TC
from tilelang.ir.buffer import Buffer, BufferData
from tilelang.ir.dtypes import as_dtype
from tilelang.ir.errors import TileLangError
from tilelang.ir.expr import access_ptr, call, convert, const_int_value


def warpgroup_arrive():
    B.require("T.warpgroup_arrive")
    return call(TC.WARPGROUP_ARRIVE, [], "handle")


def warpgroup_commit_batch():
    B.require("T.warpgroup_commit_batch")
    return call(TC.WARPGROUP_COMMIT, [], "handle")


def warpgroup_wait(num_mma: int):
    """Wait until at most `num_mma` committed batches are still running."""
    B.require("T.warpgroup_wait")
    n = const_int(num_mma, "T.warpgroup_wait: the number of batches left in flight")
    if not 0 <= n <= 7:
        raise TileLangError(f"T.warpgroup_wait takes 0..7 batches left in flight, got {n}")
    return call(TC.WARPGROUP_WAIT, [convert(n)], "handle")


def warpgroup_fence_operand(buffer_or_ptr, offset=0, num_regs=None, dtype=None):
    """Fence `num_regs` 32-bit registers of `buffer_or_ptr` (from element `offset`);
    a whole buffer fences all of its registers."""
    what = "T.warpgroup_fence_operand"
    B.require(what)
    load = registers(buffer_or_ptr, offset, f"{what}: the operand")
    buf = load.buffer
    if dtype is not None and as_dtype(dtype) != buf.dtype:
        raise TileLangError(f"{what}: dtype {dtype} does not match `{buf.name}` ({buf.dtype})")
    if num_regs is None:
        if not isinstance(buffer_or_ptr, (Buffer, BufferData)):
            raise TileLangError(f"{what}: give num_regs when passing one element or a pointer")
        total = 1
        for d in buf.shape:
            c = const_int_value(d)
            if c is None:
                raise TileLangError(f"{what}: `{buf.name}` has a symbolic shape; give num_regs")
            total *= c
        num_regs = (total * buf.dtype.bits + 31) // 32
    n = const_int(num_regs, f"{what}: num_regs")
    if buf.dtype.bits not in (16, 32):
        raise TileLangError(f"{what} fences 16- or 32-bit accumulators, `{buf.name}` is {buf.dtype}")
    return call(TC.WARPGROUP_FENCE_OPERAND, [access_ptr(load, 3), convert(n)], "handle")
