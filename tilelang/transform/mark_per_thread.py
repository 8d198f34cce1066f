"""Which block-level statements every thread runs, decided on the kernel as written (a pass,
`mark_per_thread`, the first of both backends' pipelines after implicit_kernel, before any
pass simplifies an index).

A block-level statement (outside T.Parallel) that names no thread index runs once per block
(on the GPU on thread 0: README, "Block-level statements ... run once per block"); one that
names the thread index, directly or through values computed from it, is per-thread code and
every thread runs it. Simplifying an index can take the thread index out of a statement the
user wrote per thread (`T.atomic_add(H[(f(tx) * 0 + 3) % 64], 1)` becomes `H[3]`: the fuzzer's
Staging family caught CUDA counting once a block where the CPU backend counts every thread).
So the decision is recorded here on the statement (annotation PER_THREAD, which rebuilt nodes
keep: ir/visitor.py `_keep`) and read where a backend decides who runs a statement (the CUDA
barrier planner's `thread_dependent`, backend/cuda/plan/sync.py; the CPU backend's choice to
run a block's threads one after another, backend/cpu/codegen.py); lower_tile_ops carries it
from a tile-level atomic to the statement it becomes."""
from __future__ import annotations

from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir import expr as E
from tilelang.ir.visitor import walk
from tilelang.ir.thread_dependence import thread_dependent_vars
from tilelang.ir.tile_ops import PER_THREAD
from tilelang.transform.pass_manager import function_pass


def is_per_thread(node) -> bool:
    """Whether `node` is a statement this pass marked as per-thread code."""
    ann = getattr(node, "annotations", None)
    return bool(ann) and bool(ann.get(PER_THREAD))


def mark(node):
    ann = dict(getattr(node, "annotations", None) or {})
    ann[PER_THREAD] = True
    node.annotations = ann


def _names_thread(node, td):
    # names, not register contents: a block-level atomic's result or a wgmma accumulator
    # differs between threads here but is shared out (broadcast_block_effects) or read by
    # the backend's own rules later, so only the index variables decide
    found = []
    walk(node, lambda n: found.append(n) if isinstance(n, E.Var) and id(n) in td else None)
    return bool(found)


def _mark_launch(launch):
    if not launch.thread_vars:
        return
    td, _, _ = thread_dependent_vars(launch.body, launch.thread_vars)

    def visit(st):
        if st is None or isinstance(st, S.For) and st.kind == S.PARALLEL:
            return   # a T.Parallel nest hands its elements to threads itself
        if isinstance(st, (S.BufferStore, S.Evaluate, TO.Atomic)):
            if _names_thread(st, td):
                mark(st)
            return
        for name in ("stmts", "body", "then_body", "else_body"):
            child = getattr(st, name, None)
            for c in (child if isinstance(child, list) else [child]):
                if isinstance(c, S.Stmt):
                    visit(c)
    visit(launch.body)


@function_pass("mark_per_thread")
def mark_per_thread(func, ctx=None):
    """Marks (in place) the block-level statements of each kernel that name a thread index."""
    walk(func.body, lambda n: _mark_launch(n) if isinstance(n, S.KernelLaunch) else None)
    return func


__all__ = ["PER_THREAD", "is_per_thread", "mark", "mark_per_thread"]
