"""Binding a call's tensors to a kernel's declared shapes and strides.

Every dimension and stride of an input tensor parameter is a constraint `expr == runtime
value`. A dimension that is a variable binds it; one that is an affine expression of a
single unbound variable (`n * 3 + 1`) is solved for it; every other constraint is
checked once its variables are known. Sub-byte element types (int4, uint4,
float4_e2m1fn) travel packed two per byte, as the published package passes them:
an int8/uint8 (or torch float4_e2m1fn_x2) tensor whose last dimension holds half the
elements, and whose other strides count bytes."""
from __future__ import annotations

from tilelang.arith.simplify import simplify, linear_form
from tilelang.ir.buffer import Buffer
from tilelang.ir.expr import Var, IntImm, PrimExpr, const_int_value
from tilelang.ir.errors import ArgumentError
from tilelang.ir.visitor import substitute, collect_vars

from tilelang.ir.dtypes import STORAGE_DTYPES, pack_factor, logical_shape  # noqa: F401 (re-exported)


class Binder:
    """The shape/stride constraints of a kernel's inputs, solved per call."""

    def __init__(self, func, in_idx):
        self.constraints = []      # (param index, "shape"|"stride", axis, expr)
        for i in in_idx:
            p = func.params[i]
            if not isinstance(p, Buffer):
                continue
            for d, e in enumerate(p.shape):
                self.constraints.append((i, "shape", d, e))
            for d, e in enumerate(p.strides or ()):
                self.constraints.append((i, "stride", d, e))
        scalars = {id(v) for v in func.params if isinstance(v, Var)}
        self.unknown = [v for v in func.dynamic_vars() if id(v) not in scalars]
        # does a call need more than the direct binding of plain variable dimensions?
        self.simple = all(c[1] == "shape" and (isinstance(c[3], Var) or const_int_value(c[3]) is not None)
                          for c in self.constraints)

    def solvable(self):
        """The dynamic variables no input constraint mentions (they cannot be bound)."""
        seen = set()
        for *_, e in self.constraints:
            if isinstance(e, PrimExpr):
                seen |= {id(v) for v in collect_vars(e)}
        return [v for v in self.unknown if id(v) not in seen]

    def bind(self, params, runtime, env, span=None):
        """Complete `env` (id(Var) -> int, scalar parameters included) from `runtime`
        (param index -> (shape, strides) in the parameter's elements); check every
        constraint."""
        pending = list(self.constraints)
        progress = True
        while pending and progress:
            progress = False
            rest = []
            for c in pending:
                i, kind, d, e = c
                got = self._value(runtime, i, kind, d)
                if got is None:
                    continue
                state = self._resolve(e, env, got)
                if state == "todo":
                    rest.append(c)
                    continue
                progress = True
                if state is False:
                    self._mismatch(params[i], kind, d, e, got, env, runtime[i], span)
            pending = rest
        for i, kind, d, e in pending:
            names = ", ".join(f"`{v.name}`" for v in collect_vars(e) if id(v) not in env)
            raise ArgumentError(f"cannot infer {names} from argument `{params[i].name}` ({kind} {d} is "
                                f"{self._value(runtime, i, kind, d)}, declared {e})", span,
                                hint="declare such a dimension as a plain variable (T.dynamic) or pass it as a "
                                     "scalar parameter")
        return env

    @staticmethod
    def _value(runtime, i, kind, d):
        shape, strides = runtime[i]
        vals = shape if kind == "shape" else strides
        return int(vals[d]) if d < len(vals) else None

    @staticmethod
    def _resolve(e, env, got):
        """True (holds) / False (does not) / "todo" (unknowns left, none solvable yet);
        binds a solvable unknown in `env`."""
        c = const_int_value(e)
        if c is not None:
            return c == got
        if isinstance(e, Var):
            if id(e) in env:
                return env[id(e)] == got
            env[id(e)] = got
            return True
        known = {v: IntImm(env[id(v)], v.dtype) for v in collect_vars(e) if id(v) in env}
        e2 = simplify(substitute(e, known)) if known else e
        c = const_int_value(e2)
        if c is not None:
            return c == got
        free = list({id(v): v for v in collect_vars(e2)}.values())
        if len(free) != 1:
            return "todo"
        lin = linear_form(e2)
        if lin is None:
            return "todo"
        terms, const = lin
        (v, coef), = [(t[0], t[1]) for t in terms.values()] if len(terms) == 1 else [(None, 0)]
        if v is None or coef == 0 or (got - const) % coef:
            return False
        env[id(free[0])] = (got - const) // coef
        return True

    @staticmethod
    def _mismatch(p, kind, d, e, got, env, rt, span):
        shape, strides = rt
        want = simplify(substitute(e, {v: IntImm(env[id(v)], v.dtype) for v in collect_vars(e)
                                       if id(v) in env})) if isinstance(e, PrimExpr) else e
        packed = f" (in {p.dtype} elements, two per byte)" if pack_factor(p.dtype) > 1 else ""
        if kind == "shape":
            raise ArgumentError(f"argument `{p.name}` has shape {tuple(shape)}{packed}, the kernel expects "
                                f"{shape_text(p.shape)} (dimension {d}: {got} != {want})", span,
                                hint="pass a tensor of that shape, or build the kernel for this one (a "
                                     "T.dynamic / T.symbolic dimension accepts any size)")
        raise ArgumentError(f"argument `{p.name}` has strides {tuple(strides)}{packed}, the kernel expects "
                            f"{shape_text(p.strides)} (stride {d}: {got} != {want})", span,
                            hint="pass a tensor with that layout (e.g. .contiguous()) or declare the stride "
                                 "as a variable")


def shape_text(shape) -> str:
    """A parameter's shape (or strides) as the user wrote it: (256, 256), (M, 128)."""
    dims = [str(const_int_value(d)) if const_int_value(d) is not None else str(d) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"
