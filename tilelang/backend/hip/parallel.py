"""A block-level T.Parallel nest on the HIP backend: which thread runs which iteration.

- The nest touches a gemm accumulator kept in registers: the accumulator's MFMA layout
  decides (each thread runs the iterations whose element it holds, slot by slot, in
  fully unrolled loops so that every register index is a constant).
- Otherwise: the flattened iterations round-robin over the block's threads
  (`tl_e = tl_tid; tl_e < total; tl_e += threads`), consecutive threads on consecutive
  innermost indices (coalesced global accesses)."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.errors import LoweringError
from tilelang.ir.visitor import walk


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


def _by_layout(cg, loop, vars_, exts, body, frags):
    driver = frags[0]
    tl = cg.plan.tilings[id(driver)]
    for f in frags[1:]:
        if cg.plan.tilings[id(f)] != tl:
            raise LoweringError(f"a T.Parallel loop over `{driver.name}` and `{f.name}`, gemm accumulators with "
                                f"different MFMA layouts ({tl} / {cg.plan.tilings[id(f)]})", span=loop.span,
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
    slot = {id(f): (vars_, f"{cg.bname(f)}[{mt} * {tl.NT} + {nt}][{r}]") for f in frags}
    saved = dict(cg.slots)
    cg.slots.update(slot)
    try:
        cg.stmt(body)
    finally:
        cg.slots = saved
    for _ in range(3):
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
