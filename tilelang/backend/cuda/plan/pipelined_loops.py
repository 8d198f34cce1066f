"""The driver the pipelining passes share (`pipeline_cp_async`, `pipeline_tma_ring`): each
replaces the `T.Pipelined` loops it takes by their schedule, in place in a copy of the
kernel launch, one loop at a time (a schedule holds the statements, and loops, of its body),
and keeps the kernel plan on the launch."""
from __future__ import annotations

import copy

from tilelang.ir import stmt as S


def replace_stmt(parent, old, new_stmts) -> bool:
    """Put `new_stmts` where `old` is among `parent`'s children, in place."""
    if isinstance(parent, S.SeqStmt):
        for i, s in enumerate(parent.stmts):
            if s is old:
                parent.stmts[i:i + 1] = new_stmts
                return True
        return False
    for attr in ("body", "then_body", "else_body"):   # (a KernelLaunch's body too)
        if getattr(parent, attr, None) is old:
            setattr(parent, attr, S.seq(new_stmts))
            return True
    return False


def parents(root):
    """(parent, child) for every statement under `root` that holds statements."""
    out, todo = [], [root]
    while todo:
        n = todo.pop()
        kids = list(n.stmts) if isinstance(n, S.SeqStmt) else \
            [getattr(n, a, None) for a in ("body", "then_body", "else_body")]
        for c in kids:
            if isinstance(c, S.Stmt):
                out.append((n, c))
                todo.append(c)
    return out


def at_kernel_start(body, head):
    """`body` (a kernel's) with `head` before its first statement that is not the declaration
    of a shared buffer (those print nothing there: the kernel declares them first)."""
    stmts = list(body.stmts) if isinstance(body, S.SeqStmt) else [body]
    at = 0
    while at < len(stmts) and isinstance(stmts[at], S.DeclBuffer) and stmts[at].buffer.scope.startswith("shared"):
        at += 1
    return S.seq(stmts[:at] + list(head) + stmts[at:])


def schedule_pipelined_loops(func, ctx, takes, make):
    """`func` with every pipelined loop of a planned kernel that `takes(k, loop, info)`
    replaced by the statements `make(k, loop, info)` returns (`k`: plan/copy_forms.py's
    view of the kernel, with its target and options; `info`: the loop's PipelineInfo). A
    schedule that pairs the blocks sets `k.cluster_dims`, the launch's clusters; one whose
    statements start the kernel (a producer warpgroup) sets `k.kernel_head`."""
    from tilelang.backend.cuda.plan.copy_forms import _Kernel
    from tilelang.backend.cuda.plan.plan_kernels import KERNEL_PLAN, map_planned_launches, with_plan

    def rewrite(launch, plan, target, options):
        if not plan.pipelines:
            return launch
        k = _Kernel(launch, plan, func, target, options)
        original, launch = launch, copy.copy(launch)   # the same body, changed in place below
        done = set()
        while True:
            found = next(((parent, loop) for parent, loop in parents(launch)
                          if isinstance(loop, S.For) and loop.kind == S.PIPELINED and id(loop) in plan.pipelines
                          and id(loop) not in done and takes(k, loop, plan.pipelines[id(loop)])), None)
            if found is None:
                break
            parent, loop = found
            done.add(id(loop))
            replace_stmt(parent, loop, make(k, loop, plan.pipelines[id(loop)]))
        if not done:
            return original
        if getattr(k, "kernel_head", None):   # a schedule's statements at the kernel's start
            launch.body = at_kernel_start(launch.body, k.kernel_head)
        if launch.body is not launch.annotations[KERNEL_PLAN].body:
            launch = with_plan(launch, plan)   # the loop was the whole kernel body: the plan follows
        if getattr(k, "cluster_dims", None):   # a schedule runs the blocks in clusters (TMA multicast)
            launch.annotations = {**launch.annotations, "cluster_dims": k.cluster_dims}
        return launch
    return map_planned_launches(func, ctx, rewrite)


__all__ = ["schedule_pipelined_loops", "replace_stmt", "parents", "at_kernel_start"]
