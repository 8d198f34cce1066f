"""Which values differ between the threads of a block: the thread indices and, transitively,
what is computed from them (let-bound names, per-thread variables and arrays, loop variables
whose bounds depend on them). The backends' decisions of who runs a statement read it
(transform/mark_per_thread.py, backend/cuda/plan/kernel.py)."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk


# warp/block collective intrinsics (language/warp.py): all threads must execute them
WARP_COLLECTIVES = frozenset({
    "tl.shfl_xor_sync", "tl.shfl_down_sync", "tl.shfl_up_sync", "tl.shfl_sync",
    "tl.warp_reduce_sum", "tl.warp_reduce_max", "tl.warp_reduce_min", "tl.warp_reduce_bitand",
    "tl.warp_reduce_bitor", "tl.any_sync", "tl.all_sync", "tl.ballot_sync", "tl.activemask",
    "tl.syncthreads_count", "tl.syncthreads_and", "tl.syncthreads_or", "tl.match_any_sync", "tl.match_all_sync"})


def thread_dependent_vars(body, thread_vars):
    """ids of Vars and local buffers whose values differ between threads: the thread
    indices, and (transitively) what is computed from them."""
    td = {id(v) for v in thread_vars}
    tdbuf = set()

    def depends(node):
        found = []

        def f(n):
            if isinstance(n, E.Var) and id(n) in td:
                found.append(n)
            elif isinstance(n, E.BufferLoad) and id(n.buffer) in tdbuf:
                found.append(n)
            elif isinstance(n, E.Call) and n.name in WARP_COLLECTIVES:
                found.append(n)   # every thread must take part: never one thread's job
        walk(node, f)
        return bool(found)

    changed = True
    while changed:  # small fixpoint: lets and local stores chain dependence
        changed = False

        def g(n):
            nonlocal changed
            if isinstance(n, S.LetStmt) and id(n.var) not in td and depends(n.value):
                td.add(id(n.var))
                changed = True
            elif isinstance(n, S.BufferStore) and n.buffer.scope in ("local", "local.var") \
                    and id(n.buffer) not in tdbuf and (depends(n.value) or any(depends(i) for i in n.indices)
                                                       or _atomic_result(n.value)):
                tdbuf.add(id(n.buffer))
                changed = True
            elif isinstance(n, S.ThreadAllReduce) and id(n.dst.buffer) not in tdbuf:
                tdbuf.add(id(n.dst.buffer))   # one result per group of threads
                changed = True
            elif isinstance(n, S.Evaluate) and _written_registers(n, tdbuf, depends):
                changed = True
            elif isinstance(n, S.For) and n.kind != S.PARALLEL and id(n.var) not in td and \
                    (depends(n.min) or depends(n.extent)):
                td.add(id(n.var))
                changed = True
        walk(body, g)
    return td, tdbuf, depends


def _atomic_result(e) -> bool:
    """Whether `e` holds an atomic's previous value: each thread that runs the atomic gets
    its own (a block-level one reaches registers through shared memory instead,
    transform/broadcast_block_effects.py), so the register it lands in is per thread."""
    found = []
    walk(e, lambda n: found.append(n) if isinstance(n, E.Call) and n.name.startswith("atomic_") else None)
    return bool(found)


# intrinsics whose register results are known: an explicit load's words are the same
# in every thread when its address is; a random generator's state is private to each
# thread by design, and the T.Parallel loops drawing from it are shared out as usual
LOADS_INTO_REGISTERS = frozenset({"tl.ldg", "tl.lds"})
RANDOM_STATE = frozenset({"tl.rng_init"})


def _written_registers(st, tdbuf, depends):
    """Mark the local buffers that extern code writes through T.access_ptr in `st` as
    thread-dependent (the callee's results are opaque); whether any was new."""
    new = []
    v = st.value
    if isinstance(v, E.Call) and (v.name in RANDOM_STATE or
                                  (v.name in LOADS_INTO_REGISTERS and not any(depends(a) for a in v.args[1:]))):
        return False

    def f(n):
        ld = E.addressed_load(n)
        if ld is not None and E.access_mask(n) & 2 and ld.buffer.scope in ("local", "local.var") \
                and id(ld.buffer) not in tdbuf:
            tdbuf.add(id(ld.buffer))
            new.append(ld.buffer)
    walk(st, f)
    return bool(new)
