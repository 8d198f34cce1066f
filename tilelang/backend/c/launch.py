"""The launch ABI of the C-printing backends and the host glue both generate from it.

Every backend's launcher is called as `launcher(buffers, ints, floats)` (backend/base.py):
the function's tensor parameters in order; its integer scalar parameters in order,
then the dynamic shape variables the caller solved; its float scalar parameters.
`LaunchABI` is that split, computed once from a PrimFunc; each backend turns it into
its glue:

- the CPU backend's C entry point unpacks the three arrays into typed locals
  (`c_entry_unpack`);
- the CUDA backend's kernel parameters are the same list (plus workspaces, which the
  launcher allocates), and its host code evaluates grid sizes as Python over `ints`
  (`py_expr`)."""
from __future__ import annotations

from dataclasses import dataclass, field

from tilelang.ir import expr as E
from tilelang.ir.buffer import Buffer


@dataclass
class LaunchABI:
    buffers: list = field(default_factory=list)   # tensor parameters (then extra buffers, e.g. workspaces)
    ints: list = field(default_factory=list)      # integer scalar parameters, then dynamic shape variables
    floats: list = field(default_factory=list)    # float scalar parameters
    n_dynamic: int = 0                            # how many of `ints` are dynamic shape variables

    @classmethod
    def of(cls, func, extra_buffers=()) -> "LaunchABI":
        bufs = [p for p in func.params if isinstance(p, Buffer)] + list(extra_buffers)
        ints = [p for p in func.params if isinstance(p, E.Var) and not p.dtype.is_float]
        floats = [p for p in func.params if isinstance(p, E.Var) and p.dtype.is_float]
        dyn = list(func.dynamic_vars())
        return cls(bufs, ints + dyn, floats, len(dyn))

    def slots(self):
        """[(class, object)] in kernel-parameter order: 'buffer', 'int', 'float'."""
        return ([("buffer", b) for b in self.buffers] + [("int", v) for v in self.ints] +
                [("float", v) for v in self.floats])

    def index(self, obj) -> int:
        """`obj`'s position in its own array (buffers, ints or floats)."""
        for lst in (self.buffers, self.ints, self.floats):
            for k, x in enumerate(lst):
                if x is obj:
                    return k
        raise KeyError(f"`{getattr(obj, 'name', obj)}` is not a parameter of this launch")

    def int_env(self) -> dict:
        """id(Var) -> its Python spelling `ints[k]` in host code."""
        return {id(v): f"ints[{k}]" for k, v in enumerate(self.ints)}

    def counts(self) -> dict:
        return {"n_buffers": len(self.buffers), "n_ints": len(self.ints), "n_floats": len(self.floats)}


def top_level(body):
    """(workspaces, launches, rest) of a function body, for the GPU backends whose code
    runs only inside kernels: its function-level global buffers (T.alloc_global: the
    launcher allocates them and passes them after the tensors), its T.Kernel launches,
    and its other statements, in order (each backend says which it allows)."""
    from tilelang.ir import stmt as S
    stmts = body.stmts if isinstance(body, S.SeqStmt) else [body]
    workspaces, launches, rest = [], [], []
    for s in stmts:
        if isinstance(s, S.DeclBuffer) and s.buffer.scope == "global":
            workspaces.append(s.buffer)
        elif isinstance(s, S.KernelLaunch):
            launches.append(s)
        else:
            rest.append(s)
    return workspaces, launches, rest


def c_entry_unpack(abi, params, ctype, name, restrict, buffer_ctype=None):
    """The C statements that bind the entry point's arrays (`void** tl_bufs`, `const
    int64_t* tl_ints`, `const double* tl_floats`) to typed locals: the tensors in ABI
    order, then the scalar parameters in `params` order, then the dynamic shape
    variables. `name(obj)`: an object's C name; `restrict(buffer)`: its pointer's
    qualifier; `buffer_ctype(buffer)`: its element type (default `ctype(dtype)`)."""
    lines = []
    for k, b in enumerate(abi.buffers):
        t = buffer_ctype(b) if buffer_ctype else ctype(b.dtype)
        lines.append(f"{t}*{restrict(b)} {name(b)} = ({t}*)tl_bufs[{k}];")
    scalars = [p for p in params if isinstance(p, E.Var)]
    for v in scalars + abi.ints[len(abi.ints) - abi.n_dynamic:]:
        t = ctype(v.dtype)
        if v.dtype.is_float:
            lines.append(f"const {t} {name(v)} = ({t})tl_floats[{abi.index(v)}];")
        else:
            via = "(intptr_t)" if v.dtype.name == "handle" else ""
            lines.append(f"const {t} {name(v)} = ({t}){via}tl_ints[{abi.index(v)}];")
    return lines


def py_expr(e, env):
    """An int expression as Python source over `ints` (for grid sizes and workspace
    shapes that depend on dynamic dimensions). `env`: id(Var) -> Python name
    (`LaunchABI.int_env()`)."""
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
