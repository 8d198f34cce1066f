"""Vectorized element-wise statements: a loop over `v` (T.vectorized, or the innermost
variable of a T.Parallel nest) whose body is one (guarded) store
`dst[.., v] = f(src[.., v], other[.., v // K], ...)` runs V lanes at a time:
- every load that steps with `v` is read as one vector (up to 16 bytes) and
  `dst` is written as one vector, both where alignment provably holds (the rules
  of ops/vector_copy.py's copies);
- a load whose index is the same for the V lanes of a vector (no `v`, or `v` only
  under `// K` with K a multiple of V) is read once per vector;
- f is computed lane by lane on registers (`r.x = a.x * c; ...`).
Loads under a select or a short-circuit operator (read only when a condition holds)
and side effects (atomics, extern calls) keep the loop scalar."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk
from tilelang.backend.cuda.ops.vector_access import (VEC_TYPES, _cond_ok, _has, _mult_except, _require_aligned,
                                             _vector_access, global_root, kernel_divisors, vec_type)

LANES = "xyzw"


def _pure_call(e):
    from tilelang.backend.cuda.emit.expr import _MATH
    return e.name in _MATH or e.name in ("abs", "isnan", "isinf", "isfinite")


def _group_invariant(e, v, V):
    """Whether index `e` has one value over each aligned group of V consecutive `v`."""
    if not _has(e, v):
        return True
    if isinstance(e, E.BinOp) and e.op == "//":
        K = E.const_int_value(e.b)
        return K is not None and K > 0 and K % V == 0 and _mult_except(e.a, v, V)
    if isinstance(e, E.BinOp) and e.op in ("+", "-"):
        return _group_invariant(e.a, v, V) and _group_invariant(e.b, v, V)
    if isinstance(e, E.BinOp) and e.op == "*":
        return (not _has(e.b, v) and _group_invariant(e.a, v, V)) or \
            (not _has(e.a, v) and _group_invariant(e.b, v, V))
    return False


def _split(body):
    guard = None
    if isinstance(body, S.IfThenElse) and body.else_body is None:
        guard, body = body.cond, body.then_body
    return (guard, body) if isinstance(body, S.BufferStore) else (None, None)


def _loads(value):
    """The loads of `value` (each buffer read at one index only), or None where the
    expression is not a plain element-wise one."""
    loads, bad = {}, []

    def f(n):
        if isinstance(n, E.Select) or (isinstance(n, E.BinOp) and n.op in ("&&", "||")):
            inner = []
            walk(n, lambda m: inner.append(m) if isinstance(m, E.BufferLoad) else None)
            if inner:
                bad.append(n)   # read only where a condition holds
        elif isinstance(n, E.Call) and not _pure_call(n):
            bad.append(n)
        elif isinstance(n, E.BufferLoad):
            prev = loads.get(id(n.buffer))
            if prev is not None and not all(a is b or str(a) == str(b) for a, b in zip(prev.indices, n.indices)):
                bad.append(n)
            loads[id(n.buffer)] = n
            if any(isinstance(m, E.BufferLoad) for i in n.indices for m in _subexprs(i)):
                bad.append(n)   # an index read from memory
    walk(value, f)
    return None if bad else list(loads.values())


def _subexprs(e):
    out = []
    walk(e, out.append)
    return out


def _memory_ok(cg, buf):
    p = cg.placement(buf)
    return p is None or p.kind == "smem" or (p.kind == "view" and global_root(buf) is not None)


def width(cg, vars_, mins, exts, body):
    """Elements per vector (>= 2) for this element-wise nest, or None."""
    guard, store = _split(body)
    if store is None or not vars_ or E.const_int_value(mins[-1]) != 0:
        return None
    v, ext = vars_[-1], E.const_int_value(exts[-1])
    loads = _loads(store.value)
    if ext is None or loads is None or not _has(store.indices[-1], v):
        return None
    vec = [ld for ld in loads if any(_has(i, v) for i in ld.indices) and
           not all(_group_invariant(i, v, 2) for i in ld.indices)]
    for ld in loads:   # sequential lanes: a lane may read what an earlier one wrote
        if ld.buffer is store.buffer and not all(str(a) == str(b) for a, b in zip(ld.indices, store.indices)):
            return None
    bufs = [store.buffer] + [ld.buffer for ld in vec]
    if any(b.dtype.bits < 8 or not _memory_ok(cg, b) for b in bufs) or \
            any(ld.buffer.dtype.bits < 8 for ld in loads):
        return None
    item = max(b.dtype.itemsize for b in bufs)
    for V in (16 // item, 8 // item, 4 // item, 2 // item):
        if V < 2 or ext % V:
            continue
        if any(V * b.dtype.itemsize not in VEC_TYPES for b in bufs):
            continue
        if not all(_vector_access(cg.strides(ld.buffer), ld.indices, v, V, kernel_divisors(cg))
                   for ld in [store] + vec):
            continue
        others = [ld for ld in loads if not any(ld is x for x in vec)]
        if not all(_group_invariant(i, v, V) for ld in others for i in ld.indices):
            continue
        if guard is None or _cond_ok(guard, v, V):
            return V
    return None


def _lane(vt, ct, name, t):
    if vt.startswith("float") and vt[-1] in "24":
        return f"{name}.{LANES[t]}"
    return f"reinterpret_cast<{ct}*>(&{name})[{t}]"


def emit(cg, body, V, v):
    """The vector form of `body` for the vector of lanes starting at `v`'s value."""
    from tilelang.backend.cuda.emit.expr import ctype, cast_str
    guard, store = _split(body)
    loads = _loads(store.value)
    first = cg.names[v]
    lines, overrides = [], {}
    for ld in loads:
        t = ctype(ld.buffer.dtype)
        name = cg.names.fresh("tl_vl")
        if all(_group_invariant(i, v, V) for i in ld.indices):   # one value for all lanes
            lines.append(f"const {t} {name} = {cg.access(ld)};")
            overrides[id(ld.buffer)] = [name] * V
            continue
        nbytes = V * ld.buffer.dtype.itemsize
        vt, _ = vec_type(ld.buffer.dtype, nbytes)
        _require_aligned(cg, ld.buffer, nbytes)
        lines.append(f"const {vt} {name} = *reinterpret_cast<const {vt}*>(&{cg.access(ld)});")
        overrides[id(ld.buffer)] = [_lane(vt, f"const {t}", name, k) for k in range(V)]
    dt = store.buffer.dtype
    nbytes = V * dt.itemsize
    vt, _ = vec_type(dt, nbytes)
    _require_aligned(cg, store.buffer, nbytes)
    r = cg.names.fresh("tl_vr")
    lines.append(f"{vt} {r};")
    saved = {k: cg.load_override.get(k) for k in overrides}
    for k in range(V):
        for bid, lanes in overrides.items():
            cg.load_override[bid] = lanes[k]
        with cg.names.bound(v, first if k == 0 else f"({first} + {k})"):
            val = cg.expr(store.value)
        if store.value.dtype is not dt:
            val = cast_str(store.value.dtype, dt, val)
        lines.append(f"{_lane(vt, ctype(dt), r, k)} = {val};")
    for bid, old in saved.items():
        if old is None:
            del cg.load_override[bid]
        else:
            cg.load_override[bid] = old
    lines.append(f"*reinterpret_cast<{vt}*>(&{cg.access(store)}) = {r};")
    cg.w(f"if ({cg.expr(guard)}) {{" if guard is not None else "{")
    cg.indent += 1
    for ln in lines:
        cg.w(ln)
    cg.indent -= 1
    cg.w("}")
