"""Calls of hand-written synchronisation (`T.alloc_barrier` mbarriers, register
reallocation, proxy fences), kept as `tl.*` calls in `Evaluate` statements.

Unlike a store, each of these is executed by every thread that reaches it (an
mbarrier counts the arrivals of all of them), never by one thread for the block.
The first argument of the mbarrier calls is the barrier element (`bar[i]`)."""
from __future__ import annotations

from tilelang.ir.expr import BufferLoad, Call, IntImm, PrimExpr
from tilelang.ir.tensor_core_calls import TENSOR_CORE_CALLS

ARRIVE = "tl.mbarrier_arrive"                    # (bar)
ARRIVE_EXPECT_TX = "tl.mbarrier_arrive_expect_tx"  # (bar, bytes)
EXPECT_TX = "tl.mbarrier_expect_tx"              # (bar, bytes)
WAIT_PARITY = "tl.mbarrier_wait_parity"          # (bar, parity)
TEST_PARITY = "tl.mbarrier_test_parity"          # (bar, parity) -> bool: that phase completed (an expression, no wait)
CP_ASYNC_ARRIVE = "tl.cp_async_mbarrier_arrive"  # (bar, noinc): when this thread's cp.async are done
INIT = "tl.mbarrier_init"                        # (bar, count)
FENCE_INIT = "tl.mbarrier_fence_init"            # ()
SET_MAX_NREG = "tl.set_max_nreg"                 # (count, is_inc)
FENCE_PROXY_ASYNC = "tl.fence_proxy_async"       # ()
NAMED_ARRIVE = "tl.named_barrier_arrive"         # (id, threads): bar.arrive
NAMED_SYNC = "tl.named_barrier_sync"             # (id, threads): bar.sync, ordering no memory of its own
CP_ASYNC_COMMIT = "tl.cp_async_commit"           # ()
CP_ASYNC_WAIT = "tl.cp_async_wait"               # (n)
BULK_COMMIT = "tl.bulk_commit_group"             # (): close this thread's bulk (TMA) store group
BULK_WAIT = "tl.bulk_wait_group"                 # (n, read): until at most n groups are pending
# thread-block clusters and the grid (language/cluster.py)
ARRIVE_CLUSTER = "tl.mbarrier_arrive_cluster"    # (bar, cta_id): on that block's barrier
CLUSTER_ARRIVE = "tl.cluster_arrive"             # ()
CLUSTER_ARRIVE_RELAXED = "tl.cluster_arrive_relaxed"  # ()
CLUSTER_WAIT = "tl.cluster_wait"                 # ()
CLUSTER_SYNC = "tl.cluster_sync"                 # ()
SYNC_GRID = "tl.sync_grid"                       # (): the kernel is launched cooperatively
PDL_TRIGGER = "tl.pdl_trigger"                   # (): dependents may launch (language/pdl.py)
PDL_SYNC = "tl.pdl_sync"                         # (): wait for the kernels this one depends on
# issued by one thread of those reaching them (T.copy_cluster with a remote barrier)
BULK_COPY_CLUSTER = "tl.bulk_copy_cluster"       # (dst[i], src[j], bytes, cta_id, bar): dst in block cta_id
ARRIVE_CLUSTER_ONE = "tl.mbarrier_arrive_cluster_one"  # (bar, cta_id): one arrival for the block
# (bar, cta_id): a ring slot released in that block, its readers done (no cluster-scope ordering)
RELEASE_SLOT_CLUSTER = "tl.mbarrier_release_slot_cluster"
CLUSTER_BARRIER_CALLS = frozenset({CLUSTER_ARRIVE, CLUSTER_ARRIVE_RELAXED, CLUSTER_WAIT, CLUSTER_SYNC})
CLUSTER_CALLS = CLUSTER_BARRIER_CALLS | {ARRIVE_CLUSTER, BULK_COPY_CLUSTER, ARRIVE_CLUSTER_ONE, RELEASE_SLOT_CLUSTER}

MBARRIER_CALLS = frozenset({ARRIVE, ARRIVE_EXPECT_TX, EXPECT_TX, WAIT_PARITY, CP_ASYNC_ARRIVE, INIT, ARRIVE_CLUSTER,
                            RELEASE_SLOT_CLUSTER})
EVERY_THREAD_CALLS = MBARRIER_CALLS | {FENCE_INIT, SET_MAX_NREG, FENCE_PROXY_ASYNC, NAMED_ARRIVE, NAMED_SYNC,
                                       CP_ASYNC_COMMIT, CP_ASYNC_WAIT, BULK_COMMIT, BULK_WAIT} | CLUSTER_CALLS | \
    {SYNC_GRID, PDL_TRIGGER, PDL_SYNC}

# hand-written wgmma / ldmatrix / mma.sync: collective over the warp(group)
EVERY_THREAD_CALLS = EVERY_THREAD_CALLS | TENSOR_CORE_CALLS

def call(name: str, *args) -> Call:
    return Call(name, [a if isinstance(a, PrimExpr) else IntImm(int(a)) for a in args], "handle")


def every_thread_call(e) -> bool:
    return isinstance(e, Call) and e.name in EVERY_THREAD_CALLS


def barrier_element(e) -> BufferLoad | None:
    """The mbarrier a call acts on, if it is an mbarrier call."""
    if isinstance(e, Call) and e.name in MBARRIER_CALLS and e.args and isinstance(e.args[0], BufferLoad):
        return e.args[0]
    return None
