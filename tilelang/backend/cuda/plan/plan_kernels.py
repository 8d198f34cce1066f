"""The kernel plan as an IR-to-IR pass (`plan_kernels`): for every `T.Kernel`, where each
buffer lives (shared-memory offsets, stages, swizzles, register layouts), how each gemm
runs, which loops are pipelined (plan/kernel.py `plan_kernel` -> `KernelPlan`).

The plan travels on the kernel's launch node (annotation `kernel_plan`) and prints with
it, as comments under `with T.Kernel(...)` (plan/report.py), so the lower trace shows it
after this pass. The passes after this one (plan/copy_forms.py) and the code generator
(emit/) read it from there instead of planning again.

The plan names the statements and buffers it is about by identity (`id(node)`), so it is
valid for the very tree it was made of: this pass gives the kernel a new node for every
statement that holds others, which the later CUDA passes (plan/sync.py inserting barriers,
plan/copy_forms.py annotating copy nests) change in place without touching the input of
the pipeline, and `kernel_plan` refuses a plan whose launch body was rebuilt since."""
from __future__ import annotations

import copy

from tilelang.ir import stmt as S
from tilelang.ir.visitor import Mutator
from tilelang.transform.pass_manager import function_pass
from tilelang.backend.cuda.plan.kernel import KernelPlan, plan_kernel

KERNEL_PLAN = "kernel_plan"   # launch annotation: the KernelPlan of its body


class PlannedKernel:
    """A KernelPlan with the body it was made of (the launch annotation); prints itself."""

    def __init__(self, plan: KernelPlan, body):
        self.plan, self.body = plan, body

    def describe(self, launch) -> str:
        """The plan as text (the IR printer puts it under `with T.Kernel(...)`)."""
        from tilelang.backend.cuda.plan.report import format_plan
        return format_plan(None, launch, self.plan)


def kernel_plan(launch) -> KernelPlan | None:
    """The plan plan_kernels attached to `launch`, or None when it has none."""
    kept = launch.annotations.get(KERNEL_PLAN)
    if kept is None:
        return None
    if kept.body is not launch.body:
        raise AssertionError("CUDA backend: the kernel plan was made for another tree (a pass after "
                             "plan_kernels rebuilt the kernel body instead of keeping its nodes)")
    return kept.plan


def with_plan(launch, plan):
    """A copy of `launch` (the same body: the plan's node identities hold) carrying `plan`."""
    launch = copy.copy(launch)
    launch.annotations = dict(launch.annotations)
    launch.annotations[KERNEL_PLAN] = PlannedKernel(plan, launch.body)
    return launch


def with_launches(func, launches):
    """func with its body's statements (its launches) replaced by `launches`."""
    return func.with_body(S.SeqStmt(launches) if isinstance(func.body, S.SeqStmt) else launches[0])


def cuda_context(func, ctx):
    """(target, CudaOptions, the statements of func's body: its launches) for a CUDA plan
    pass, or None where the pass context names no CUDA target (the pass leaves func alone).
    The options are the ones the backend read once (options.py), else read from the configs."""
    from tilelang.backend.cuda.options import OPTIONS, CudaOptions
    target = getattr(ctx, "target", None)
    if target is None or getattr(target, "arch", None) is None:
        return None
    options = ctx.config.get(OPTIONS) or CudaOptions.from_config(ctx.config, target.arch)
    return target, options, (func.body.stmts if isinstance(func.body, S.SeqStmt) else [func.body])


def map_planned_launches(func, ctx, rewrite):
    """The opening every CUDA plan pass after plan_kernels shares: `func` with each launch
    that carries a kernel plan replaced by `rewrite(launch, plan, target, options)` (the
    launch itself where nothing changes); `func` itself where the pass context names no CUDA
    target (cuda_context) or no launch changed."""
    found = cuda_context(func, ctx)
    if found is None:
        return func
    target, options, stmts = found
    out = []
    for launch in stmts:
        plan = kernel_plan(launch) if isinstance(launch, S.KernelLaunch) else None
        out.append(launch if plan is None else rewrite(launch, plan, target, options))
    return with_launches(func, out) if any(a is not b for a, b in zip(out, stmts)) else func


class _Fresh(Mutator):
    """A new node for every statement that holds others (sequences, loops, branches,
    lets) and for every reduction: the CUDA passes after this one annotate loops and
    reductions (plan/reduce_forms.py) and insert statements into these in place, on nodes
    of this pass's own tree."""

    def _own(self, n):
        out = self.generic_visit(n)
        if out is n:
            out = copy.copy(n)   # every attribute kept
        if isinstance(out, S.SeqStmt):
            out.stmts = list(out.stmts)
        if isinstance(getattr(out, "annotations", None), dict):
            out.annotations = dict(out.annotations)
        return out

    visit_SeqStmt = visit_For = visit_IfThenElse = visit_While = visit_LetStmt = visit_Reduce = _own


@function_pass("plan_kernels")
def plan_kernels(func, ctx=None):
    found = cuda_context(func, ctx)
    if found is None:
        return func
    target, options, _ = found
    body = _Fresh().visit(func.body)
    stmts = body.stmts if isinstance(body, S.SeqStmt) else [body]
    out = []
    for st in stmts:
        if isinstance(st, S.KernelLaunch) and "cuda_source" not in st.annotations:
            st = with_plan(st, plan_kernel(st, target.arch, options))
        out.append(st)
    return func.with_body(S.SeqStmt(out) if isinstance(body, S.SeqStmt) else out[0])


__all__ = ["KERNEL_PLAN", "PlannedKernel", "kernel_plan", "plan_kernels", "cuda_context", "with_plan", "with_launches",
           "map_planned_launches"]
