"""`T.reduce_*` of a per-thread array (`T.alloc_local`, or a fragment every thread keeps
whole) into a per-thread destination: every thread reduces its own elements; no other
thread takes part. The loops are unrolled so that the arrays stay in registers, and
16-bit elements combine two at a time (ops/reduce_pairs.py)."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.arith.simplify import simplify
from tilelang.transform.lower_tile_ops import reduce_indices

def emit_local_reduce(cg, op):
    from tilelang.backend.cuda.emit.expr import cast_str
    from tilelang.backend.cuda.ops.reduce import combine, reduce_parts
    from tilelang.backend.cuda.ops.reduce_pairs import pair_parts, pair_lines
    P = reduce_parts(cg, op)
    nd = len(op.src.extents)
    ovars = [E.Var(f"lo{k}") for k in range(nd - 1)]
    r, q = E.Var("lr"), E.Var("tl_q")
    sidx, didx, oexts = reduce_indices(op, ovars, r)
    lines = ["{"]
    depth = 1
    for v, ext in zip(ovars, oexts):
        name = cg.bind(v)
        lines += ["  " * depth + "#pragma unroll",
                  "  " * depth + f"for (int {name} = 0; {name} < {cg.expr(ext)}; ++{name}) {{"]
        depth += 1
    pad = "  " * depth
    n = E.const_int_value(op.src.extents[op.dim])
    pp = pair_parts(op, P, n)
    if pp is not None:
        cg.names.alias(q, "tl_q")

        def elem(j):
            at = reduce_indices(op, ovars, simplify(E.binop("+", E.binop("*", q, E.IntImm(2)), E.IntImm(j))))[0]
            return cg.expr(E.BufferLoad(op.src.buffer, at))
        lines += [pad + f"{P.ct} tl_acc;"] + [pad + ln for ln in pair_lines(pp, "tl_acc", "tl_p", n, elem)]
    else:
        rname = cg.bind(r)
        x = cast_str(op.src.buffer.dtype, P.dt, cg.expr(E.BufferLoad(op.src.buffer, sidx)))
        lines += [pad + f"{P.ct} tl_acc = {P.init};", pad + "#pragma unroll",
                  pad + f"for (int {rname} = 0; {rname} < {cg.expr(op.src.extents[op.dim])}; ++{rname}) "
                        f"tl_acc = {combine(op.kind, 'tl_acc', x, P.nan)};"]
    dst = cg.expr(E.BufferLoad(op.dst.buffer, didx))
    val = "tl_acc" if P.clear else combine(P.cross, P.load(dst), "tl_acc", P.nan)
    lines.append(pad + f"{dst} = {P.store(val)};")
    for d in range(depth - 1, 0, -1):
        lines.append("  " * d + "}")
    return lines + ["}"]
