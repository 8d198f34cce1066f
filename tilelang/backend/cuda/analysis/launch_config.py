"""What a kernel needs from its launch beyond grid, block and shared memory, found
in its body and annotations, checked at compile time and recorded in the launch
metadata for runtime.py:

- `cluster`: [x, y, z] blocks per thread-block cluster (T.Kernel(cluster_dims=...),
  T.ClusterKernel). The shape is compiled into the kernel (`__cluster_dims__`), so
  an ordinary launch runs it in clusters; the grid must be a whole number of them.
- `cooperative`: the kernel calls T.sync_grid(): launched cooperatively (every block
  resident at once, which the runtime checks against the occupancy).
- `pdl`: the kernel calls T.pdl_sync(): launched with programmatic stream
  serialization, so it may start while the previous kernel of the stream finishes
  (T.pdl_sync waits for that kernel's results)."""
from __future__ import annotations

import re

from tilelang.ir import expr as E
from tilelang.ir import mbarrier as M
from tilelang.ir.cluster import BLOCK_RANK_IN_CLUSTER, CLUSTER_DEVICE_CALLS
from tilelang.ir.errors import LoweringError

PORTABLE_CLUSTER = 8     # blocks per cluster any sm_90 GPU runs
MAX_CLUSTER = 16         # with the non-portable opt-in (H100/H200)
COOPERATIVE_INCLUDE = "#include <cooperative_groups.h>\n"


def called(body) -> set:
    """Names of the calls anywhere in `body`."""
    from tilelang.ir.visitor import walk
    names = set()
    walk(body, lambda n: names.add(n.name) if isinstance(n, E.Call) else None)
    return names


def launch_needs(launch, target, entry) -> dict:
    """{"cluster": [x, y, z] | None, "cooperative": bool, "pdl": bool} for one
    T.Kernel, after checking that the target and the grid allow it."""
    from tilelang.backend.cuda.target import arch_number
    span = getattr(launch, "span", None)
    cluster = launch.annotations.get("cluster_dims")
    names = called(launch.body)
    uses_cluster_calls = bool(names & (M.CLUSTER_CALLS | (CLUSTER_DEVICE_CALLS - {BLOCK_RANK_IN_CLUSTER})))
    if cluster is not None:
        cluster = [int(c) for c in cluster]
        if arch_number(target.arch) < 90:
            raise LoweringError(f"kernel `{entry}` asks for thread-block clusters of {tuple(cluster)}, which need "
                                f"sm_90 or newer; the target is {target.arch}", span,
                                hint="compile for sm_90a, or drop cluster_dims")
        n = cluster[0] * cluster[1] * cluster[2]
        if n > MAX_CLUSTER:
            raise LoweringError(f"kernel `{entry}`: a cluster of {tuple(cluster)} has {n} blocks; at most "
                                f"{PORTABLE_CLUSTER} ({MAX_CLUSTER} on H100/H200) run as one cluster", span)
        for ax, (g, c) in enumerate(zip(list(launch.grid) + [1] * (3 - len(launch.grid)), cluster)):
            gv = E.const_int_value(g) if not isinstance(g, int) else g
            if gv is not None and gv % c:
                raise LoweringError(
                    f"kernel `{entry}`: the grid {_grid_str(launch.grid)} is not a whole number of clusters "
                    f"{tuple(cluster)}: {gv} blocks along {'xyz'[ax]} is not a multiple of {c}", span,
                    hint=f"make the grid's {'xyz'[ax]} extent a multiple of {c} (round it up and skip the extra "
                         f"blocks' work), or change cluster_dims")
    elif uses_cluster_calls and arch_number(target.arch) < 90:
        raise LoweringError(f"kernel `{entry}` uses thread-block cluster operations, which need sm_90 or newer; "
                            f"the target is {target.arch}", span)
    # before sm_90 T.pdl_sync compiles to nothing: such a kernel must not start early
    pdl = M.PDL_SYNC in names and arch_number(target.arch) >= 90
    return {"cluster": cluster, "cooperative": M.SYNC_GRID in names, "pdl": pdl}


def _grid_str(grid):
    return "(" + ", ".join(str(E.const_int_value(g)) if E.const_int_value(g) is not None else str(g)
                           for g in grid) + ")"


def with_cluster_dims(src: str, entry: str, cluster) -> str:
    """The kernel's source with `__cluster_dims__(x, y, z)` on its definition."""
    if not cluster:
        return src
    pat = re.compile(r'extern "C" __global__ void (__launch_bounds__\([^)]*\) )?' + re.escape(entry) + r"\(")
    m = pat.search(src)
    if m is None:   # the definition's form changed: keep compiling, the runtime still checks
        raise LoweringError(f"kernel `{entry}`: could not find its definition to add __cluster_dims__")
    x, y, z = cluster
    head = m.group(0)
    new = head.replace("__global__ void ", f"__global__ void __cluster_dims__({x}, {y}, {z}) ", 1)
    return src[:m.start()] + new + src[m.end():]
