"""Vectorized copies on the HIP backend: a T.Parallel nest whose body moves one element
(`dst[.., x + j] = src[.., y + j]`, maybe cast, maybe guarded) runs V consecutive
innermost iterations per thread as one 16-byte (or narrower) load and store
(`global_load_dwordx4` / `ds_read_b128`).

V is chosen so that every vector is aligned: the flat offset of each access at the
vector's first lane is a multiple of V for every value of the other variables (their
coefficients, the buffers' strides and the constants are multiples of V; a parameter
counts with its `T.assume(n % d == 0)` promise). Guards (`if a < b and ...` around the
store, `T.if_then_else(c, src, 0)` around the load) must be conjunctions of comparisons
linear in the innermost variable, hence monotonic in it: a vector whose first and last
lanes pass passes everywhere; a vector that does not runs element by element."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.simplify import linear_form
from tilelang.ir.visitor import collect_vars
from tilelang.arith.divisibility import multiple_of
from tilelang.backend.hip.expr import ctype

_CMP = ("<", "<=", ">", ">=")


def _uses(e, v):
    return any(x is v for x in collect_vars(e))


def _parts(body):
    """(store guard, store, load guard, load, cast dtype) of a one-element copy body, or None."""
    guard = None
    if isinstance(body, S.IfThenElse) and body.else_body is None:
        guard, body = body.cond, body.then_body
    if not isinstance(body, S.BufferStore):
        return None
    value, cast, lguard = body.value, None, None
    if isinstance(value, E.Cast):
        cast, value = value.dtype, value.value
    if isinstance(value, E.Select) and isinstance(value.t, E.BufferLoad):
        lguard, value = value.cond, value.t
    if isinstance(value, E.Cast) and cast is None:
        cast, value = value.dtype, value.value
    if not isinstance(value, E.BufferLoad):
        return None
    return guard, body, lguard, value, cast


def _monotonic(cond, v):
    for c in E.conjuncts(cond):
        if not (isinstance(c, E.BinOp) and c.op in _CMP):
            return False
        if _uses(c, v) and linear_form(E.binop("-", c.a, c.b)) is None:
            return False
    return True


def _aligned(cg, buf, indices, v, vars_, V):
    """Whether `buf[indices]` is contiguous along `v` and V-aligned at every multiple of V."""
    if not indices or any(_uses(i, v) for i in indices[:-1]):
        return False
    lf = linear_form(indices[-1])
    if lf is None or sum(c for a, c in lf[0].values() if a is v) != 1:
        return False
    strides = cg.strides(buf)
    if E.const_int_value(strides[-1]) != 1:
        return False
    flat = None
    for i, s in zip(indices, strides):
        term = E.binop("*", i, E.convert(s)) if E.const_int_value(s) != 1 else i
        flat = term if flat is None else E.binop("+", flat, term)
    lf = linear_form(flat)
    if lf is None or lf[1] % V:
        return False
    for atom, c in lf[0].values():
        if atom is v:
            continue
        if multiple_of(atom, c, cg.divisors) % V:
            return False
    return True


def plan_vector(cg, vars_, exts, body):
    """V (> 1) for a vectorized copy of this nest, or None."""
    parts = _parts(body)
    if parts is None:
        return None
    guard, store, lguard, load, _ = parts
    v = vars_[-1]
    inner = E.const_int_value(exts[-1])
    if inner is None or cg.plan.in_registers(store.buffer) or cg.plan.in_registers(load.buffer):
        return None
    if store.buffer.scope not in ("global", "shared", "local.fragment") or \
            load.buffer.scope not in ("global", "shared", "local.fragment"):
        return None
    for c in (guard, lguard):
        if c is not None and not _monotonic(c, v):
            return None
    bytes_ = max(store.buffer.dtype.bits, load.buffer.dtype.bits) // 8
    if bytes_ == 0:
        return None
    V = 16 // bytes_
    while V > 1:
        if inner % V == 0 and _aligned(cg, store.buffer, store.indices, v, vars_, V) and \
                _aligned(cg, load.buffer, load.indices, v, vars_, V):
            return V
        V //= 2
    return None


def emit_vector(cg, vars_, exts, body, V):
    guard, store, lguard, load, cast = _parts(body)
    n = cg.plan.threads
    total = exts[0]
    for x in exts[1:]:
        total = total * x
    e = cg.names.fresh("tl_e")
    inner = E.const_int_value(exts[-1])
    cg.emit(f"for (int {e} = tl_tid; {e} < ({cg.expr(total)}) / {V}; {e} += {n}) {{   // {V}-wide vectors")
    cg.ind += 1
    v = cg.names.name(vars_[-1], vars_[-1].name)
    cg.emit(f"const int {v} = ({e} % {inner // V}) * {V};")
    rest = f"({e} / {inner // V})"
    for k in range(len(vars_) - 2, -1, -1):
        name = cg.names.name(vars_[k], vars_[k].name)
        if k == 0:
            cg.emit(f"const int {name} = {rest};")
        else:
            cg.emit(f"const int {name} = {rest} % {cg.expr(exts[k])};")
            rest = f"({rest} / {cg.expr(exts[k])})"
    conds = [c for c in (guard, lguard) if c is not None]
    st, lt = ctype(store.buffer.dtype), ctype(load.buffer.dtype)
    src = f"*(const tl::vec<{lt}, {V}>*)&{cg.elem(load.buffer, load.indices)}"
    dst = f"*(tl::vec<{st}, {V}>*)&{cg.elem(store.buffer, store.indices)}"
    if conds:
        first = " && ".join(f"({cg.expr(c)})" for c in conds)
        with cg.names.bound(vars_[-1], f"({v} + {V - 1})"):
            last = " && ".join(f"({cg.expr(c)})" for c in conds)
        cg.emit(f"if ({first} && {last}) {{")
        cg.ind += 1
    if cast is None or ctype(cast) == lt:
        cg.emit(f"{dst} = {src};")
    else:
        cg.emit(f"{dst} = tl::vec_cast<{st}>({src});")
    if conds:   # a vector the guards cut: element by element
        cg.ind -= 1
        cg.emit("} else {")
        cg.ind += 1
        u = cg.names.fresh("tl_u")
        cg.emit(f"for (int {u} = 0; {u} < {V}; ++{u}) {{")
        cg.ind += 1
        with cg.names.bound(vars_[-1], f"({v} + {u})"):
            cg.stmt(body)
        cg.ind -= 1
        cg.emit("}")
        cg.ind -= 1
        cg.emit("}")
    cg.ind -= 1
    cg.emit("}")
