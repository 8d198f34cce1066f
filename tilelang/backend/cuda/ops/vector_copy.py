"""Vectorized copies: a T.Parallel nest whose body is one (predicated) element copy
`dst[..., v] = src[..., v]` moves V elements (up to 16 bytes) per thread and
instruction when alignment and predicates provably hold for whole vectors:
- the innermost loop var appears only in the last index, with coefficient 1, and
  every other term of that index and every outer stride is a multiple of V;
- a bound check on the innermost var compares `x < n` (or `x >= n`) with n a multiple
  of V, so it is true or false for a whole vector."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.visitor import _children, collect_vars
from tilelang.arith.simplify import linear_form, simplify
from tilelang.arith.divisibility import assumed_divisors, multiple_of

VEC_TYPES = {16: ("uint4", "make_uint4(0u, 0u, 0u, 0u)"), 8: ("uint2", "make_uint2(0u, 0u)"),
             4: ("unsigned", "0u"), 2: ("unsigned short", "(unsigned short)0")}
# float32 data moves as CUDA's float vectors (the same LDG/STG/LDS.128 and .64 as the
# words above; the published TileLang's spelling)
FLOAT_VEC_TYPES = {16: ("float4", "make_float4(0.f, 0.f, 0.f, 0.f)"), 8: ("float2", "make_float2(0.f, 0.f)")}


def vec_type(dtype, nbytes):
    """(C type, zero value) of a vector of `nbytes` bytes of `dtype` elements."""
    if dtype.name == "float32" and nbytes in FLOAT_VEC_TYPES:
        return FLOAT_VEC_TYPES[nbytes]
    return VEC_TYPES[nbytes]


def global_root(buf):
    """The tensor parameter a global buffer views (`T.Tensor(shape, dtype, A.data)`,
    T.view/T.reshape of a global tensor start at its first element), or None."""
    while getattr(buf, "alias_of", None) is not None:
        buf = buf.alias_of
    return buf if buf.scope == "global" and getattr(buf, "data_ptr", None) is None else None


def _require_aligned(cg, buf, nbytes):
    """The runtime checks that the parameter behind `buf` is aligned to `nbytes`."""
    root = global_root(buf)
    if root is not None:
        cg.aligned[root.name] = max(cg.aligned.get(root.name, 1), nbytes)


def _has(e, v):
    return any(x is v for x in collect_vars(e))


def _mult_except(e, v, V, divisors=None):
    """e = v + (terms that are multiples of V); with v absent, e is a multiple of V.
    `divisors` ({id(var): d}, arith/divisibility.py): runtime values the kernel
    promises (T.assume) to be multiples of d. The step may also come through
    `(v + multiples of V) % m` with m a multiple of V (the channel of an im2col index),
    and other terms may read v through `(v + multiples of V) // m` (constant over a
    vector: `_uniform`)."""
    lin = linear_form(simplify(e)) if e.dtype.is_int else None
    if lin is None:
        return False
    terms, const = lin
    if const % V:
        return False
    steps = 0
    for atom, c in terms.values():
        if v is not None and (atom is v or _steps_with(atom, v, V)):
            if c != 1:
                return False
            steps += 1
        elif multiple_of(atom, c, divisors or {}) % V or (v is not None and not _uniform(atom, v, V)):
            return False
    return steps == 1 or v is None or not _has(e, v)


def _divisor_of_vectors(e, V):
    m = E.const_int_value(e)
    return m is not None and m > 0 and m % V == 0


def _steps_with(e, v, V):
    """`e = (v + multiples of V) % m` with m a multiple of V: within a vector (v = V*q + t,
    t < V) it is `(V*q + ...) % m + t`, consecutive and starting on a multiple of V."""
    return isinstance(e, E.BinOp) and e.op == "%" and _divisor_of_vectors(e.b, V) and \
        _has(e.a, v) and _mult_except(e.a, v, V)


def _uniform(e, v, V):
    """`e` takes one value over each vector of V consecutive `v` starting on a multiple of
    V: it does not read v, or reads it only through `(v + multiples of V) // m` with m a
    multiple of V (the row/column of an im2col index, its padding checks)."""
    if v is None or not _has(e, v):
        return True
    if e is v:
        return False
    if isinstance(e, E.BinOp) and e.op == "//" and _divisor_of_vectors(e.b, V) and _mult_except(e.a, v, V):
        return True
    if isinstance(e, (E.BinOp, E.Not, E.Cast, E.Select, E.Call, E.BufferLoad)):
        return all(_uniform(c, v, V) for c in _children(e))
    return False


def kernel_divisors(cg):
    """The divisibility the kernel of codegen `cg` assumes of its parameters (cached)."""
    d = getattr(cg, "_assumed_divisors", None)
    if d is None:
        launch, params = getattr(cg, "launch", None), getattr(cg, "params", ())
        ids = {id(obj) for _, obj, _ in params}
        d = {} if launch is None else assumed_divisors(launch.body, lambda var: id(var) in ids)
        cg._assumed_divisors = d
    return d



def consecutive(e, v, V):
    """Whether index `e` steps by one element with `v` and starts each vector of V on a
    multiple of V: `e = v + (multiples of V)`. An index without `v` (a broadcast) is not."""
    return _has(e, v) and _mult_except(e, v, V)


def _cond_ok(c, v, V):
    for atom in E.conjuncts(c):
        if _uniform(atom, v, V):
            continue
        # x < n and x >= n (a lower bound such as `x >= 0` where x is not provably
        # non-negative) hold for all of [x - v, x - v + V) or none when n % V == 0
        if not (isinstance(atom, E.BinOp) and atom.op in ("<", ">=") and not _has(atom.b, v)):
            return False
        if not _mult_except(atom.a, v, V) or not _mult_except(atom.b, None, V):
            return False
    return True


def match_copy(body):
    """(guard cond | None, dst BufferStore, src BufferLoad, select cond | None) or None."""
    guard = None
    if isinstance(body, S.IfThenElse) and body.else_body is None:
        guard, body = body.cond, body.then_body
    if not isinstance(body, S.BufferStore):
        return None
    val, sel = body.value, None
    while isinstance(val, E.Select):   # nested zero-fills (padding, then a bounds check) are one
        z = val.f
        if not (isinstance(z, (E.FloatImm, E.IntImm)) and z.value == 0):
            return None
        sel = val.cond if sel is None else E.binop("&&", sel, val.cond)
        val = val.t
    if not isinstance(val, E.BufferLoad) or val.buffer.dtype is not body.buffer.dtype:
        return None
    return guard, body, val, sel


def match_cast_copy(body):
    """(guard | None, dst BufferStore, src BufferLoad) when the body is one element
    conversion `dst[...] = T.cast(src[...], dst.dtype)` that ops/vector_cast.py pairs."""
    from tilelang.backend.cuda.ops.vector_cast import can_pair
    guard = None
    if isinstance(body, S.IfThenElse) and body.else_body is None:
        guard, body = body.cond, body.then_body
    if not isinstance(body, S.BufferStore) or not isinstance(body.value, E.Cast):
        return None
    load = body.value.value
    if not isinstance(load, E.BufferLoad) or body.value.dtype is not body.buffer.dtype or \
            not can_pair(load.buffer.dtype, body.buffer.dtype):
        return None
    return guard, body, load


def _vector_access(strides, idx, v, V, divisors=None):
    """Whether `buf[idx]` touches V consecutive elements, starting at a multiple of V,
    as `v` runs over a vector: `v` steps one index whose stride is 1 (the last one for
    row-major buffers, any one for strided tensors), and every other stride is a
    multiple of V (a constant, or a linear form whose coefficients all are)."""
    dims = [d for d, i in enumerate(idx) if not _uniform(i, v, V)]
    if len(dims) != 1:
        return False
    d = dims[0]
    if E.const_int_value(strides[d]) != 1 or not _mult_except(idx[d], v, V, divisors):
        return False
    # a stride that is a symbolic multiple of V (`16 * k16` for a dynamic K specialized on
    # divisibility, or `N` after `T.assume(N % V == 0)`) keeps every vector aligned as
    # well as a constant one
    return all(_mult_except(E.convert(s), None, V, divisors) for k, s in enumerate(strides) if k != d)


def without_assumes(body):
    """A loop body `T.assume(..); stmt` as `stmt`: the promises were used when bounds
    checks were decided (legalize_safe_memory_access.py) and are only hints to the
    CUDA compiler from then on, which a vector form may leave out."""
    if isinstance(body, S.SeqStmt):
        rest = [x for x in body.stmts if not isinstance(x, S.Assume)]
        if len(rest) == 1:
            return rest[0]
    return body


def vector_width(cg, vars_, mins, exts, body, registers=False):
    """The number of elements per vector (>= 2) for this nest, or None. `registers`: a
    thread's own `T.vectorized` loop, whose per-thread arrays (`T.alloc_local`, declared
    16-byte aligned: `vector_locals`) may be a side of the copy."""
    from tilelang.backend.cuda.ops import vector_atomic as vector_atomic
    body = without_assumes(body)
    if vector_atomic.match(body) is not None:
        return _atomic_width(cg, vars_, mins, exts, body)
    m = match_copy(body)
    if m is not None:
        guard, store, load, sel = m
    else:
        m = match_cast_copy(body)
        if m is None:   # element-wise arithmetic (ops/vector_compute.py)
            from tilelang.backend.cuda.ops import vector_compute as vector_compute
            return vector_compute.width(cg, vars_, mins, exts, body)
        (guard, store, load), sel = m, None
    if not vars_:
        return None
    v = vars_[-1]
    ext = E.const_int_value(exts[-1])
    if ext is None or E.const_int_value(mins[-1]) != 0:
        return None
    item = max(store.buffer.dtype.itemsize, load.buffer.dtype.itemsize)
    if store.buffer.dtype.bits < 8 or load.buffer.dtype.bits < 8:
        return None
    for V in (16 // item, 8 // item, 4 // item, 2 // item):
        if V < 2 or ext % V:
            continue
        if _misfit(cg, v, V, store, load, guard, sel, registers) is None:
            return V
    return None


def vector_locals(body):
    """ids of the per-thread arrays that a `T.vectorized` element copy reads or writes:
    the codegen declares them 16-byte aligned so that the copy may move whole vectors."""
    from tilelang.ir.visitor import walk
    out = set()

    def f(n):
        if isinstance(n, S.For) and n.kind == S.VECTORIZED:
            m = match_copy(without_assumes(n.body))
            if m is not None:
                out.update(id(x.buffer) for x in (m[1], m[2]) if x.buffer.scope == "local")
    walk(body, f)
    return out


def _misfit(cg, v, V, store, load, guard, sel, registers=False):
    """Why V elements per vector do not fit the copy `store <- load`, or None."""
    for buf, idx in ((store.buffer, store.indices), (load.buffer, load.indices)):
        p = cg.placement(buf)
        if registers and p is not None and p.kind == "local" and buf.scope == "local":
            pass   # a thread's own array, aligned by its declaration (vector_locals)
        elif p is not None and p.kind not in ("smem",) and not (p.kind == "view" and global_root(buf) is not None):
            return f"`{buf.name}` is not in memory that vector accesses reach (it lives in {p.kind})"
        if V * buf.dtype.itemsize not in VEC_TYPES:
            return f"{V} elements of {buf.dtype} are {V * buf.dtype.itemsize} bytes, not 2, 4, 8 or 16"
        if not _vector_access(cg.strides(buf), idx, v, V, kernel_divisors(cg)):
            return (f"the accesses of `{buf.name}` are not {V} consecutive elements starting at a multiple of {V} "
                    f"(alignment)")
    if not all(c is None or _cond_ok(c, v, V) for c in (guard, sel)):
        return f"a bounds check does not hold or fail for whole vectors of {V}"
    return None


def width_problem(cg, vars_, mins, exts, body, V):
    """Why a copy nest cannot move V elements per vector (T.copy's coalesced_width), or
    None when it can (V == 1: always)."""
    body = without_assumes(body)
    m = match_copy(body)
    if m is not None:
        guard, store, load, sel = m
    else:
        m = match_cast_copy(body)
        if m is None:
            return "the nest is not a plain element copy"
        (guard, store, load), sel = m, None
    if V == 1:
        return None
    if V & (V - 1):
        return "the width must be a power of two"
    if store.buffer.dtype.bits < 8 or load.buffer.dtype.bits < 8:
        return "sub-byte elements are copied in whole bytes"
    ext = E.const_int_value(exts[-1]) if vars_ else None
    if ext is None or E.const_int_value(mins[-1]) != 0:
        return "the innermost copied extent is not a compile-time constant"
    if ext % V:
        return f"the innermost copied extent {ext} is not a multiple of {V}"
    return _misfit(cg, vars_[-1], V, store, load, guard, sel)


def _atomic_width(cg, vars_, mins, exts, body):
    """Vector atomic adds (ops/vector_atomic.py) over the innermost loop, or None."""
    from tilelang.backend.cuda.ops import vector_atomic as vector_atomic
    guard, call = vector_atomic.match(body)
    dst = call.args[0]
    if not vars_ or E.const_int_value(mins[-1]) != 0 or getattr(cg, "async_copy", False):
        return None
    v, ext = vars_[-1], E.const_int_value(exts[-1])
    W = vector_atomic.lanes(dst.buffer.dtype, cg.target.arch)
    while W >= 2 and (ext is None or ext % W):
        W //= 2
    if W < 2:
        return None
    strides = cg.strides(dst.buffer)
    if E.const_int_value(strides[-1]) != 1 or any(_has(i, v) for i in dst.indices[:-1]):
        return None
    if any(E.const_int_value(x) is None or E.const_int_value(x) % W for x in strides[:-1]):
        return None
    if not consecutive(dst.indices[-1], v, W) or (guard is not None and not _cond_ok(guard, v, W)):
        return None
    return W


def _emit_vector_atomic(cg, body, V, v):
    from tilelang.backend.cuda.ops import vector_atomic as vector_atomic
    guard, call = vector_atomic.match(body)
    dst = call.args[0]
    _require_aligned(cg, dst.buffer, V * dst.buffer.dtype.itemsize)
    first = cg.names[v]
    lines, values = [], None
    val = call.args[1]
    if isinstance(val, E.BufferLoad) and val.buffer.dtype is dst.buffer.dtype:
        # the added values are consecutive elements of one buffer: one wide load
        # (LDS.128 for a float4) whose lanes feed the vector atomic
        nbytes = V * val.buffer.dtype.itemsize
        p = cg.placement(val.buffer)
        if nbytes in VEC_TYPES and (p is None or p.kind == "smem" or
                                    (p.kind == "view" and global_root(val.buffer) is not None)) and \
                _vector_access(cg.strides(val.buffer), val.indices, v, V, kernel_divisors(cg)):
            from tilelang.backend.cuda.ops.vector_compute import _lane
            from tilelang.backend.cuda.emit.expr import ctype
            _require_aligned(cg, val.buffer, nbytes)
            vt, _ = vec_type(val.buffer.dtype, nbytes)
            hint = getattr(val, "name_hint", None)   # the user's name (frontend/control.py)
            name = cg.names.new(object(), hint) if hint else cg.names.new(object(), "tl_vl", True)
            lines.append(f"const {vt} {name} = *reinterpret_cast<const {vt}*>(&{cg.access(val)});")
            values = [_lane(vt, f"const {ctype(val.buffer.dtype)}", name, t) for t in range(V)]
    if values is None:
        values = []
        for t in range(V):
            with cg.names.bound(v, first if t == 0 else f"({first} + {t})"):
                values.append(vector_atomic.element_value(cg, call))
    lines.append(vector_atomic.call_line(cg, call, V, cg.access(dst), values))
    if guard is not None:
        cg.w(f"if ({cg.expr(guard)}) {{")
        cg.indent += 1
    for ln in lines:
        cg.w(ln)
    if guard is not None:
        cg.indent -= 1
        cg.w("}")


# T.copy's eviction_policy as the number include/tl_cuda/cache_hint.h takes (the published numbering)
EVICTION_CODES = {"evict_normal": 0, "evict_first": 1, "evict_last": 2}


def emit_vector_copy(cg, body, V, v=None, eviction=None):
    """The copy (or cast, atomic, element-wise) body `body` moving V elements per access;
    `eviction` (a plain copy only): the L2 priority of its global loads and stores
    (plan/copy_forms.py; V == 1 for a scalar copy with a hint)."""
    from tilelang.backend.cuda.ops import vector_atomic as vector_atomic
    body = without_assumes(body)
    if vector_atomic.match(body) is not None:
        return _emit_vector_atomic(cg, body, V, v)
    if match_copy(body) is None:
        if match_cast_copy(body) is None:
            from tilelang.backend.cuda.ops import vector_compute as vector_compute
            return vector_compute.emit(cg, body, V, v)
        return _emit_vector_cast(cg, body, V)
    guard, store, load, sel = match_copy(body)
    nbytes = V * store.buffer.dtype.itemsize
    vt, zero = vec_type(store.buffer.dtype, nbytes) if nbytes != 1 else ("unsigned char", "(unsigned char)0")
    for buf in (store.buffer, load.buffer):  # the runtime checks these pointers' alignment
        _require_aligned(cg, buf, nbytes)
    policy = None if eviction is None else EVICTION_CODES[eviction]
    if getattr(cg, "async_copy", False):
        src = f"&{cg.access(load)}"
        pred = "true"
        if sel is not None:
            pred = cg.expr(sel)
            src = f"({pred} ? (const void*){src} : (const void*){cg.buf_name(load.buffer)})"
        from tilelang.backend.cuda.ops.cp_async import cp_async_line
        if policy is None:
            line = cp_async_line(nbytes, f"&{cg.access(store)}", src, pred) + ";"
        else:
            line = f"tl::cp_async_hint<{nbytes}, {policy}>(&{cg.access(store)}, {src}, {pred});"
        cg.w(f"if ({cg.expr(guard)}) {{ {line} }}" if guard is not None else line)
        return
    if policy is not None and load.buffer.scope == "global":
        src = f"tl::ld_global_hint<{vt}, {policy}>(reinterpret_cast<const {vt}*>(&{cg.access(load)}))"
    else:
        src = f"*reinterpret_cast<const {vt}*>(&{cg.access(load)})"
    if sel is not None:
        src = f"({cg.expr(sel)} ? {src} : {zero})"

    def put(value):
        if policy is not None and store.buffer.scope == "global":
            return f"tl::st_global_hint<{vt}, {policy}>(reinterpret_cast<{vt}*>(&{cg.access(store)}), {value});"
        return f"*reinterpret_cast<{vt}*>(&{cg.access(store)}) = {value};"
    hint = getattr(load, "name_hint", None)
    if hint:   # `b = A[0, 0:4]; A[0, 4:8] = b`: the vector is a variable named b
        name = cg.names.new(object(), hint)
        lines = [f"{vt} {name} = {src};", put(name)]
        if guard is not None:
            lines = [f"if ({cg.expr(guard)}) {{"] + ["  " + ln for ln in lines] + ["}"]
        for ln in lines:
            cg.w(ln)
        return
    line = put(src)
    cg.w(f"if ({cg.expr(guard)}) {{ {line} }}" if guard is not None else line)


def _emit_vector_cast(cg, body, V):
    """One vector load of V source elements, V / 2 paired conversions, one vector store."""
    from tilelang.backend.cuda.emit.expr import ctype
    from tilelang.backend.cuda.ops.vector_cast import pair_cast
    guard, store, load = match_cast_copy(body)
    st, dt = load.buffer.dtype, store.buffer.dtype
    (vs, _), (vd, _) = vec_type(st, V * st.itemsize), vec_type(dt, V * dt.itemsize)
    for buf in (store.buffer, load.buffer):
        _require_aligned(cg, buf, V * buf.dtype.itemsize)
    a, d = cg.names.new(object(), "tl_cs", True), cg.names.new(object(), "tl_cd", True)
    src = lambda k: f"reinterpret_cast<const {ctype(st)}*>(&{a})[{k}]"  # noqa: E731
    dst = lambda k: f"reinterpret_cast<{ctype(dt)}*>(&{d})[{k}]"  # noqa: E731
    lines = [f"const {vs} {a} = *reinterpret_cast<const {vs}*>(&{cg.access(load)});", f"{vd} {d};"]
    for k in range(0, V, 2):
        p = cg.names.new(object(), "tl_p", True)
        lines.append("{ " + pair_cast(st, dt, src(k), src(k + 1), dst(k), dst(k + 1), p) + " }")
    lines.append(f"*reinterpret_cast<{vd}*>(&{cg.access(store)}) = {d};")
    if guard is not None:
        cg.w(f"if ({cg.expr(guard)}) {{")
        cg.indent += 1
    for ln in lines:
        cg.w(ln)
    if guard is not None:
        cg.indent -= 1
        cg.w("}")
