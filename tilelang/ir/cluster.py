"""Names of the thread-block cluster calls that are not every-thread calls
(ir/mbarrier.py has those): plain device functions of the CUDA backend's
include/tl_cuda/cluster.h, kept as `Call`s named after them (language/cluster.py)."""
from __future__ import annotations

BLOCK_RANK_IN_CLUSTER = "tl::block_rank_in_cluster"   # () -> int32
ST_CLUSTER = "tl::st_cluster"                          # (dst ptr, rank, value): one element, per thread
CLUSTER_DEVICE_CALLS = frozenset({BLOCK_RANK_IN_CLUSTER, ST_CLUSTER})
