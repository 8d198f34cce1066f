"""`T.reduce_*` on CUDA: one warp per output element; lanes stride over the reduced
dimension, then combine with butterfly shuffles (include/tl_cuda/reduce.h). The
accumulator's dtype is the reference lowering's (`accumulator_dtype`: float32 for sums
of 16-bit floats, else the destination's)."""
from __future__ import annotations

from dataclasses import dataclass

from tilelang.ir import expr as E
from tilelang.arith.simplify import simplify
from tilelang.transform.lower_tile_ops import _reduce_init, reduce_indices, accumulator_dtype

_WARP_OP = {"sum": "tl::SumOp", "abssum": "tl::SumOp", "max": "tl::MaxOp", "absmax": "tl::MaxOp",
            "min": "tl::MinOp", "bitand": "tl::BitAndOp", "bitor": "tl::BitOrOp", "bitxor": "tl::BitXorOp"}


def warp_op(kind, nan=False):
    """The combine functor of reduce.h for a reduction kind (NaN-propagating max/min when
    `nan`, T.reduce_max(..., nan_propagate=True))."""
    op = _WARP_OP[kind]
    return op + "Nan" if nan and op in ("tl::MaxOp", "tl::MinOp") else op


def combine(kind, acc, x, nan=False):
    """C++ for combining accumulator `acc` with element `x` (strings)."""
    mx = "tl::max_nan" if nan else "tl::max"
    if kind in ("sum",):
        return f"({acc} + {x})"
    if kind == "abssum":
        return f"({acc} + tl::max({x}, -{x}))"
    if kind == "absmax":
        return f"{mx}({acc}, tl::max({x}, -{x}))"
    if kind in ("max", "min"):
        return f"tl::{kind}{'_nan' if nan else ''}({acc}, {x})"
    return f"({acc} {dict(bitand='&', bitor='|', bitxor='^')[kind]} {x})"


def reduce_parts(cg, op):
    """What every reduction emitter needs: the accumulator's dtype and C type, the C names
    of source and destination, the identity, whether the destination is cleared, and how
    partial results combine (abs-sum partials add, abs-max partials max)."""
    from types import SimpleNamespace
    from tilelang.backend.cuda.emit.expr import ctype, cast_str
    dt = op.dst.buffer.dtype
    adt = accumulator_dtype(op.kind, dt)
    return SimpleNamespace(
        dt=adt, ct=ctype(adt), src=cg.buf_name(op.src.buffer), dst=cg.buf_name(op.dst.buffer),
        init=cg.expr(_reduce_init(op.kind, adt)),
        clear=op.clear if isinstance(op.clear, bool) else bool(E.const_int_value(op.clear)),
        cross={"abssum": "sum", "absmax": "max"}.get(op.kind, op.kind),
        nan=op.nan_propagate and dt.is_float,
        # the destination element as an accumulator value, and an accumulator value stored
        load=lambda c: cast_str(dt, adt, c), store=lambda c: cast_str(adt, dt, c))


ROUND_BYTES = 32768   # shared scratch per phase of one cross-warp round of a tile reduction


def round_rows(nwarps, rows, itemsize):
    """Rows a cross-warp round of a register-tile reduction combines: all of them unless
    their partials (one per warp) exceed ROUND_BYTES (tiles too large for shared memory,
    kept in registers spilling to local memory)."""
    return min(rows, max(1, ROUND_BYTES // (nwarps * max(4, itemsize))))


def barrier(cg):
    """The barrier of the threads running the code emitted now (KernelCodegen.sync:
    __syncthreads(), or the named barrier of a warp-specialized thread range), as text.
    It orders the reduction scratch, which only ordinary loads and stores touch: no
    fence toward the async proxy (a MEMBAR.ALL.CTA in the SASS of wgmma kernels)."""
    n = len(cg.lines)
    cg.sync(fence=False)
    out = " ".join(ln.strip() for ln in cg.lines[n:])
    del cg.lines[n:]
    return out


def scratch_lines(cg, ct):
    """The shared scratch of cross-warp reductions, alternating between two phases so
    that one barrier per reduction suffices (plan.py sizes it)."""
    return [f"  {ct}* tl_red = reinterpret_cast<{ct}*>(tl_smem + {cg.plan.red_offset} + "
            f"tl_rphase * {cg.plan.red_phase_bytes});",
            "  tl_rphase ^= 1;"]


def warp_batch(op):
    """Rows one warp reduces together (T.reduce_*(..., batch=B)): B when a power of two
    up to 32, else 1."""
    b = getattr(op, "batch", 1) or 1
    return b if 1 < b <= 32 and b & (b - 1) == 0 else 1


def lane_group(op):
    """Lanes per row when the reduced extent n is a constant of at most 16: the next power
    of two G >= n, so that a warp reduces 32 / G rows at once with log2(G) shuffles each
    (tl::group_reduce) instead of one row with 5; else 0 (a whole warp per row)."""
    n = E.const_int_value(op.src.extents[op.dim])
    if n is None or n > 16 or n < 1:
        return 0
    G = 1
    while G < n:
        G *= 2
    return G


# The reduction forms, chosen by `reduce_form` for each block-level T.reduce_* (the pass
# plan_reduce_forms records it on the op as the annotation `reduce_form`, printed after
# the op in the IR; emit/kernel.py `s_Reduce` prints the form it finds there).
REDUCE_FORM = "reduce_form"
_REDUCE_TITLES = {
    "per_thread": "per thread (both operands in each thread's own registers)",
    "column_groups": "column groups of the accumulator (slots, then its quad's shuffles)",
    "registers": "accumulator rows (slots, then its quad's shuffles)",
    "thread_tile": "thread-tile rows (slots, then warp shuffles and a shared round across warps)",
    "warp": "warp shuffles",
    "loop": "its loop (the block is not whole warps)",
}


@dataclass(frozen=True)
class ReduceForm:
    kind: str       # a key of _REDUCE_TITLES
    rows: int = 1   # warp: rows one warp reduces together (T.reduce_*(..., batch=B), `warp_batch`)
    lanes: int = 0  # warp: lanes a row on groups of lanes (`lane_group`), 0: a whole warp a row

    def __str__(self):
        s = _REDUCE_TITLES[self.kind]
        if self.lanes:
            s += f", a row on {self.lanes} lanes ({32 // self.lanes} rows a warp at once)"
        elif self.rows > 1:
            s += f", {self.rows} rows a warp together (tl::warp_reduce_rows)"
        elif self.kind == "warp":
            s += ", a row a warp"
        return s


PER_THREAD = ("local", "var")


def per_thread(k, op):
    """Both operands private to each thread (placements "local"/"var"): ops/local_reduce.py."""
    ps = [k.placement(op.src.buffer), k.placement(op.dst.buffer)]
    return all(p is not None and p.kind in PER_THREAD for p in ps)


def reduce_form(k, op) -> ReduceForm:
    """How block-level reduction `op` runs, from where its operands live (`k`: the kernel
    plan's placements and thread count, as the code generator or a plan pass sees them):
    both private to each thread; a view splitting an accumulator's columns into groups
    (layout/fragment.py GroupReduce); an accumulator or a thread tile in registers; else
    over shared/global memory, by warps, or, on a block that is not whole warps, as its
    reference loop (plan/copy_forms.py puts that loop in its place)."""
    p = k.placement(op.src.buffer)
    kind = getattr(p, "kind", None)
    if per_thread(k, op):
        return ReduceForm("per_thread")
    if kind not in ("acc", "tile") and k.plan.nthreads % 32:
        return ReduceForm("loop")
    if kind == "view" and k.placement(op.src.buffer.alias_of).kind == "acc":
        return ReduceForm("column_groups")
    if kind == "acc":
        return ReduceForm("registers")
    if kind == "tile":
        return ReduceForm("thread_tile")
    B = warp_batch(op)
    return ReduceForm("warp", rows=B, lanes=lane_group(op) if B == 1 else 0)


def emit_warp_reduce(cg, op, form):
    """Lines of C++ for a Reduce whose operands live in shared/global memory: each warp
    reduces one row at a time, or B rows together with `batch=B`
    (tl::warp_reduce_rows: B - 1 + log2(32 / B) shuffles instead of 5 B), or, rows of at
    most 16 elements, 32 / G rows at once on groups of G lanes (`lane_group`: a 4 x 4
    Sinkhorn matrix's row sums in one pass of 2 shuffles, was 4 passes of 5): `form`, the
    ReduceForm plan_reduce_forms recorded, says which."""
    from tilelang.backend.cuda.emit.expr import cast_str
    nd = len(op.src.extents)
    ovars = [E.Var(f"ro{k}") for k in range(nd - 1)]
    r = E.Var("rr")
    sidx, didx, oexts = reduce_indices(op, ovars, r)
    P = reduce_parts(cg, op)
    outer = E.IntImm(1)
    for e in oexts:
        outer = simplify(E.binop("*", outer, e))
    nw = cg.plan.nthreads // 32
    B = form.rows
    names = [cg.bind(v) for v in ovars]

    def unflatten(pad):   # the outer indices of row tl_o
        out, rem = [], "tl_o"
        for k in reversed(range(len(ovars))):
            ext = cg.expr(oexts[k])
            out.append(pad + (f"const int {names[k]} = ({rem}) % ({ext});" if k else f"const int {names[k]} = {rem};"))
            if k:
                rem = f"(({rem}) / ({ext}))"
        return out
    rname = cg.bind(r)
    ct, nan, n_out = P.ct, P.nan, cg.expr(outer)
    x = cast_str(op.src.buffer.dtype, P.dt, cg.expr(E.BufferLoad(op.src.buffer, sidx)))
    accumulate = [f"for (int {rname} = tl_lane; {rname} < {cg.expr(op.src.extents[op.dim])}; {rname} += 32) {{",
                  f"  const {ct} tl_x = {x};",
                  f"  tl_acc = {combine(op.kind, 'tl_acc', 'tl_x', nan)};",
                  "}"]
    dst = cg.expr(E.BufferLoad(op.dst.buffer, didx))
    val = P.store("tl_acc" if P.clear else combine(P.cross, P.load(dst), "tl_acc", nan))
    lines = ["{", "  const int tl_lane = tl_tid & 31;"]
    G = form.lanes
    if G:   # row tl_o0 + lane / G on lanes of group lane / G; the loop is uniform over the warp
        R = 32 // G
        pos = f"{cg.expr(op.src.extents[op.dim])}"
        one_pass = E.const_int_value(outer) is not None and E.const_int_value(outer) <= nw * R
        # one pass covers every row: no loop (whose warp-uniform trip count ptxas cannot see)
        head = ["  {", f"    const int tl_o0 = (tl_tid >> 5) * {R};"] if one_pass else \
            [f"  for (int tl_o0 = (tl_tid >> 5) * {R}; tl_o0 < {n_out}; tl_o0 += {nw * R}) {{"]
        lines += head + [f"    const int tl_o = tl_o0 + tl_lane / {G};", f"    {ct} tl_acc = {P.init};",
                  f"    if (tl_o < {n_out}) {{"] + unflatten("      ") + [
                  f"      const int {rname} = tl_lane & {G - 1};",
                  f"      if ({rname} < {pos}) tl_acc = {combine(op.kind, 'tl_acc', x, nan)};", "    }",
                  f"    tl_acc = tl::group_reduce<{G}>(tl_acc, {warp_op(op.kind, nan)}());",
                  f"    if ((tl_lane & {G - 1}) == 0 && tl_o < {n_out}) {{"] + unflatten("      ") + [
                  f"      {dst} = {val};", "    }", "  }", "}"]
        return lines
    if B == 1:
        lines += [f"  for (int tl_o = tl_tid >> 5; tl_o < {n_out}; tl_o += {nw}) {{"] + unflatten("    ") + [
            f"    {ct} tl_acc = {P.init};"] + ["    " + ln for ln in accumulate] + [
            f"    tl_acc = tl::warp_reduce(tl_acc, {warp_op(op.kind, nan)}());",
            f"    if (tl_lane == 0) {dst} = {val};", "  }", "}"]
        return lines
    lines += [f"  for (int tl_o0 = (tl_tid >> 5) * {B}; tl_o0 < {n_out}; tl_o0 += {nw * B}) {{",
              f"    {ct} tl_rows[{B}];", "    #pragma unroll", f"    for (int tl_b = 0; tl_b < {B}; ++tl_b) {{",
              "      const int tl_o = tl_o0 + tl_b;", f"      {ct} tl_acc = {P.init};",
              f"      if (tl_o < {n_out}) {{"] + unflatten("        ") + ["        " + ln for ln in accumulate] + [
              "      }", "      tl_rows[tl_b] = tl_acc;", "    }", "    int tl_row;",
              f"    {ct} tl_acc = tl::warp_reduce_rows<{B}>(tl_rows, {warp_op(op.kind, nan)}(), tl_lane, tl_row);",
              "    const int tl_o = tl_o0 + tl_row;",
              f"    if ((tl_lane & {32 // B - 1}) == 0 && tl_o < {n_out}) {{"] + unflatten("      ") + [
              f"      {dst} = {val};", "    }", "  }", "}"]
    return lines


def orders_block(plan, op):
    """Whether the Reduce `op` is lowered with a barrier of every thread running it
    (`emit_register_reduce` on a register accumulator whose rows span several warps: the
    warps exchange partials through the shared scratch), which the barrier planner may then
    count as one (plan/sync.py): every shared or global access of `op` itself (a destination
    in shared memory) comes after that barrier."""
    p = plan.placements.get(id(op.src.buffer))
    return p is not None and p.kind == "acc" and getattr(p.acc, "partial_warps", getattr(p.acc, "WN", 1)) > 1


def emit_register_reduce(cg, op, L):
    """Lines of C++ for a dim-1 reduction of a register accumulator (AccLayout L) into
    its row fragment (layout/fragment.py checked the shapes): every thread combines
    the slots of each row it holds, then the quad that shares the row exchanges
    partial results (xor 1, 2), so every holder of the row ends with the result."""
    from tilelang.backend.cuda.emit.expr import cast_str
    P = reduce_parts(cg, op)
    dt, ct, src, dst, init, clear, cross, nan = P.dt, P.ct, P.src, P.dst, P.init, P.clear, P.cross, P.nan
    lt = L.layout()
    x = cast_str(op.src.buffer.dtype, dt, f"{src}[tl_r]")
    val = P.store("tl_acc" if clear else combine(cross, P.load(f"{dst}[tl_s]"), "tl_acc", nan))
    R = L.row_layout()
    rl = R.layout()
    WN = getattr(L, "partial_warps", L.WN)   # warps holding partials of a row (not copies)
    in_regs = cg.placement(op.dst.buffer).kind == "row"
    if not in_regs:   # a vector in shared memory: one holder of each row stores it
        d = f"{dst}[{rl}::row(tl_tid, tl_s)]"
        val = P.store("tl_acc" if clear else combine(cross, P.load(d), "tl_acc", nan))
        lead = "(tl_tid & 3) == 0" + (f" && {L.warp_col_expr('tl_tid')} == 0" if L.WN > 1 else "")
        store = f"    if ({lead}) {d} = {val};"
    else:
        store = f"    {dst}[tl_s] = {val};"
    lines = ["{", "  #pragma unroll",
             f"  for (int tl_s = 0; tl_s < {R.regs}; ++tl_s) {{",
             f"    {ct} tl_acc = {init};",
             "    #pragma unroll",
             f"    for (int tl_r = 0; tl_r < {L.regs}; ++tl_r) {{",
             f"      if ({lt}::row_slot(tl_r) == tl_s) tl_acc = {combine(op.kind, 'tl_acc', x, nan)};",
             "    }",
             f"    tl_acc = tl::quad_reduce(tl_acc, {warp_op(op.kind, nan)}());"]
    if WN == 1:
        return lines + [store, "  }", "}"]
    # WN warps hold different columns of the same rows: quad leaders publish their warp's
    # partial per row in the shared scratch (two phases, plan.py), then every holder of a
    # row combines the WN partials
    return lines[:1] + scratch_lines(cg, ct) + [
        f"  const int tl_wc = {L.warp_col_expr('tl_tid')};"] + lines[1:] + [
        f"    if ((tl_tid & 3) == 0) tl_red[{rl}::row(tl_tid, tl_s) * {WN} + tl_wc] = tl_acc;",
        "  }", "  " + barrier(cg), "  #pragma unroll",
        f"  for (int tl_s = 0; tl_s < {R.regs}; ++tl_s) {{",
        f"    const int tl_row = {rl}::row(tl_tid, tl_s) * {WN};",
        f"    {ct} tl_acc = tl_red[tl_row];",
        "    #pragma unroll",
        f"    for (int tl_w = 1; tl_w < {WN}; ++tl_w) tl_acc = {warp_op(op.kind, nan)}()(tl_acc, tl_red[tl_row + tl_w]);",
        store,
        "  }", "}"]


def emit_group_reduce(cg, op, G, base):
    """Lines of C++ for a reduction over column groups of a register accumulator
    (layout/fragment.py GroupReduce G; `base` the accumulator the reduced view splits):
    for each of its rows and each group of its warp's columns a thread combines its slots
    of the group, the quad exchanges partials (xor 1, 2), and the quad leader stores
    dst[row, group] in shared memory."""
    from tilelang.backend.cuda.emit.expr import cast_str
    P = reduce_parts(cg, op)
    L = G.L
    lt, R = L.layout(), L.row_layout()
    x = cast_str(base.dtype, P.dt, f"{cg.buf_name(base)}[tl_r]")
    row, col = E.Var("tl_grow"), E.Var("tl_gcol")
    rname, cname = cg.bind(row), cg.bind(col)
    dst = cg.expr(E.BufferLoad(op.dst.buffer, [row, col]))
    val = P.store("tl_acc" if P.clear else combine(P.cross, P.load(dst), "tl_acc", P.nan))
    return ["{", "  #pragma unroll",
            f"  for (int tl_s = 0; tl_s < {R.regs}; ++tl_s) {{",
            f"    const int {rname} = {R.layout()}::row(tl_tid, tl_s);",
            "    #pragma unroll",
            f"    for (int tl_g = 0; tl_g < {G.groups_per_warp}; ++tl_g) {{",
            f"      {P.ct} tl_acc = {P.init};",
            "      #pragma unroll",
            f"      for (int tl_r = 0; tl_r < {L.regs}; ++tl_r) {{",
            f"        if ({lt}::row_slot(tl_r) == tl_s && {lt}::strip_col(tl_r) / {G.B} == tl_g) "
            f"tl_acc = {combine(op.kind, 'tl_acc', x, P.nan)};",
            "      }",
            f"      tl_acc = tl::quad_reduce(tl_acc, {warp_op(op.kind, P.nan)}());",
            f"      const int {cname} = ({L.warp_col_expr('tl_tid')}) * {G.groups_per_warp} + tl_g;",
            f"      if ((tl_tid & 3) == 0) {dst} = {val};",
            "    }", "  }", "}"]
