"""Hand-written synchronisation from the published API: mbarriers (`T.alloc_barrier`
with `T.barrier_arrive` / `T.barrier_wait` / `T.mbarrier_*` / `T.cp_async_barrier_noinc`),
named-barrier arrivals, register reallocation (`T.set_max_nreg`) and the proxy fence.

They are what producer/consumer kernels written by hand use: branches on the thread
index (`if tx < 128: ...`) give each range of warps its role (the CUDA backend
plans the tile ops of such a branch for that range, backend/cuda/analysis/thread_ranges.py)
and the ranges hand tiles to each other through mbarriers. The barriers the data
flow needs inside one range, and between whole-block statements, the compiler
still inserts itself.

`T.ws(...)` scopes (the published automatic warp specialization) run here with all
of the block's threads, in program order."""
from __future__ import annotations

from tilelang.ir import builder as B
from tilelang.ir import mbarrier as M
from tilelang.ir.buffer import Buffer
from tilelang.ir.errors import TileLangError, located
from tilelang.ir.expr import BufferLoad, IntImm
from tilelang.language.math import _e as _value   # a T.alloc_var reads its value


class _WarpScope:
    """All threads run the scope, so the explicit hand-offs written for split warp
    groups (mbarrier arrivals and waits) inside it are dropped: the compiler's own
    barriers order its data flow."""

    def __init__(self, *ids):
        self.ids = ids

    def __enter__(self):
        b = B.current()
        if b is not None:
            b.ws_depth = getattr(b, "ws_depth", 0) + 1
        return self

    def __exit__(self, *exc):
        b = B.current()
        if b is not None:
            b.ws_depth -= 1
        return False


def ws(*warp_group_ids):
    """`with T.ws(0): ...`: a producer/consumer warp-group scope (program order here)."""
    return _WarpScope(*warp_group_ids)


def _mbar(x, what):
    """The barrier element a call acts on: `bar` (its first barrier) or `bar[i]`."""
    if isinstance(x, Buffer) and x.scope == "shared.barrier":
        return BufferLoad(x, [IntImm(0)])
    if isinstance(x, BufferLoad) and x.buffer.scope == "shared.barrier":
        return x
    name = getattr(x, "name", None) or getattr(getattr(x, "buffer", None), "name", None) or type(x).__name__
    raise TileLangError(f"T.{what} takes a barrier from T.alloc_barrier (or one element of it), got `{name}`",
                        hint="bars = T.alloc_barrier([128] * 2); T.barrier_arrive(bars[0])")


def in_ws_scope() -> bool:
    """Inside a `T.ws(...)` scope, whose hand-offs are dropped (see _WarpScope)."""
    b = B.current()
    return b is not None and getattr(b, "ws_depth", 0) > 0


def _sync_call(name, *args):
    """The call, or None inside a `T.ws` scope."""
    return None if in_ws_scope() else M.call(name, *args)




def mbarrier_wait_parity(mbarrier, parity):
    """Wait until the phase of `mbarrier` with parity `parity` (0 or 1) has completed."""
    return _sync_call(M.WAIT_PARITY, _mbar(mbarrier, "mbarrier_wait_parity"), _value(parity))


def barrier_wait(mbarrier, parity):
    """`T.mbarrier_wait_parity`."""
    return _sync_call(M.WAIT_PARITY, _mbar(mbarrier, "barrier_wait"), _value(parity))


def mbarrier_arrive(mbarrier, cta_id=None):
    """This thread arrives on `mbarrier` (a phase completes after `arrive_count` arrivals)."""
    if cta_id is not None:
        raise TileLangError("T.mbarrier_arrive(..., cta_id=...) arrives on another block of a cluster; "
                            "thread-block clusters are not supported yet")
    return _sync_call(M.ARRIVE, _mbar(mbarrier, "mbarrier_arrive"))


def barrier_arrive(mbarrier):
    """`T.mbarrier_arrive`."""
    return _sync_call(M.ARRIVE, _mbar(mbarrier, "barrier_arrive"))


ptx_arrive_barrier = barrier_arrive


def mbarrier_expect_tx(mbarrier, tx):
    """Announce `tx` more bytes of asynchronous copies that complete on `mbarrier`."""
    return _sync_call(M.EXPECT_TX, _mbar(mbarrier, "mbarrier_expect_tx"), _value(tx))


def mbarrier_arrive_expect_tx(mbarrier, tx):
    """Arrive on `mbarrier` and announce `tx` bytes of asynchronous copies."""
    return _sync_call(M.ARRIVE_EXPECT_TX, _mbar(mbarrier, "mbarrier_arrive_expect_tx"), _value(tx))


ptx_arrive_barrier_expect_tx = mbarrier_arrive_expect_tx


def cp_async_barrier_noinc(barrier):
    """Arrive on `barrier` once this thread's earlier `T.ptx_cp_async` copies have landed;
    the arrival counts toward the barrier's `arrive_count`."""
    return _sync_call(M.CP_ASYNC_ARRIVE, _mbar(barrier, "cp_async_barrier_noinc"), 1)


def ptx_cp_async_barrier(barrier):
    """Make the current phase of `barrier` also wait for this thread's earlier cp.async
    copies (no arrival of its own)."""
    return _sync_call(M.CP_ASYNC_ARRIVE, _mbar(barrier, "ptx_cp_async_barrier"), 0)


def ptx_init_barrier_thread_count(barrier, thread_count):
    """(Re)initialise `barrier` for `thread_count` arrivals per phase."""
    return M.call(M.INIT, _mbar(barrier, "ptx_init_barrier_thread_count"), _value(thread_count))


def ptx_fence_barrier_init():
    return M.call(M.FENCE_INIT)


def fence_proxy_async():
    """Order this thread's shared-memory writes before later asynchronous-proxy reads
    (wgmma operands, TMA stores)."""
    return M.call(M.FENCE_PROXY_ASYNC)


def named_barrier_arrive(barrier_id, thread_count):
    """Arrive on the named barrier `barrier_id` of `thread_count` threads without waiting
    (`bar.arrive`); the waiting side uses `T.sync_threads(barrier_id, thread_count)`."""
    return M.call(M.NAMED_ARRIVE, _value(barrier_id), _value(thread_count))


def tma_store_arrive():
    """Close this thread's group of bulk (TMA) stores issued so far (`cp.async.bulk.commit_group`)."""
    return M.call(M.BULK_COMMIT)


def tma_store_wait(n=0, read=False):
    """Wait until at most `n` of this thread's bulk store groups are pending; with
    `read=True` only until their shared-memory sources have been read (so the tile may be
    overwritten), not until the global writes are visible."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise located(ValueError, f"T.tma_store_wait: n must be an int >= 0, got {n!r}")
    return M.call(M.BULK_WAIT, IntImm(n), IntImm(int(bool(read))))


def ptx_commit_group():
    """Close the group of this thread's cp.async copies issued so far."""
    return M.call(M.CP_ASYNC_COMMIT)


def ptx_wait_group(num):
    """Wait until at most `num` of this thread's cp.async groups are still in flight."""
    return M.call(M.CP_ASYNC_WAIT, _value(num))
