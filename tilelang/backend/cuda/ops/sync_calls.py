"""CUDA for the calls every thread that reaches them runs (ir/mbarrier.py): mbarrier
arrivals and waits, cp.async completion, register reallocation, proxy fences, the
cluster barrier and arrivals on other blocks' mbarriers (include/tl_cuda/cluster.h),
the grid barrier, programmatic dependent launch."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import mbarrier as M
from tilelang.ir.tensor_core_calls import TENSOR_CORE_CALLS
from tilelang.backend.cuda.ops.tensor_core_ptx import tensor_core_call


def sync_call(cg, v) -> str:
    """One line of C for the call `v` in the context of KernelCodegen `cg`."""
    if v.name in TENSOR_CORE_CALLS:   # hand-written wgmma / ldmatrix / mma.sync
        return tensor_core_call(cg, v)
    a = v.args

    def bar():
        return f"&{cg.access(a[0])}"
    # (a TMA ring's barriers, ir/tma_ring.py: their bytes come through the async proxy, and
    # the thread arriving without bytes wrote nothing)
    fence = cg.plan.uses_wgmma and not (a and getattr(getattr(a[0], "buffer", None), "tma_ring", False))
    if v.name == M.ARRIVE:
        # this thread's shared writes may feed another range's wgmma (async proxy)
        return ("tl::fence_proxy_async(); " if fence else "") + f"tl::mbar_arrive({bar()});"
    if v.name == M.ARRIVE_EXPECT_TX:
        return f"tl::mbar_arrive_expect_tx({bar()}, {cg.expr(a[1])});"
    if v.name == M.EXPECT_TX:
        return f"tl::mbar_expect_tx({bar()}, {cg.expr(a[1])});"
    if v.name == M.WAIT_PARITY and getattr(a[0].buffer, "cluster_barrier", False):
        # other blocks of the cluster arrive on it: acquire what they released
        return f"tl::mbar_wait_cluster({bar()}, {cg.expr(a[1])});" + (" tl::fence_proxy_async();" if fence else "")
    if v.name == M.WAIT_PARITY:
        return f"tl::mbar_wait({bar()}, {cg.expr(a[1])});" + (" tl::fence_proxy_async();" if fence else "")
    if v.name == M.CP_ASYNC_ARRIVE:
        return f"tl::cp_async_mbar_arrive<{'true' if E.const_int_value(a[1]) else 'false'}>({bar()});"
    if v.name == M.INIT:
        return f"tl::mbar_init({bar()}, {cg.expr(a[1])});"
    if v.name == M.FENCE_INIT:
        return "tl::mbar_init_fence();"
    if v.name == M.SET_MAX_NREG:
        r = cg.range
        # (the consumers of a warp-specialized loop: the producer warpgroup runs beside them)
        if (r == cg.plan.regions.full and not getattr(cg, "ws_consumer", False)) or r.lo % 128 or r.size % 128:
            # every warpgroup asking for the same count changes nothing, and
            # setmaxnreg needs whole warpgroups
            return "// T.set_max_nreg: only whole warpgroups of a thread range reallocate registers"
        return f"tl::set_max_nreg<{E.const_int_value(a[0])}, {'true' if E.const_int_value(a[1]) else 'false'}>();"
    if v.name == M.FENCE_PROXY_ASYNC:
        return "tl::fence_proxy_async();"
    if v.name == M.NAMED_ARRIVE:
        return (f'asm volatile("bar.arrive %0, %1;" :: "r"((int)({cg.expr(a[0])})), '
                f'"r"((int)({cg.expr(a[1])})) : "memory");')
    if v.name == M.NAMED_SYNC:   # (a turn of the TMA ring's ping-pong: registers only, no proxy fence)
        return f"tl::named_barrier_sync({cg.expr(a[0])}, {cg.expr(a[1])});"
    if v.name == M.CP_ASYNC_COMMIT:
        return "tl::cp_async_commit();"
    if v.name == M.CP_ASYNC_WAIT:
        return f"tl::cp_async_wait<{E.const_int_value(a[0])}>();"
    if v.name == M.BULK_COMMIT:
        return "tl::tma_store_arrive();"
    if v.name == M.BULK_WAIT:
        return f"tl::tma_store_wait<{E.const_int_value(a[0])}, {'true' if E.const_int_value(a[1]) else 'false'}>();"
    if v.name == M.ARRIVE_CLUSTER:
        return ("tl::fence_proxy_async(); " if fence else "") + f"tl::mbar_arrive_cluster({bar()}, {cg.expr(a[1])});"
    if v.name == M.RELEASE_SLOT_CLUSTER:   # the slot's wgmma readers were waited for: nothing to publish
        return f"tl::mbar_arrive_cluster_slot({bar()}, {cg.expr(a[1])});"
    if v.name == M.ARRIVE_CLUSTER_ONE:   # after a block barrier: one arrival for the block
        return f"if (tl_tid == 0) {{ tl::mbar_arrive_cluster({bar()}, {cg.expr(a[1])}); }}"
    if v.name == M.BULK_COPY_CLUSTER:   # after the writers' proxy fences and a block barrier
        _check_linear(cg, v, a[0].buffer, a[1].buffer)
        return (f"if (tl_tid == 0) {{ tl::bulk_copy_cluster("
                f"&{cg.access(a[0])}, &{cg.access(a[1])}, {cg.expr(a[2])}, {cg.expr(a[3])}, &{cg.access(a[4])}); }}")
    if v.name in M.CLUSTER_BARRIER_CALLS:   # cluster.h: barrier.cluster arrive / wait
        return f"tl::{v.name[3:]}();"
    if v.name == M.SYNC_GRID:       # codegen.py includes <cooperative_groups.h> for it
        return "cooperative_groups::this_grid().sync();"
    if v.name == M.PDL_TRIGGER:     # include/tl_cuda/pdl.h: griddepcontrol, sm_90+
        return "cudaTriggerProgrammaticLaunchCompletion();"
    if v.name == M.PDL_SYNC:
        return "cudaGridDependencySynchronize();"
    raise NotImplementedError(v.name)


def _check_linear(cg, v, *bufs):
    """T.copy_cluster's bulk copy moves bytes: both shared buffers must be laid out
    row-major, without the swizzle or padding the planner gives some tiles."""
    for b in bufs:
        p = cg.placement(b)
        natural = [E.const_int_value(x) for x in b.get_strides()]
        if p is not None and (p.swizzle or p.layout is not None or (p.strides is not None and
                                            [E.const_int_value(x) for x in p.strides] != natural)):
            from tilelang.ir.errors import LoweringError
            raise LoweringError(f"T.copy_cluster(..., remote_barrier=...) copies `{b.name}` as bytes, but the "
                                f"compiler gave it a swizzled or padded shared layout (for its other uses)",
                                getattr(v, "span", None),
                                hint="copy through a separate row-major shared buffer, or omit remote_barrier "
                                     "(element stores, then T.cluster_sync())")
