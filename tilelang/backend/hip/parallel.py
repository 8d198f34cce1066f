"""A block-level T.Parallel nest on the HIP backend: which thread runs which iteration.

- The nest touches a fragment kept in registers (plan.py): its MFMA layout decides (each
  thread runs the iterations whose element it holds, slot by slot, in fully unrolled
  loops so that every register index is a constant); a nest over row vectors only runs
  each thread's rows, and one replica of a row stores it to memory.
- Otherwise: the flattened iterations round-robin over the block's threads
  (`tl_e = tl_tid; tl_e < total; tl_e += threads`), consecutive threads on consecutive
  innermost indices (coalesced global accesses)."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.errors import LoweringError
from tilelang.ir.visitor import walk
from tilelang.layout.mfma import WAVE


def nest_of(loop):
    """(vars, extents, body) of the perfectly nested T.Parallel loops starting at `loop`."""
    vars_, exts, body = [], [], loop
    while isinstance(body, S.For) and body.kind == S.PARALLEL:
        if E.const_int_value(body.min) != 0 or body.step is not None:
            return vars_, exts, body   # offset / strided: the loops below stay serial per thread
        vars_.append(body.var)
        exts.append(body.extent)
        body = body.body
    return vars_, exts, body


def register_fragments(cg, body):
    out = []

    def f(n):
        if isinstance(n, (E.BufferLoad, S.BufferStore)) and cg.plan.in_registers(n.buffer) \
                and all(n.buffer is not b for b in out):
            out.append(n.buffer)
    walk(body, f)
    return out


def emit_nest(cg, loop):
    vars_, exts, body = nest_of(loop)
    if not vars_:   # a parallel loop with an offset: every thread's share of the range, serially
        vars_, exts, body = [loop.var], [loop.extent], loop.body
    frags = register_fragments(cg, body)
    cg.in_thread = True
    try:
        if frags:
            _by_layout(cg, loop, vars_, exts, body, frags)
        else:
            _round_robin(cg, loop, vars_, exts, body)
    finally:
        cg.in_thread = False


def _round_robin(cg, loop, vars_, exts, body):
    from tilelang.backend.hip.vector_copy import plan_vector, emit_vector
    V = plan_vector(cg, vars_, exts, body)
    if V is not None:
        emit_vector(cg, vars_, exts, body, V)
        return
    total = exts[0]
    for x in exts[1:]:
        total = total * x
    n = cg.plan.threads
    e = cg.names.fresh("tl_e")
    cg.emit(f"for (int {e} = tl_tid; {e} < {cg.expr(total)}; {e} += {n}) {{")
    cg.ind += 1
    rest = e
    for k in range(len(vars_) - 1, -1, -1):
        v = cg.names.name(vars_[k], vars_[k].name)
        ext = cg.expr(exts[k])
        if k == 0:
            cg.emit(f"const int {v} = {rest};")
        else:
            cg.emit(f"const int {v} = {rest} % {ext};")
            rest = f"({rest} / {ext})"
    cg.stmt(body)
    cg.ind -= 1
    cg.emit("}")


def slot_lvalue(cg, b, q, r):
    """The C lvalue of register fragment `b`'s item r of tile q (`q`, `r`: C text)."""
    lay = cg.plan.regs[id(b)]
    c = lay.tiling.shape.c_regs
    if lay.kind == "acc":
        return f"{cg.bname(b)}[{q}][{r}]"
    return f"{cg.bname(b)}[({q}) * {c} + {r}]"


def replica_zero(tl):
    """C condition: this thread is the first of those holding its rows (lane group 0 of
    wave column 0) -- the one that stores a row value to memory."""
    return f"(tl_tid % {WAVE} < {tl.shape.m} && (tl_tid / {WAVE}) < {tl.WM})"


def _by_layout(cg, loop, vars_, exts, body, frags):
    lays = {id(f): cg.plan.regs[id(f)] for f in frags}
    two_d = [f for f in frags if lays[id(f)].kind != "rows"]
    if not two_d:
        _by_rows(cg, loop, vars_, exts, body, frags)
        return
    driver = two_d[0]
    tl = lays[id(driver)].tiling
    for f in two_d[1:]:
        if lays[id(f)].tiling != tl:
            raise LoweringError(f"a T.Parallel loop over `{driver.name}` and `{f.name}`, register fragments with "
                                f"different MFMA layouts ({tl} / {lays[id(f)].tiling})", span=loop.span,
                                hint="split the loop, or copy one of them to a shared buffer")
    shape = [E.const_int_value(d) for d in driver.shape]
    if [E.const_int_value(x) for x in exts] != shape:
        raise LoweringError(f"a T.Parallel loop of extents {[str(x) for x in exts]} touches the gemm accumulator "
                            f"`{driver.name}` of shape {shape}; the HIP backend maps such loops onto the "
                            f"accumulator's MFMA layout, which needs the loop to cover it exactly", span=loop.span)
    mt, nt, r = (cg.names.fresh(x) for x in ("tl_mt", "tl_nt", "tl_r"))
    for v, ext in ((mt, tl.MT), (nt, tl.NT), (r, tl.shape.c_regs)):
        cg.emit("#pragma unroll")
        cg.emit(f"for (int {v} = 0; {v} < {ext}; ++{v}) {{")
        cg.ind += 1
    i, j = tl.logical(E.Var("tl_tid"), E.Var(mt), E.Var(nt), E.Var(r))
    vi, vj = (cg.names.name(v, v.name) for v in vars_)
    cg.emit(f"const int {vi} = {_c(i)};")
    cg.emit(f"const int {vj} = {_c(j)};")
    slot = {}
    for f in frags:
        if lays[id(f)].kind == "rows":
            slot[id(f)] = (vars_[:1], f"{cg.bname(f)}[{mt}]")
        else:
            slot[id(f)] = (vars_, slot_lvalue(cg, f, f"{mt} * {tl.NT} + {nt}", r))
    saved = dict(cg.slots)
    cg.slots.update(slot)
    try:
        cg.stmt(body)
    finally:
        cg.slots = saved
    for _ in range(3):
        cg.ind -= 1
        cg.emit("}")


def _by_rows(cg, loop, vars_, exts, body, frags):
    """A 1-D nest over row vectors: each thread updates the rows it holds (all replicas
    compute the same values); stores to memory come from one replica per row."""
    tl = cg.plan.regs[id(frags[0])].tiling
    if len(vars_) != 1 or E.const_int_value(exts[0]) != tl.M:
        raise LoweringError(f"a T.Parallel loop of extents {[str(x) for x in exts]} touches the row vector "
                            f"`{frags[0].name}` kept in registers ({tl.M} rows)", span=loop.span)
    mt = cg.names.fresh("tl_mt")
    cg.emit("#pragma unroll")
    cg.emit(f"for (int {mt} = 0; {mt} < {tl.MT}; ++{mt}) {{")
    cg.ind += 1
    vi = cg.names.name(vars_[0], vars_[0].name)
    cg.emit(f"const int {vi} = {_c(tl.row(E.Var('tl_tid'), E.Var(mt)))};")
    saved, guard = dict(cg.slots), cg.store_guard
    cg.slots.update({id(f): (vars_, f"{cg.bname(f)}[{mt}]") for f in frags})
    cg.store_guard = replica_zero(tl)
    try:
        cg.stmt(body)
    finally:
        cg.slots, cg.store_guard = saved, guard
    cg.ind -= 1
    cg.emit("}")


def _c(e):
    """A layout formula over the C names `tl_tid`, `tl_mt`, ... (non-negative ints) as C."""
    if isinstance(e, int):
        return str(e)
    if isinstance(e, E.IntImm):
        return str(e.value)
    if isinstance(e, E.Var):
        return e.name
    if isinstance(e, E.BinOp):
        op = {"//": "/"}.get(e.op, e.op)
        return f"({_c(e.a)} {op} {_c(e.b)})"
    raise TypeError(f"layout formula term {e!r}")
