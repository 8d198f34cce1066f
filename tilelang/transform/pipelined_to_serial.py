"""`T.Pipelined` loops as plain serial loops: the reference semantics (results of a
pipelined loop equal the plain loop). Backends without async copies use this."""
from tilelang.ir import stmt as S
from tilelang.ir.visitor import Mutator
from tilelang.transform.pass_manager import function_pass


class _M(Mutator):
    def visit_For(self, n):
        body = self.visit(n.body)
        if n.kind == S.PIPELINED:
            out = S.For(n.var, n.min, n.extent, S.SERIAL, body, {}, n.step)
            out.span = n.span
            return out
        if body is n.body:
            return n
        out = S.For(n.var, n.min, n.extent, n.kind, body, n.annotations, n.step)
        out.span = n.span
        return out


@function_pass("pipelined_to_serial")
def pipelined_to_serial(func):
    return func.with_body(_M().visit(func.body))
