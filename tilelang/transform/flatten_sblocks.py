"""`T.sblock` scopes spliced into their parents, and the block-scope annotations that
legalize_safe_memory_access consumed (T.annotate_safe_value, ir/safe_values.py) dropped:
after this pass no SBlock is left, so a backend's own passes never meet one. The
statements of a block keep their order; its allocations stay visible to the statements
after them, as everywhere else."""
from __future__ import annotations

from tilelang.ir import stmt as S
from tilelang.ir.safe_values import SAFE_VALUE_MAP
from tilelang.ir.visitor import Mutator, _keep
from tilelang.transform.pass_manager import function_pass


class _Flatten(Mutator):
    def visit_SBlock(self, n):
        return self.visit(n.body)

    def visit_KernelLaunch(self, n):
        out = self.generic_visit(n)
        if SAFE_VALUE_MAP not in out.annotations:
            return out
        ann = {k: v for k, v in out.annotations.items() if k != SAFE_VALUE_MAP}
        return _keep(S.KernelLaunch(out.grid, out.threads, out.block_vars, out.thread_vars, out.body, ann), n)


@function_pass("flatten_sblocks")
def flatten_sblocks(func):
    return func.with_body(_Flatten().visit(func.body))
