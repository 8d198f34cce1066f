"""Vectorized copies: a T.Parallel nest whose body is one (predicated) element copy
`dst[..., v] = src[..., v]` moves V elements (up to 16 bytes) per thread and
instruction when alignment and predicates provably hold for whole vectors:
- the innermost loop var appears only in the last index, with coefficient 1, and
  every other term of that index and every outer stride is a multiple of V;
- a bound check on the innermost var compares `x < n` (or `x >= n`) with n a multiple
  of V, so it is true or false for a whole vector."""
from __future__ import annotations

from typing import NamedTuple

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.backend.cuda.ops.vector_access import (is_bound_atom, VEC_TYPES, vec_type, global_root, _require_aligned, _has,
                                                     kernel_divisors, consecutive, _cond_ok, _vector_access)


def match_copy(body):
    """(guard cond | None, dst BufferStore, src BufferLoad, select cond | None) or None.
    Nested guards (a user's row check around the bounds check: varlen attention's output
    store) are one guard, their conjunction."""
    guard = None
    while isinstance(body, S.IfThenElse) and body.else_body is None:
        guard = body.cond if guard is None else E.binop("&&", guard, body.cond)
        body = body.then_body
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


# cp.async holds no registers while its data are in flight, so a thread may issue twice as
# many copies in straight-line code as a register-staged copy
ASYNC_EXACT_SPLIT = 16


class ThreadSplit(NamedTuple):
    """How a cooperative nest's iterations are shared out over the block's threads
    (`thread_split`): recorded on the nest by the pass plan_thread_splits (annotation
    `thread_split`, printed after its form), printed by emit/kernel.py `cooperative`."""
    how: str            # "exact", "guarded" or "strided"
    count: int | bool   # exact / guarded: the iterations a thread (an unrolled loop); strided: unrolled

    def __str__(self):
        if self.how == "exact":
            return f"exact split, {self.count} a thread"
        if self.how == "guarded":
            return f"guarded split, at most {self.count} a thread"
        return "strided split" + (", unrolled" if self.count else "")


def thread_split(total, nthreads, guarded=True, max_exact=8) -> ThreadSplit:
    """How a cooperative nest of `total` iterations (vectors; None: not a constant) runs
    over the block's `nthreads` threads: ("exact", n) when each thread takes exactly n <= max_exact
    of them (a fully unrolled loop, no bound check); ("guarded", n) when `total` is a
    constant that the threads do not divide and each thread takes at most n <= 4 (a fully
    unrolled loop whose last copy checks the bound: the thread's loads of every copy nest
    of a tile are in straight-line code, so the next nest's loads are issued before this
    one's data arrive; `guarded=False`, the switch TILELANG_CUDA_GUARDED_SPLIT=0: the
    strided loop instead); else ("strided", unrolled): a loop striding by the thread
    count, unrolled when there are at most 4 iterations a thread. Chosen for each nest by
    plan/thread_splits.py, printed by emit/kernel.py `cooperative`; plan/copy_forms.py reads
    it to know whether all of a thread's loads are in flight together. `max_exact`: the most
    copies a thread takes in the exact split (ASYNC_EXACT_SPLIT for cp.async nests)."""
    if total is not None and total % nthreads == 0 and total // nthreads <= max_exact:
        return ThreadSplit("exact", total // nthreads)
    if guarded and total is not None and total <= 4 * nthreads:
        return ThreadSplit("guarded", -(-total // nthreads))
    return ThreadSplit("strided", total is not None and total <= 4 * nthreads)


def vector_extents(exts, width):
    """The extents of a cooperative nest run `width` elements a vector (None: one element
    at a time): the innermost one divided by the width."""
    if not width:
        return list(exts)
    return list(exts[:-1]) + [E.IntImm(E.const_int_value(exts[-1]) // width)]


def iterations(exts):
    """The nest's iteration count as an expression (its product of extents, simplified)."""
    from tilelang.arith.simplify import simplify
    total = E.IntImm(1)
    for e in exts:
        total = simplify(E.binop("*", total, e))
    return total


def nest_split(exts, width, nthreads, guarded=True, max_exact=8) -> ThreadSplit:
    """The thread split of a cooperative nest with extents `exts` run `width` elements a
    vector (None: one at a time) on `nthreads` threads."""
    return thread_split(E.const_int_value(iterations(vector_extents(exts, width))), nthreads, guarded, max_exact)


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
            name = cg.names.fresh(cg.names.identifier(hint)) if hint else cg.names.fresh("tl_vl")
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


def in_bounds_source(load, sel):
    """The source element of a zero-filling cp.async (`sel`: when false, nothing is read)
    with an address inside its tensor whatever `sel` says, or None: each dimension that an
    atom of `sel` bounds (`i < n`, `i >= 0`) indexes `(its atoms) ? i : 0`. A select of the
    whole pointer (`sel ? &A[...] : A`) hides the address from strength reduction: the
    compiler recomputes it for every copy of every iteration (DeepSeek mHC's gemm: ~11
    instructions a copy); per dimension, a row guard that does not change in the loop is
    computed once and the addresses keep their constant offsets (plan/copy_forms.py
    `_address_in_bounds` chooses the copies)."""
    atoms = {}
    for atom in E.conjuncts(sel):
        d = next((d for d in range(len(load.indices))
                  if is_bound_atom(atom, load.indices[d], load.buffer.shape[d])), None)
        if d is None:
            return None
        atoms.setdefault(d, []).append(atom)
    idx = list(load.indices)
    for d, conds in atoms.items():
        cond = conds[0]
        for c in conds[1:]:
            cond = E.binop("&&", cond, c)
        idx[d] = E.select(cond, idx[d], E.IntImm(0, idx[d].dtype))
    return E.BufferLoad(load.buffer, idx)


def emit_vector_copy(cg, body, V, v=None, eviction=None, stage=None, in_bounds=False):
    """The copy (or cast, atomic, element-wise) body `body` moving V elements per access;
    `eviction` (a plain copy only): the L2 priority of its global loads and stores
    (plan/copy_forms.py; V == 1 for a scalar copy with a hint); `stage` (a converting copy
    only): ("load" | "store", register array, its index): only that half of the copy, the
    loaded vectors kept in the array in between (plan/cp_async_pipeline.py `STAGED`);
    `in_bounds` (a cp.async form's `in_bounds`): its zero-filled source is addressed per
    guarded dimension (`in_bounds_source`), else behind a pointer select."""
    from tilelang.backend.cuda.ops import vector_atomic as vector_atomic
    body = without_assumes(body)
    if vector_atomic.match(body) is not None:
        return _emit_vector_atomic(cg, body, V, v)
    if match_copy(body) is None:
        if match_cast_copy(body) is None:
            from tilelang.backend.cuda.ops import vector_compute as vector_compute
            return vector_compute.emit(cg, body, V, v)
        return _emit_vector_cast(cg, body, V, stage)
    if stage is not None:
        raise AssertionError("CUDA codegen: only a converting copy is staged through registers")
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
            inside = in_bounds_source(load, sel) if in_bounds else None   # plan/copy_forms.py decided
            src = f"&{cg.access(inside)}" if inside is not None else \
                f"({pred} ? (const void*){src} : (const void*){cg.buf_name(load.buffer)})"
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
        name = cg.names.fresh(cg.names.identifier(hint))
        lines = [f"{vt} {name} = {src};", put(name)]
        if guard is not None:
            lines = [f"if ({cg.expr(guard)}) {{"] + ["  " + ln for ln in lines] + ["}"]
        for ln in lines:
            cg.w(ln)
        return
    line = put(src)
    cg.w(f"if ({cg.expr(guard)}) {{ {line} }}" if guard is not None else line)


def staged_vector_type(body, V):
    """The C vector type a staged converting copy keeps its loaded V elements in."""
    guard, store, load = match_cast_copy(body)
    return vec_type(load.buffer.dtype, V * load.buffer.dtype.itemsize)[0]


def _emit_vector_cast(cg, body, V, stage=None):
    """One vector load of V source elements, V / 2 paired conversions, one vector store
    (`stage`: the load into a register array, or the rest from it: emit_vector_copy)."""
    from tilelang.backend.cuda.emit.expr import ctype
    from tilelang.backend.cuda.ops.vector_cast import pair_cast
    guard, store, load = match_cast_copy(body)
    st, dt = load.buffer.dtype, store.buffer.dtype
    (vs, _), (vd, _) = vec_type(st, V * st.itemsize), vec_type(dt, V * dt.itemsize)
    for buf in (store.buffer, load.buffer):
        _require_aligned(cg, buf, V * buf.dtype.itemsize)
    a, d = cg.names.fresh("tl_cs"), cg.names.fresh("tl_cd")
    src = lambda k: f"reinterpret_cast<const {ctype(st)}*>(&{a})[{k}]"  # noqa: E731
    dst = lambda k: f"reinterpret_cast<{ctype(dt)}*>(&{d})[{k}]"  # noqa: E731
    if stage is not None and guard is not None:
        raise AssertionError("CUDA codegen: a staged converting copy has no bounds check")
    if stage is not None and stage[0] == "load":
        cg.w(f"{stage[1]}[{stage[2]}] = *reinterpret_cast<const {vs}*>(&{cg.access(load)});")
        return
    lines = [f"const {vs} {a} = *reinterpret_cast<const {vs}*>(&{cg.access(load)});", f"{vd} {d};"]
    if stage is not None:
        lines[0] = f"const {vs} {a} = {stage[1]}[{stage[2]}];"
    for k in range(0, V, 2):
        p = cg.names.fresh("tl_p")
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
