"""`T.ptx_cp_async`: one thread copies 4, 8 or 16 bytes from global to shared memory
(`cp.async` on sm_80+). Kept as a `tl.ptx_cp_async` call whose arguments are the
destination and source element pointers, the byte count and a predicate (false:
the destination is zero-filled and nothing is read).

Semantics here: the copy has completed when the statement ends, for the thread that
issued it (the CUDA backend waits for it at once), so ordinary data flow — and the
barriers the compiler inserts from it — orders it with later reads."""
from __future__ import annotations

from tilelang.ir.expr import Call, IntImm, PrimExpr, addressed_load

PTX_CP_ASYNC = "tl.ptx_cp_async"
CP_ASYNC_BYTES = (4, 8, 16)
# (dst ptr, src ptr, bits, pred): one lane of a narrower copy in a T.vectorized loop,
# folded into one PTX_CP_ASYNC by transform/fold_vectorized_cp_async.py
PTX_CP_ASYNC_LANE = "tl.ptx_cp_async_lane"


def cp_async_call(dst_ptr: Call, src_ptr: Call, nbytes: int, pred: PrimExpr) -> Call:
    return Call(PTX_CP_ASYNC, [dst_ptr, src_ptr, IntImm(int(nbytes)), pred], "handle")


def is_cp_async(e) -> bool:
    return isinstance(e, Call) and e.name == PTX_CP_ASYNC


def cp_async_parts(e: Call):
    """(destination element, source element, bytes, predicate)."""
    dst, src, nbytes, pred = e.args
    return addressed_load(dst), addressed_load(src), nbytes.value, pred
