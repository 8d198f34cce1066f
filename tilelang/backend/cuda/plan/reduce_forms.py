"""Which form each block-level `T.reduce_*` runs in on CUDA, decided once, as an IR-to-IR
pass (`plan_reduce_forms`, right after plan_copy_forms): ops/reduce.py `reduce_form` reads
where the operands live (the kernel plan's placements) and the block's thread count, and
the pass records the choice on the op (annotation `reduce_form`, printed after the op in
the IR and the lower trace: `T.reduce_max(...)  # -> warp shuffles, a row a warp`). The code
generator (emit/kernel.py `s_Reduce`) prints the recorded form.

A reduction on a block that is not whole warps has become its loop already
(plan/copy_forms.py, by the same rule). The ops are annotated in place: plan/plan_kernels.py
made each of them a node of its own tree. The later passes keep the annotation where they
rebuild an op (ir/visitor.py Mutator)."""
from __future__ import annotations

from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk
from tilelang.transform.pass_manager import function_pass
from tilelang.backend.cuda.ops.reduce import REDUCE_FORM, reduce_form


class _Placements:
    """What ops/reduce.py `reduce_form` reads of a kernel: its plan's placements and threads."""

    def __init__(self, plan):
        self.plan = plan

    def placement(self, buf):
        return self.plan.placements.get(id(buf))


@function_pass("plan_reduce_forms")
def plan_reduce_forms(func, ctx=None):
    from tilelang.backend.cuda.plan.plan_kernels import map_planned_launches

    def rewrite(launch, plan, target, options):
        k = _Placements(plan)

        def record(n):
            if not isinstance(n, TO.Reduce):
                return
            form = reduce_form(k, n)
            if form.kind == "loop":   # (not at block level, or plan_copy_forms would have made it its loop:
                return                # the code generator's error for a reduction in a thread's own code)
            n.annotations = {**n.annotations, REDUCE_FORM: form}
        walk(launch.body, record)
        for info in plan.pipelines.values():   # a pipelined body is the plan's statements until its pass
            for s in info.rest:
                walk(s, record)
        return launch
    return map_planned_launches(func, ctx, rewrite)


__all__ = ["plan_reduce_forms"]
