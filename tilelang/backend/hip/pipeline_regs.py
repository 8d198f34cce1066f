"""T.Pipelined (num_stages >= 2) as register double-buffering: the loop body's leading
global -> LDS copies load the *next* iteration's tiles into registers while the rest of
the body (the MFMA) runs on the current one, then store them to LDS at the top of the
next iteration:

    regs = load(tiles of iteration lo)
    for k:  [barrier]  LDS = regs;  if k + 1 < end: regs = load(tiles of k + 1)
            [barrier]  gemm ...

Applies when the body starts with copy nests that `vector_copy.plan_vector` vectorizes,
from global memory into LDS without a store guard, each thread holding the same number of
vectors, and the prefetched tiles take at most PREFETCH_BYTES of registers per thread (32
VGPRs: more would spill next to the accumulators, e.g. MLA decode's 512-wide KV tiles); any
other T.Pipelined loop runs as a serial loop."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.pipeline_spec import pipeline_spec
from tilelang.backend.hip.expr import ctype
from tilelang.backend.hip.parallel import nest_of
from tilelang.backend.hip import vector_copy as VC


PREFETCH_BYTES = 128


def plan(cg, loop):
    """[(nest loop, vars, exts, body, V, vectors per thread)] of the leading copies, or None."""
    if pipeline_spec(loop).depth < 2 or loop.step is not None:
        return None
    stmts = loop.body.stmts if isinstance(loop.body, S.SeqStmt) else [loop.body]
    copies = []
    for st in stmts:
        if not (isinstance(st, S.For) and st.kind == S.PARALLEL):
            break
        vars_, exts, body = nest_of(st)
        if not vars_:
            break
        parts = VC._parts(body)
        if parts is None or parts[0] is not None:
            break
        _, store, _, load, _ = parts
        if load.buffer.scope != "global" or not cg.plan.in_lds(store.buffer):
            break
        V = VC.plan_vector(cg, vars_, exts, body)
        total = 1
        for x in exts:
            total *= E.const_int_value(x) or 0
        if V is None or total == 0 or (total // V) % cg.plan.threads:
            break
        copies.append((st, vars_, exts, body, V, total // V // cg.plan.threads))
    if not copies or len(copies) == len(stmts):
        return None
    per_thread = sum(V * per * max(1, body.buffer.dtype.bits // 8) for _, _, _, body, V, per in copies)
    if per_thread > PREFETCH_BYTES:
        return None
    return copies, stmts[len(copies):]


def _bind_vector(cg, vars_, exts, V, e):
    """Bind the nest's variables for flat vector index C expression `e`."""
    inner = E.const_int_value(exts[-1])
    binds = [(vars_[-1], f"((({e}) % {inner // V}) * {V})")]
    rest = f"(({e}) / {inner // V})"
    for k in range(len(vars_) - 2, -1, -1):
        if k == 0:
            binds.append((vars_[k], f"({rest})"))
        else:
            ext = E.const_int_value(exts[k])
            binds.append((vars_[k], f"(({rest}) % {ext})"))
            rest = f"(({rest}) / {ext})"
    return cg.names.bound_all(binds)


def _emit_loads(cg, copies, regs, k_var, k_expr):
    """regs[c][q] = the vectors of copy c for iteration `k_expr` (guards honoured)."""
    with cg.names.bound(k_var, k_expr):
        for (st, vars_, exts, body, V, per), reg in zip(copies, regs):
            _, store, lguard, load, cast = VC._parts(body)
            dt = ctype(store.buffer.dtype)
            for q in range(per):
                e = f"tl_tid + {q * cg.plan.threads}"
                with _bind_vector(cg, vars_, exts, V, e):
                    raw = _raw_type(body, V)
                    if raw is not None:   # a plain bit copy into an integer vector register
                        cg.emit(f"{reg}[{q}] = *(const {raw}*)&{cg.elem(load.buffer, load.indices)};")
                        continue
                    src = f"*(const tl::vec<{ctype(load.buffer.dtype)}, {V}>*)&{cg.elem(load.buffer, load.indices)}"
                    vec = src if cast is None or ctype(cast) == ctype(load.buffer.dtype) else \
                        f"tl::vec_cast<{dt}>({src})"
                    if lguard is None:
                        cg.emit(f"{reg}[{q}] = {vec};")
                        continue
                    first = cg.expr(lguard)
                    with cg.names.bound(vars_[-1], f"({cg.names[vars_[-1]]} + {V - 1})"):
                        last = cg.expr(lguard)
                    cg.emit(f"if (({first}) && ({last})) {reg}[{q}] = {vec};")
                    cg.emit("else {")
                    u = cg.names.fresh("tl_u")
                    cg.emit(f"  for (int {u} = 0; {u} < {V}; ++{u}) "
                            f"{reg}[{q}].v[{u}] = {_element(cg, vars_, body, u)};")
                    cg.emit("}")


_RAW = {16: "uint4", 8: "uint2", 4: "unsigned int", 2: "unsigned short"}


def _raw_type(body, V):
    """The integer vector type that carries a copy's V elements when the copy only moves
    bits (no guard, no conversion): clang keeps those in registers, where an unguarded
    array of tl::vec structs went to private (scratch) memory. None otherwise."""
    _, store, lguard, load, cast = VC._parts(body)
    if lguard is not None or (cast is not None and ctype(cast) != ctype(load.buffer.dtype)):
        return None
    return _RAW.get(V * store.buffer.dtype.itemsize)


def _element(cg, vars_, body, u):
    with cg.names.bound(vars_[-1], f"({cg.names[vars_[-1]]} + {u})"):
        return cg.expr(body.value)


def emit(cg, loop, planned):
    copies, rest = planned
    k = cg.names.name(loop.var, loop.var.name)
    lo, ext = cg.expr(loop.min), cg.expr(loop.extent)
    regs = []
    cg.emit(f"// T.Pipelined: register double-buffering of {len(copies)} tile copies")
    for (st, vars_, exts, body, V, per) in copies:
        r = cg.names.fresh("tl_pf")
        regs.append(r)
        cg.emit(f"{_raw_type(body, V) or f'tl::vec<{ctype(body.buffer.dtype)}, {V}>'} {r}[{per}];")
    cg.emit(f"if ({ext} > 0) {{")
    cg.ind += 1
    _emit_loads(cg, copies, regs, loop.var, f"({lo})")
    cg.ind -= 1
    cg.emit("}")

    def stores():
        for (st, vars_, exts, body, V, per), reg in zip(copies, regs):
            def one(st=st, vars_=vars_, exts=exts, body=body, V=V, per=per, reg=reg):
                for q in range(per):
                    with _bind_vector(cg, vars_, exts, V, f"tl_tid + {q * cg.plan.threads}"):
                        dst = f"*({_raw_type(body, V) or f'tl::vec<{ctype(body.buffer.dtype)}, {V}>'}*)&{cg.elem(body.buffer, body.indices)}"
                        cg.emit(f"{dst} = {reg}[{q}];")
            cg.block_leaf(st, one)

    def body():
        cg.emit(f"for (int {k} = {lo}; {k} < {lo} + {ext}; ++{k}) {{" if lo != "0" else
                f"for (int {k} = 0; {k} < {ext}; ++{k}) {{")
        cg.ind += 1
        stores()
        cg.emit(f"if ({k} + 1 < {lo} + {ext}) {{   // the next tiles, in flight during the compute")
        cg.ind += 1
        _emit_loads(cg, copies, regs, loop.var, f"({k} + 1)")
        cg.ind -= 1
        cg.emit("}")
        for st in rest:
            cg.stmt(st)
        cg.ind -= 1
        cg.emit("}")
    cg.barriers.loop(loop, body)
