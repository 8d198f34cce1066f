"""Integer expressions of the kernel's dynamic dimensions as Python source: what the
launcher evaluates on the host per call (grid sizes, workspace shapes, tensor-map extents)."""
from __future__ import annotations

from tilelang.ir import expr as E


def py_expr(e, env):
    """An int expression as Python source over `ints` (for grid sizes and workspace
    shapes that depend on dynamic dimensions). `env`: id(Var) -> Python name."""
    if isinstance(e, int):
        return str(e)
    if isinstance(e, E.IntImm):
        return str(int(e.value))
    if isinstance(e, E.Var):
        if id(e) not in env:
            raise NotImplementedError(f"launch size depends on `{e.name}`, which is not a parameter")
        return env[id(e)]
    if isinstance(e, E.Cast):
        return py_expr(e.value, env)
    if isinstance(e, E.BinOp):
        a, b = py_expr(e.a, env), py_expr(e.b, env)
        if e.op in ("min", "max"):
            return f"{e.op}({a}, {b})"
        if e.op == "/":
            return f"int(({a}) / ({b}))"
        op = {"&&": "and", "||": "or"}.get(e.op, e.op)
        return f"(({a}) {op} ({b}))"
    if isinstance(e, E.Select):
        return f"(({py_expr(e.t, env)}) if ({py_expr(e.cond, env)}) else ({py_expr(e.f, env)}))"
    raise NotImplementedError(f"cannot evaluate `{e}` on the host")
