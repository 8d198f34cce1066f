"""Kernels that index threads explicitly, on the CPU. A block's threads run one after
another (a loop over the thread indices around the body) when that cannot be told
apart from running them together: no thread can see another's work, i.e. the kernel
has no block-shared storage (shared buffers, fragments), no barriers and no warp- or
block-collective operations. Each thread's `local` arrays are then private by
construction; what a thread writes to global memory is its own business, as on the GPU."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk

_COLLECTIVE_CALLS = ("shfl", "shuffle", "warp", "ballot", "activemask", "syncthreads", "allreduce", "barrier",
                     "mbarrier", "cp_async", "tma", "any_sync", "all_sync", "match_")


def thread_private_violation(kernel: S.KernelLaunch):
    """None when the kernel's threads may run one after another, else the reason
    (with the node that prevents it)."""
    found = []

    def f(n):
        if found:
            return
        if isinstance(n, S.DeclBuffer) and n.buffer.scope in ("shared", "local.fragment"):
            found.append((f"it allocates the block-shared buffer `{n.buffer.name}` ({n.buffer.scope})", n))
        elif isinstance(n, S.Barrier):
            found.append(("it synchronizes threads", n))
        elif isinstance(n, S.Stmt) and type(n).__name__ == "ThreadAllReduce":
            found.append(("it combines values across threads", n))
        elif isinstance(n, E.Call) and any(w in n.name.lower() for w in _COLLECTIVE_CALLS):
            found.append((f"it calls `{n.name}`, which involves other threads", n))
    walk(kernel.body, f)
    if not found:
        return None
    why, node = found[0]
    return why, getattr(node, "span", None)


def thread_loop_headers(kernel: S.KernelLaunch, name_of):
    """`for` headers (outermost first: z, y, x) binding the thread variables."""
    out = []
    for v, ext in reversed(list(zip(kernel.thread_vars, kernel.threads))):
        n = name_of(v)
        out.append(f"for (int32_t {n} = 0; {n} < {int(ext)}; ++{n}) {{")
    return out
