"""T.reduce_* on the HIP backend. Each output element is owned by a group of G lanes of
one wavefront (G a power of two <= 64): the lanes stride over the reduced dimension,
then combine their partials with `__shfl_xor` butterflies inside the wavefront
(offsets G/2 ... 1), and the group's first lane stores the result. Every lane runs the
same number of rounds, so all 64 lanes take part in each shuffle. A source kept in
registers is reduced along its rows in registers (`_emit_rows_from_registers`), else
first staged to LDS in its MFMA layout."""
from __future__ import annotations

import math

from tilelang.ir import expr as E
from tilelang.ir.buffer import Buffer
from tilelang.ir.errors import LoweringError
from tilelang.transform.lower_tile_ops import reduce_indices, accumulator_dtype, _combine, _reduce_init
from tilelang.backend.hip.expr import ctype
from tilelang.backend.hip import parallel as _parallel
from tilelang.layout.mfma import WAVE

_MERGE = {"abssum": "sum", "absmax": "max"}   # partials are already absolute values


def group_size(extent, threads):
    g = 1 << max(0, math.ceil(math.log2(max(1, extent))))
    t = 1 << int(math.log2(max(1, threads)))
    return max(1, min(64, g, t))


def emit_reduce(cg, op):
    src, dst = op.src, op.dst
    if cg.plan.in_registers(dst.buffer) and not (cg.plan.in_registers(src.buffer) and _rows_in_registers(cg, op)):
        raise LoweringError(f"T.reduce into the gemm accumulator `{dst.buffer.name}`: the HIP backend reduces into "
                            f"fragments that are not gemm accumulators", span=op.span)
    nd = len(src.extents)
    ext = E.const_int_value(src.extents[op.dim])
    if ext is None:
        raise LoweringError("T.reduce over a dimension of dynamic size is not supported by the HIP backend",
                            span=op.span)
    if cg.plan.in_registers(src.buffer) and _rows_in_registers(cg, op):
        _emit_rows_from_registers(cg, op)
        return
    cg.emit(f"{{   // T.reduce_{op.kind}({src.buffer.name} -> {dst.buffer.name}, dim={op.dim})")
    cg.ind += 1
    staged = None
    if cg.plan.in_registers(src.buffer):
        staged = _stage(cg, src.buffer, op)
    ovars = [E.Var(f"tl_o{k}") for k in range(nd - 1)]
    r = E.Var("tl_ri")
    sidx, didx, outer = reduce_indices(op, ovars, r)
    nout = 1
    for x in outer:
        v = E.const_int_value(x)
        if v is None:
            raise LoweringError("T.reduce with a dynamic output size is not supported by the HIP backend",
                                span=op.span)
        nout *= v
    G = group_size(ext, cg.plan.threads)
    groups = cg.plan.threads // G
    dt = dst.buffer.dtype
    adt = accumulator_dtype(op.kind, dt)
    acc_b, oth_b = Buffer("tl_racc", (1,), adt, "local"), Buffer("tl_rother", (1,), adt, "local")
    acc, oth = (E.BufferLoad(b, [E.IntImm(0)]) for b in (acc_b, oth_b))
    acc_n, oth_n = cg.names.new(acc_b, "tl_racc", True), cg.names.new(oth_b, "tl_rother", True)
    o, ob, gl = cg.names.fresh("tl_o"), cg.names.fresh("tl_ob"), cg.names.fresh("tl_gl")
    cg.emit(f"const int {gl} = tl_tid % {G};")
    cg.emit(f"for (int {ob} = 0; {ob} < {nout}; {ob} += {groups}) {{")
    cg.ind += 1
    cg.emit(f"const int {o} = {ob} + tl_tid / {G};")
    cg.emit(f"{ctype(adt)} {acc_n}[1] = {{{cg.expr(_reduce_init(op.kind, adt))}}}, {oth_n}[1];")
    binds, rest = [], o
    for k in range(len(ovars) - 1, -1, -1):
        ext_k = E.const_int_value(outer[k])
        binds.append((ovars[k], f"(({rest}) % {ext_k})" if k else f"({rest})"))
        rest = f"(({rest}) / {ext_k})"
    ri = cg.names.fresh("tl_ri")
    with cg.names.bound_all(binds + [(r, ri)]):
        cg.emit(f"if ({o} < {nout}) {{")
        cg.ind += 1
        x = E.cast(E.BufferLoad(src.buffer, sidx), adt)
        cg.emit(f"for (int {ri} = {gl}; {ri} < {ext}; {ri} += {G}) "
                f"{acc_n}[0] = {cg.expr(_combine(op.kind, acc, x, op.nan_propagate))};")
        cg.ind -= 1
        cg.emit("}")
        merge = _MERGE.get(op.kind, op.kind)
        off = G // 2
        while off >= 1:
            cg.emit(f"{oth_n}[0] = tl::shfl_xor({acc_n}[0], {off});")
            cg.emit(f"{acc_n}[0] = {cg.expr(_combine(merge, acc, oth, op.nan_propagate))};")
            off //= 2
        clear = op.clear if isinstance(op.clear, bool) else bool(E.const_int_value(op.clear))
        d = E.BufferLoad(dst.buffer, didx)
        val = E.cast(acc, dt) if clear else E.cast(_combine(merge, E.cast(d, adt), acc, op.nan_propagate), dt)
        lhs = cg.elem(dst.buffer, didx, op.span)
        cg.emit(f"if ({o} < {nout} && {gl} == 0) {lhs} = {cg.expr(val)};")
    cg.ind -= 1
    cg.emit("}")
    if staged is not None:
        cg.storage.pop(id(src.buffer), None)
    cg.ind -= 1
    cg.emit("}")


def _rows_in_registers(cg, op):
    """A row reduction (dim 1) of a whole register fragment into a fragment in LDS or a
    row vector in registers."""
    src = op.src
    dst = cg.plan.regs.get(id(op.dst.buffer))
    return op.dim == 1 and len(src.extents) == 2 and all(E.const_int_value(x) == 0 for x in src.starts) and \
        [E.const_int_value(x) for x in src.extents] == [E.const_int_value(d) for d in src.buffer.shape] and \
        cg.plan.regs[id(src.buffer)].kind != "rows" and (cg.plan.in_lds(op.dst.buffer) or
                                                        (dst is not None and dst.kind == "rows"))


def _emit_rows_from_registers(cg, op):
    """Row reduction of a register fragment without leaving registers. Each lane holds
    part of one row per tile row mt (the transposed MFMA layout): it combines its items
    across its N tiles, the `groups` lanes holding the row (lane % m equal) combine with
    `__shfl_xor` (offsets m .. 32), so every one of them has the row's value, and the WN
    waves sharing a row through a small LDS array that every lane reads back. A row
    vector in registers takes the value in every lane holding the row; an LDS
    destination is written by the first of them."""
    from tilelang.backend.hip.parallel import _c, slot_lvalue, replica_zero
    src, dst = op.src, op.dst
    tl = cg.plan.regs[id(src.buffer)].tiling
    s = tl.shape
    dt = dst.buffer.dtype
    adt = accumulator_dtype(op.kind, dt)
    merge = _MERGE.get(op.kind, op.kind)
    clear = op.clear if isinstance(op.clear, bool) else bool(E.const_int_value(op.clear))
    to_regs = cg.plan.in_registers(dst.buffer)
    cg.emit(f"{{   // T.reduce_{op.kind}({src.buffer.name} -> {dst.buffer.name}, dim=1) in registers: "
            f"__shfl_xor over the {s.groups} lanes holding a row" + (f", LDS across {tl.WN} waves" if tl.WN > 1 else ""))
    cg.ind += 1
    red = None
    if tl.WN > 1:
        key = ("rows", tl.WN * tl.M, adt.name)
        red = cg.staging.get(key)
        if red is None:
            red = cg.names.fresh("tl_rows")
            cg.staging[key] = red
            cg.top.append(f"__shared__ {ctype(adt)} {red}[{tl.WN * tl.M}];   // row partials of each wave")
    acc_b, oth_b = Buffer("tl_racc", (1,), adt, "local"), Buffer("tl_rother", (1,), adt, "local")
    acc, oth = (E.BufferLoad(b, [E.IntImm(0)]) for b in (acc_b, oth_b))
    acc_n, oth_n = cg.names.new(acc_b, "tl_racc", True), cg.names.new(oth_b, "tl_rother", True)
    mt, r, nt, wn = (cg.names.fresh(x) for x in ("tl_mt", "tl_r", "tl_nt", "tl_wn"))
    iv, jv = E.Var("tl_i"), E.Var("tl_j")
    ov = E.Var("tl_ov")
    _, didx, _ = reduce_indices(op, [ov], E.Var("tl_unused"))
    if red is not None:
        cg.emit(f"const int {wn} = (tl_tid / 64) / {tl.WM};")
    cg.emit("#pragma unroll")
    cg.emit(f"for (int {mt} = 0; {mt} < {tl.MT}; ++{mt}) {{")
    cg.ind += 1
    row = _c(tl.row(E.Var("tl_tid"), E.Var(mt)))
    cg.emit(f"{ctype(adt)} {acc_n}[1] = {{{cg.expr(_reduce_init(op.kind, adt))}}}, {oth_n}[1];")
    for v, ext in ((nt, tl.NT), (r, s.c_regs)):
        cg.emit("#pragma unroll")
        cg.emit(f"for (int {v} = 0; {v} < {ext}; ++{v}) {{")
        cg.ind += 1
    saved = dict(cg.slots)
    cg.slots[id(src.buffer)] = ([iv, jv], slot_lvalue(cg, src.buffer, f"{mt} * {tl.NT} + {nt}", r))
    try:
        x = E.cast(E.BufferLoad(src.buffer, [iv, jv]), adt)
        cg.emit(f"{acc_n}[0] = {cg.expr(_combine(op.kind, acc, x, op.nan_propagate))};")
    finally:
        cg.slots = saved
    for _ in range(2):
        cg.ind -= 1
        cg.emit("}")
    off = s.m
    while off < WAVE:
        cg.emit(f"{oth_n}[0] = tl::shfl_xor({acc_n}[0], {off});")
        cg.emit(f"{acc_n}[0] = {cg.expr(_combine(merge, acc, oth, op.nan_propagate))};")
        off *= 2

    def store(value_c, row_c, slot_mt):
        with cg.names.bound(ov, row_c), cg.names.bound(acc_b, value_c):
            if to_regs:
                lhs = f"{cg.bname(dst.buffer)}[{slot_mt}]"
                d = E.Var("tl_dold", dt)
                with cg.names.bound(d, lhs):
                    val = E.cast(acc, dt) if clear else \
                        E.cast(_combine(merge, E.cast(d, adt), acc, op.nan_propagate), dt)
                    return f"{lhs} = {cg.expr(val)};"
            d = E.BufferLoad(dst.buffer, didx)
            val = E.cast(acc, dt) if clear else E.cast(_combine(merge, E.cast(d, adt), acc, op.nan_propagate), dt)
            return f"if {replica_zero(tl)} {cg.elem(dst.buffer, didx, op.span)} = {cg.expr(val)};"
    if red is None:
        cg.emit(store(acc_n, row, mt))
    else:
        cg.emit(f"if (tl_tid % 64 < {s.m}) {red}[{wn} * {tl.M} + {row}] = {acc_n}[0];")
    cg.ind -= 1
    cg.emit("}")
    if red is not None:   # every lane combines the waves' partials of its rows
        cg.sync()
        cg.emit("#pragma unroll")
        cg.emit(f"for (int {mt} = 0; {mt} < {tl.MT}; ++{mt}) {{")
        cg.ind += 1
        cg.emit(f"{ctype(adt)} {acc_n}[1] = {{{red}[{row}]}}, {oth_n}[1];")
        for w in range(1, tl.WN):
            cg.emit(f"{oth_n}[0] = {red}[{w * tl.M} + {row}];")
            cg.emit(f"{acc_n}[0] = {cg.expr(_combine(merge, acc, oth, op.nan_propagate))};")
        cg.emit(store(acc_n, row, mt))
        cg.ind -= 1
        cg.emit("}")
    cg.ind -= 1
    cg.emit("}")


def _stage(cg, buf, op):
    """Write the register fragment `buf` to an LDS copy of its logical shape (one per
    fragment, declared at the top of the kernel and shared by its reductions); the reduce
    reads the copy."""
    copy = cg.staging.get(id(buf))
    if copy is None:
        copy = Buffer(f"{buf.name}_lds", buf.shape, buf.dtype, "shared")
        cg.staging[id(buf)] = copy
        cg.plan.buffers[id(copy)] = copy
        name = cg.names.new(copy, f"tl_{buf.name}_lds", True)
        cg.top.append(f"__shared__ __attribute__((aligned(16))) {ctype(buf.dtype)} {name}[{cg.plan.numel(copy)}];"
                      f"   // {buf.name} staged for reductions")
    vars_ = [E.Var(f"tl_s{k}") for k in range(len(buf.shape))]
    from tilelang.ir import stmt as S
    store = S.BufferStore(copy, E.BufferLoad(buf, vars_), vars_)
    loop = store
    for v, ext in reversed(list(zip(vars_, buf.shape))):
        loop = S.For(v, E.IntImm(0), ext, S.PARALLEL, loop)
    loop.span = op.span
    _parallel.emit_nest(cg, loop)
    cg.sync()
    cg.storage[id(buf)] = copy
    return copy
