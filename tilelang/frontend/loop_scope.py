"""A loop variable is only meaningful inside its loop. Python keeps the name bound after
`for i in T.Parallel(n):`, so a kernel can still write `A[i]` below the loop; that would
reach code generation as an undeclared variable. This check, run when a kernel is parsed,
points at the user's line instead."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.errors import OutOfScopeError
from tilelang.ir.visitor import Visitor


class _LoopScope(Visitor):
    def __init__(self, loop_vars):
        self.loop_vars = loop_vars   # id() of every For variable of the function
        self.in_scope = set()
        self.stmt = None             # the innermost statement, for the error's span

    def visit(self, node):
        if isinstance(node, S.Stmt):
            outer, self.stmt = self.stmt, node
            try:
                return super().visit(node)
            finally:
                self.stmt = outer
        return super().visit(node)

    def visit_For(self, s):
        self.visit(s.min)
        self.visit(s.extent)
        self.in_scope.add(id(s.var))
        self.visit(s.body)
        self.in_scope.discard(id(s.var))

    def visit_Var(self, v):
        if id(v) in self.loop_vars and id(v) not in self.in_scope:
            raise OutOfScopeError(f"loop variable `{v.name}` is used outside its loop",
                                   span=getattr(self.stmt, "span", None),
                                   hint="a T.Parallel/T.serial/T.Pipelined variable exists only inside the loop "
                                        "body; keep the value in a T.alloc_var or a fragment if it is needed later")


class _LoopVars(Visitor):
    def __init__(self):
        self.vars = set()

    def visit_For(self, s):
        if "structure" in s.annotations:   # T.Parallel(..., "SSR"): its variables are the block
            cur = s                         # index, used after the loop too (implicit_kernel.py)
            while isinstance(cur, S.For):
                cur = cur.body
            self.visit(cur)
            return
        self.vars.add(id(s.var))
        self.generic_visit(s)


def check_loop_var_scope(body):
    """Raise a located NameError where a loop variable is used outside its loop."""
    collect = _LoopVars()
    collect.visit(body)
    if collect.vars:
        _LoopScope(collect.vars).visit(body)
