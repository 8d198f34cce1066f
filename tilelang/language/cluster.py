"""Thread-block clusters and grid-wide synchronisation (CUDA, sm_90).

A cluster is a group of blocks (`T.Kernel(..., cluster_dims=(x, y, z))` or
`T.ClusterKernel`) that the GPU runs at the same time on neighbouring SMs: they
synchronise with the cluster barrier (`T.cluster_arrive` / `T.cluster_wait` /
`T.cluster_sync`), arrive on each other's mbarriers (`T.alloc_cluster_barrier`,
`T.mbarrier_arrive(bar, cta_id=r)`) and write each other's shared memory
(`T.copy_cluster(..., dst_block=r)`). `T.sync_grid()` waits for every thread of
every block of the grid; the runtime then launches the kernel cooperatively.

Like the mbarrier calls (ir/mbarrier.py), each of these is executed by every thread
that reaches it. On the CPU backend a cluster of one block makes them no-ops; larger
clusters and grid barriers are refused there."""
from __future__ import annotations

from tilelang.ir import builder as B
from tilelang.ir import mbarrier as M
from tilelang.ir import stmt as S
from tilelang.ir.cluster import BLOCK_RANK_IN_CLUSTER, ST_CLUSTER
from tilelang.ir.buffer import Buffer, BufferRegion, to_region
from tilelang.ir.errors import TileLangError
from tilelang.ir.expr import BufferLoad, Call, IntImm, Var, access_ptr, const_int_value, convert
from tilelang.language.kernel import KernelFrame
from tilelang.language.math import _e as _value   # a T.alloc_var reads its value



def ClusterKernel(*blocks, cluster_dims, threads=None, prelude=None):  # noqa: N802 - published name
    """`T.Kernel` whose blocks form clusters of `cluster_dims` ((x, y, z), or an int for
    (x, 1, 1)); the grid must be a whole number of clusters along every axis."""
    return KernelFrame(*blocks, threads=threads, prelude=prelude, cluster_dims=cluster_dims)


def _every_thread(name, *args):
    B.require(f"T.{name.split('.')[-1]}")
    return M.call(name, *args)


def cluster_arrive():
    """This thread arrives on the cluster barrier (release: its earlier writes,
    distributed shared memory included, are visible to the blocks that wait)."""
    return _every_thread(M.CLUSTER_ARRIVE)


def cluster_arrive_relaxed():
    """`T.cluster_arrive` without ordering memory."""
    return _every_thread(M.CLUSTER_ARRIVE_RELAXED)


def cluster_wait():
    """Wait until every thread of every block of the cluster has arrived."""
    return _every_thread(M.CLUSTER_WAIT)


def cluster_sync():
    """`T.cluster_arrive()` then `T.cluster_wait()`: a barrier over the whole cluster."""
    return _every_thread(M.CLUSTER_SYNC)


def block_rank_in_cluster():
    """The block's rank in its cluster, 0 .. blocks per cluster - 1 (x fastest)."""
    B.require("T.block_rank_in_cluster")
    return Call(BLOCK_RANK_IN_CLUSTER, [], "int32")


def sync_grid():
    """A barrier over every thread of the whole grid (global memory written before it
    is visible after it). The kernel is launched cooperatively: all its blocks must
    fit on the GPU at once, which the runtime checks."""
    return _every_thread(M.SYNC_GRID)


def alloc_cluster_barrier(arrive_count=1):
    """`T.alloc_barrier` whose barriers other blocks of the cluster arrive on
    (`T.mbarrier_arrive(bar, cta_id=r)`) and wait with cluster-wide ordering. Put a
    `T.cluster_sync()` between the allocation and the first remote arrival (every
    block must have initialised its barriers)."""
    from tilelang.language.alloc import alloc_barrier
    buf = alloc_barrier(arrive_count)
    buf.cluster_barrier = True
    return buf


def _cluster_bar(x, what):
    if isinstance(x, Buffer) and x.scope == "shared.barrier":
        x = BufferLoad(x, [IntImm(0)])
    if isinstance(x, BufferLoad) and x.buffer.scope == "shared.barrier":
        if not getattr(x.buffer, "cluster_barrier", False):
            raise TileLangError(f"T.{what}: `{x.buffer.name}` comes from T.alloc_barrier; a barrier that other "
                                f"blocks of the cluster arrive on comes from T.alloc_cluster_barrier",
                                hint="bar = T.alloc_cluster_barrier([1])")
        return x
    name = getattr(x, "name", None) or getattr(getattr(x, "buffer", None), "name", None) or type(x).__name__
    raise TileLangError(f"T.{what} takes a barrier from T.alloc_cluster_barrier (or one element of it), "
                        f"got `{name}`")




def ptx_arrive_cluster_barrier(mbarrier, cta_id):
    """This thread arrives on the barrier `mbarrier` of block `cta_id` of the cluster."""
    return _every_thread(M.ARRIVE_CLUSTER, _cluster_bar(mbarrier, "ptx_arrive_cluster_barrier"), _value(cta_id))


def mbarrier_arrive(mbarrier, cta_id=None):
    """This thread arrives on `mbarrier` (with `cta_id`: on that barrier of block
    `cta_id` of the cluster; it must come from T.alloc_cluster_barrier)."""
    if cta_id is not None:
        return _every_thread(M.ARRIVE_CLUSTER, _cluster_bar(mbarrier, "mbarrier_arrive"), _value(cta_id))
    from tilelang.language.sync import mbarrier_arrive as local_arrive
    return local_arrive(mbarrier)


# T.copy_cluster ---------------------------------------------------------------------
def _shared_region(x, what):
    if isinstance(x, Buffer):
        x = to_region(x)
    if not isinstance(x, BufferRegion) or x.buffer.scope not in ("shared", "shared.dyn"):
        name = getattr(getattr(x, "buffer", x), "name", type(x).__name__)
        raise TileLangError(f"T.copy_cluster: the {what} must be a shared buffer or a slice of one, got `{name}`",
                            hint="T.copy_cluster(s_src, s_dst, dst_block=1): both in T.alloc_shared")
    return x


def _contiguous_bytes(r):
    """Bytes of the region when it is one contiguous run of its (row-major) buffer."""
    shape = [const_int_value(d) for d in r.buffer.shape]
    starts = [const_int_value(s) for s, _ in r.ranges]
    exts = [const_int_value(e) for _, e in r.ranges]
    if None in shape or None in exts:
        return None
    inner = False   # a dimension before which the region must be one index wide
    for k in range(len(shape) - 1, -1, -1):
        if inner and exts[k] != 1:
            return None
        if exts[k] != shape[k]:
            inner = True
    if None in starts or None in shape:
        return None
    n = 1
    for e in exts:
        n *= e
    return n * r.buffer.dtype.itemsize


def copy_cluster(src, dst, *, dst_block=None, cluster_mask=None, remote_barrier=None, eviction_policy=None,
                 coalesced_width=None, loop_layout=None):
    """Copy this block's shared `src` into block `dst_block`'s shared `dst` (the same
    buffer in that block) through distributed shared memory. Every thread of the
    source block runs it.

    With `remote_barrier` (an element of T.alloc_cluster_barrier, arrive count 1),
    the copy completes on that barrier of the destination block, which waits on it;
    one thread of the source block arrives on it for the copy. Without it the source
    block's threads store into the destination directly and a `T.cluster_sync()`
    orders the stores before the destination reads them."""
    b = B.require("T.copy_cluster")
    if cluster_mask is not None:
        raise TileLangError("T.copy_cluster(..., cluster_mask=...) (TMA multicast from global memory) is not "
                            "supported yet", hint="copy into each block's shared memory with T.copy")
    if dst_block is None:
        raise TileLangError("T.copy_cluster needs dst_block=<rank of the destination block in the cluster>")
    s, d = _shared_region(src, "source"), _shared_region(dst, "destination")
    if s.buffer.dtype != d.buffer.dtype:
        raise TileLangError(f"T.copy_cluster copies {s.buffer.dtype} into {d.buffer.dtype}: the dtypes must match")
    se = [const_int_value(e) for e in s.extents if const_int_value(e) != 1]
    de = [const_int_value(e) for e in d.extents if const_int_value(e) != 1]
    if se != de or None in se:
        raise TileLangError(f"T.copy_cluster: source extents {list(s.shape)} and destination extents "
                            f"{list(d.shape)} must be equal constants")
    rank = _value(dst_block)
    bar = None if remote_barrier is None else _cluster_bar(remote_barrier, "copy_cluster")
    nbytes = _contiguous_bytes(s)
    if bar is not None and nbytes is not None and nbytes == _contiguous_bytes(d) and nbytes % 16 == 0 \
            and _start_bytes(s) % 16 == 0 and _start_bytes(d) % 16 == 0:
        # one bulk copy: every writer of the source fences its stores toward the async
        # proxy, a block barrier orders them, then one thread issues the copy
        b.emit(S.Evaluate(M.call(M.FENCE_PROXY_ASYNC)))
        b.emit(S.Barrier("block"))
        b.emit(S.Evaluate(M.call(M.BULK_COPY_CLUSTER, BufferLoad(d.buffer, d.starts),
                                 BufferLoad(s.buffer, s.starts), nbytes, rank, bar)))
        return None
    # element stores into the other block, spread over the threads
    exts = [e for e in s.extents]
    vars_ = [Var(f"i{k}") for k in range(len(exts))]
    dexts = [k for k, e in enumerate(d.extents) if const_int_value(e) != 1]
    sdims = [k for k, e in enumerate(s.extents) if const_int_value(e) != 1]
    sidx = [st + (vars_[k] if k in sdims else 0) for k, st in enumerate(s.starts)]
    didx = list(d.starts)
    for ks, kd in zip(sdims, dexts):
        didx[kd] = didx[kd] + vars_[ks]
    body = S.Evaluate(Call(ST_CLUSTER, [access_ptr(BufferLoad(d.buffer, [convert(i) for i in didx]), 2), rank,
                                        BufferLoad(s.buffer, [convert(i) for i in sidx])], "handle"))
    ann = {"coalesced_width": coalesced_width} if coalesced_width else {}
    for v, e in reversed(list(zip(vars_, exts))):
        body = S.For(v, IntImm(0), convert(e), S.PARALLEL, body, ann)
    b.emit(body)
    if bar is not None:
        # once every thread's stores are done (block barrier), one thread arrives for
        # them on the destination's barrier, releasing them at cluster scope
        b.emit(S.Barrier("block"))
        b.emit(S.Evaluate(M.call(M.ARRIVE_CLUSTER_ONE, bar, rank)))
    return None


def _start_bytes(r):
    """Byte offset of the region's first element in its (row-major) buffer."""
    off, stride = 0, 1
    for st, dim in reversed(list(zip(r.starts, r.buffer.shape))):
        off += const_int_value(st) * stride
        stride *= const_int_value(dim)
    return off * r.buffer.dtype.itemsize
