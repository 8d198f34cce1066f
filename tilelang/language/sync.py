"""Explicit synchronisation and warp-specialization scopes from the published API
(`T.ws`, `T.mbarrier_*`, `T.barrier_*`). Our compiler inserts every barrier a program
needs from its data flow, so these are accepted and have no effect of their own: a
`T.ws(...)` scope runs with all of the block's threads, in program order."""
from __future__ import annotations


class _WarpScope:
    def __init__(self, *ids):
        self.ids = ids

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def ws(*warp_group_ids):
    """`with T.ws(0): ...`: a producer/consumer warp-group scope (program order here)."""
    return _WarpScope(*warp_group_ids)


def _accepted(*args, **kwargs):
    return None


mbarrier_wait_parity = mbarrier_arrive = mbarrier_expect_tx = _accepted
barrier_arrive = barrier_wait = fence_proxy_async = cp_async_barrier_noinc = _accepted
