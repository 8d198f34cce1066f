"""CUDA for the calls every thread that reaches them runs (ir/mbarrier.py): mbarrier
arrivals and waits, cp.async completion, register reallocation, proxy fences."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import mbarrier as M


def sync_call(cg, v) -> str:
    """One line of C for the call `v` in the context of KernelCodegen `cg`."""
    a = v.args

    def bar():
        return f"&{cg.access(a[0])}"
    fence = cg.plan.uses_wgmma
    if v.name == M.ARRIVE:
        # this thread's shared writes may feed another range's wgmma (async proxy)
        return ("tl::fence_proxy_async(); " if fence else "") + f"tl::mbar_arrive({bar()});"
    if v.name == M.ARRIVE_EXPECT_TX:
        return f"tl::mbar_arrive_expect_tx({bar()}, {cg.expr(a[1])});"
    if v.name == M.EXPECT_TX:
        return f"tl::mbar_expect_tx({bar()}, {cg.expr(a[1])});"
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
        if r == cg.plan.regions.full or r.lo % 128 or r.size % 128:
            # every warpgroup asking for the same count changes nothing, and
            # setmaxnreg needs whole warpgroups
            return "// T.set_max_nreg: only whole warpgroups of a thread range reallocate registers"
        return f"tl::set_max_nreg<{E.const_int_value(a[0])}, {'true' if E.const_int_value(a[1]) else 'false'}>();"
    if v.name == M.FENCE_PROXY_ASYNC:
        return "tl::fence_proxy_async();"
    if v.name == M.NAMED_ARRIVE:
        return (f'asm volatile("bar.arrive %0, %1;" :: "r"((int)({cg.expr(a[0])})), '
                f'"r"((int)({cg.expr(a[1])})) : "memory");')
    if v.name == M.CP_ASYNC_COMMIT:
        return "tl::cp_async_commit();"
    if v.name == M.CP_ASYNC_WAIT:
        return f"tl::cp_async_wait<{E.const_int_value(a[0])}>();"
    raise NotImplementedError(v.name)
