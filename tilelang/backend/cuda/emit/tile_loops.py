"""CUDA C++ for T.Parallel loops and reductions over the thread-tile register layouts of
layout/tile.py. Every loop is fully unrolled over the slots a thread holds, so register
arrays are only ever indexed by constants:

- tile mode (a loop over the tile, or a 1-D loop over a one-row tile): chunk c of V
  elements starts at flat = (c * T + tid) * V; a copy between a register fragment and
  global/shared memory moves each chunk as one vector of up to 16 bytes (several for
  wider elements), with the bound check evaluated once per chunk; other bodies as
  plan/register_chunks.py recorded on the nest (two-lane conversions, vector atomics,
  shared loads hoisted to one vector a chunk) or element by element;
- rows / cols mode (a 1-D loop over the row or column fragments): each thread runs the
  rows / columns it holds (replicated over the threads that share them);
- a loop over one-element fragments only: every thread runs it on its own copy.

A reduction over the last dimension combines the thread's slots of each row, then the
lanes of the row with butterfly shuffles (every lane ends with the result); rows wider
than a warp exchange warp partials through shared memory (two alternating phases, one
barrier per reduction)."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.backend.cuda.emit.expr import ctype, cast_str
from tilelang.backend.cuda.layout.annotated import AnnotatedTile
from tilelang.backend.cuda.layout.tile import ThreadTile, TileRows, Scalar, column_owner
from tilelang.backend.cuda.ops.vector_access import vec_type
from tilelang.backend.cuda.ops.register_vector import chunk_geometry, free_row_fragments, vector_copy_parts


def emit_tile_loop(cg, vars_, mins, exts, body, regs, form=None, chunks=None):
    """A T.Parallel nest whose register fragments have tile_layout layouts; `form`: the
    nest's form from plan/copy_forms.py (`registers xW`: chunks copied W elements a vector);
    `chunks`: how its chunks run otherwise, from plan/register_chunks.py (None: element by
    element)."""
    exts = [E.const_int_value(e) for e in exts]
    unit = [v for v, e in zip(vars_, exts) if e == 1]
    cv = [v for v, e in zip(vars_, exts) if e != 1]
    lays = {id(b): cg.placement(b).acc for b in regs}
    dist = [L for L in lays.values() if not isinstance(L, Scalar)]
    scal = [b for b in regs if isinstance(lays[id(b)], Scalar)]
    if not dist and cv:     # reads replicated scalars only: an ordinary cooperative loop
        return False
    cg.w("{")
    cg.indent += 1
    for v in unit:
        cg.names.alias(v, "0")
    for b in scal:
        cg.acc_index[id(b)] = "0"
    if not dist:
        cg.stmt(body, False)
    elif isinstance(dist[0], AnnotatedTile):
        emit_annotated_loop(cg, dist[0], cv, body, regs, lays)
    else:
        L, mode, cv = chunk_geometry(vars_, exts, body, regs, lays)
        if mode == "rows":
            _rows_loop(cg, L, cv[0], body, regs, lays)
        else:
            _chunk_loop(cg, L, mode, cv, body, regs, lays, form, chunks)
    for b in scal:
        del cg.acc_index[id(b)]
    cg.indent -= 1
    cg.w("}")
    return True


def emit_annotated_loop(cg, L, cv, body, regs, lays):
    """A nest over a user's Fragment (layout/annotated.py): each thread runs the elements
    its registers hold, register by register, the element's (i, j) read off the closed
    form `L.schedule` found for the Fragment's owner table."""
    how = L.schedule
    if how[0] == "loop":
        _, guard, flat, shift = how
        r = cg.names.fresh("tl_r")
        cg.w("#pragma unroll")
        cg.w(f"for (int {r} = 0; {r} < {L.regs}; ++{r}) {{")
        cg.indent += 1
        k = cg.names.fresh("tl_k")
        cg.w(f"const int {k} = ({r} << {shift}) + tl_tid;" if shift else f"const int {k} = {r} + tl_tid;")
        _annotated_element(cg, L, cv, body, regs, lays, guard, flat.replace("tl_k", k), r)
        cg.indent -= 1
        cg.w("}")
        return
    for r, reg in enumerate(how[1]):
        if reg is not None:
            cg.w("{")
            cg.indent += 1
            _annotated_element(cg, L, cv, body, regs, lays, reg[0], reg[1], str(r))
            cg.indent -= 1
            cg.w("}")


def _annotated_element(cg, L, cv, body, regs, lays, guard, flat, slot):
    """The body at the element whose flat index is `flat`, held in register `slot`."""
    if guard is not None:
        cg.w(f"if (tl_tid < {guard}) {{")
        cg.indent += 1
    f = cg.names.fresh("tl_f")
    cg.w(f"const int {f} = {flat};")
    stride = 1
    for v, n in reversed(list(zip(cv, L.shape))):   # the row-major position of each dimension
        q = f if stride == 1 else f"{f} / {stride}"
        cg.w(f"const int {cg.bind(v)} = {q if stride * n == L.size else f'({q}) % {n}'};")
        stride *= n
    for b in regs:
        if isinstance(lays[id(b)], AnnotatedTile):
            cg.acc_index[id(b)] = slot
    cg.stmt(body, False)
    for b in regs:
        if isinstance(lays[id(b)], AnnotatedTile):
            del cg.acc_index[id(b)]
    if guard is not None:
        cg.indent -= 1
        cg.w("}")


def _slot(L, lay, s):
    if isinstance(lay, ThreadTile):
        return s
    if isinstance(lay, TileRows):
        return f"({s}) / {L.G}"
    return f"({s}) % {L.G}"


def _rows_loop(cg, L, iv, body, regs, lays):
    s = cg.names.fresh("tl_s")
    cg.w("#pragma unroll")
    cg.w(f"for (int {s} = 0; {s} < {L.row_regs}; ++{s}) {{")
    cg.indent += 1
    cg.w(f"const int {cg.bind(iv)} = ({s} * {L.G // L.V * L.T * L.V} + tl_tid * {L.V}) / {L.N};")
    for b in regs:
        if not isinstance(lays[id(b)], Scalar):
            cg.acc_index[id(b)] = s
    cg.stmt(body, False)
    for b in regs:
        cg.acc_index.pop(id(b), None)
    cg.indent -= 1
    cg.w("}")


def _chunk_loop(cg, L, mode, cv, body, regs, lays, form=None, chunks=None):
    """Tile or cols mode: chunks of V contiguous elements along the row: as vectors
    (`form`), or as plan/register_chunks.py recorded (`chunks`), or element by element."""
    nch = L.K if mode == "tile" else L.G // L.V
    c = cg.names.fresh("tl_c")
    cg.w("#pragma unroll")
    cg.w(f"for (int {c} = 0; {c} < {nch}; ++{c}) {{")
    cg.indent += 1
    f = cg.names.fresh("tl_f")
    cg.w(f"const int {f} = ({c} * {L.T} + tl_tid) * {L.V};")
    jv = cv[-1]
    if len(cv) == 2:
        cg.w(f"const int {cg.bind(cv[0])} = {f} / {L.N};")
    j0 = cg.names.fresh("tl_j0")
    cg.w(f"const int {j0} = {f} % {L.N};" if L.M > 1 else f"const int {j0} = {f};")
    free = free_row_fragments(body, regs, lays, mode, cv)
    # the chunk's vector width plan/copy_forms.py chose (ops/register_vector.py): the copy's parts
    W = form.width if form is not None and form.kind == "registers" and form.width else 0
    vec = vector_copy_parts(cg, body, jv, W, lays) if W else None
    if W and vec is None:
        raise AssertionError(f"CUDA codegen: the register-tile loop planned as {form} is not such a copy")
    if vec is not None:
        for e0 in range(0, L.V, W):
            _emit_vector_copy(cg, vec, jv, j0 if e0 == 0 else f"({j0} + {e0})", c, L, W, e0)
    elif chunks is not None and chunks.kind == "cast_pairs":
        _emit_register_cast(cg, body, jv, j0, c, L, mode, lays)
    elif chunks is not None and chunks.kind == "atomic":
        _emit_register_atomic(cg, body, jv, j0, c, L, mode, regs, lays, chunks.width)
    else:
        e = cg.names.fresh("tl_e")
        hoisted = _hoist_shared_loads(cg, chunks.hoisted if chunks is not None else (), jv, j0, L, e)
        cg.w("#pragma unroll")
        cg.w(f"for (int {e} = 0; {e} < {L.V}; ++{e}) {{")
        cg.indent += 1
        cg.w(f"const int {cg.bind(jv)} = {j0} + {e};")
        s = f"{c} * {L.V} + {e}"
        for b in regs:
            lay = lays[id(b)]
            if id(b) in free:
                cg.acc_index[id(b)] = _owned_slot(cg, b, lay, e)
            elif not isinstance(lay, Scalar):
                cg.acc_index[id(b)] = _slot(L, lay, s) if mode == "tile" else s
        cg.stmt(body, False)
        for b in regs:
            if not isinstance(lays[id(b)], Scalar):
                del cg.acc_index[id(b)]
        for b in hoisted:
            del cg.load_override[b]
        cg.indent -= 1
        cg.w("}")
    cg.indent -= 1
    cg.w("}")


def _owned_slot(cg, buf, L, e):
    """The register of buf[row, column] on the column's owner (layout/tile.py
    `column_owner`: chunk c is row c): row * V + the column's lane e."""
    if not (isinstance(L, ThreadTile) and column_owner(L)):
        raise NotImplementedError(f"register tile `{buf.name}` read at another row without whole columns")

    def slot(idx):
        row = next(i for i, d in zip(idx, buf.shape) if E.const_int_value(d) != 1)
        return f"({cg.expr(row)}) * {L.V} + {e}"
    return slot


def _emit_register_cast(cg, body, jv, j0, c, L, mode, lays):
    """The chunk's V elements two at a time (ops/vector_cast.py): `store` converts `load`
    (plan/register_chunks.py `register_cast`)."""
    from tilelang.backend.cuda.ops.vector_cast import pair_cast
    store, load = body, body.value.value
    cg.names.alias(jv, j0)

    def elem(buf, e):
        lay = lays[id(buf)]
        slot = f"{c} * {L.V} + {e}"
        cg.acc_index[id(buf)] = _slot(L, lay, slot) if mode == "tile" else slot
        ref = cg.access(E.BufferLoad(buf, store.indices))
        del cg.acc_index[id(buf)]
        return ref
    for e in range(0, L.V, 2):
        p = cg.names.fresh("tl_p")
        cg.w("{ " + pair_cast(load.buffer.dtype, store.buffer.dtype, elem(load.buffer, e), elem(load.buffer, e + 1),
                              elem(store.buffer, e), elem(store.buffer, e + 1), p) + " }")


def _emit_register_atomic(cg, body, jv, j0, c, L, mode, regs, lays, W):
    """The chunk's V elements as V / W vector atomic adds (ops/vector_atomic.py)."""
    from tilelang.backend.cuda.ops import vector_atomic as vector_atomic
    guard, call = vector_atomic.match(body)
    if call.args[0].buffer.scope == "global":
        name = call.args[0].buffer.name
        cg.aligned[name] = max(cg.aligned.get(name, 1), W * call.args[0].buffer.dtype.itemsize)

    def bind(e):
        cg.names.alias(jv, j0 if e == 0 else f"({j0} + {e})")
        for b in regs:
            lay = lays[id(b)]
            if not isinstance(lay, Scalar):
                slot = f"{c} * {L.V} + {e}"
                cg.acc_index[id(b)] = _slot(L, lay, slot) if mode == "tile" else slot
    for e0 in range(0, L.V, W):
        values = []
        for e in range(e0, e0 + W):
            bind(e)
            values.append(vector_atomic.element_value(cg, call))
        bind(e0)
        line = vector_atomic.call_line(cg, call, W, cg.access(call.args[0]), values)
        cg.w(f"if ({cg.expr(guard)}) {{ {line} }}" if guard is not None else line)
    for b in regs:
        cg.acc_index.pop(id(b), None)


def _hoist_shared_loads(cg, loads, jv, j0, L, e):
    """The chunk's vector load of each shared tile plan/register_chunks.py hoisted (`loads`:
    one element load of each, at the loop's own (i, j)); their element loads in the loop over
    e read that vector. Returns the hoisted buffer ids."""
    out = []
    for ld in loads:
        b = ld.buffer
        nbytes = L.V * b.dtype.itemsize
        piece = min(nbytes, 16)
        vt, _ = vec_type(b.dtype, piece)
        v = cg.names.fresh("tl_h")
        cg.names.alias(jv, j0)
        addr = f"&{cg.access(ld)}"
        cg.w(f"{vt} {v}[{nbytes // piece}];")
        for q in range(nbytes // piece):
            cg.w(f"{v}[{q}] = reinterpret_cast<const {vt}*>({addr})[{q}];")
        cg.load_override[id(b)] = f"reinterpret_cast<const {ctype(b.dtype)}*>({v})[{e}]"
        out.append(id(b))
    return out


def _emit_vector_copy(cg, m, jv, j0, c, L, V, e0):
    """Elements e0 .. e0 + V - 1 of chunk c as one vector (pieces of 16 bytes)."""
    guard, store, load, sel, side = m
    mem = load if side == "dst" else store
    reg = store if side == "dst" else load
    nbytes = V * mem.buffer.dtype.itemsize
    piece = min(nbytes, 16)
    np_ = nbytes // piece
    vt, zero = vec_type(mem.buffer.dtype, piece)
    mt = ctype(mem.buffer.dtype)
    if mem.buffer.scope == "global":
        cg.aligned[mem.buffer.name] = max(cg.aligned.get(mem.buffer.name, 1), piece)
    cg.names.alias(jv, j0)
    addr = f"&{cg.access(mem)}"
    slot = lambda e: f"{c} * {L.V} + {e0 + e}"  # noqa: E731  (a tile or cols fragment: chunk c, element e)
    v = cg.names.fresh("tl_v")
    cg.w(f"{vt} {v}[{np_}];")
    if side == "dst":   # memory -> registers
        pred = " && ".join(f"({cg.expr(x)})" for x in (guard, sel) if x is not None)
        for q in range(np_):
            ld = f"reinterpret_cast<const {vt}*>({addr})[{q}]"
            cg.w(f"{v}[{q}] = {f'({pred}) ? {ld} : {zero}' if pred else ld};")
        for e in range(V):
            cg.acc_index[id(reg.buffer)] = slot(e)
            x = cast_str(mem.buffer.dtype, reg.buffer.dtype, f"reinterpret_cast<const {mt}*>({v})[{e}]")
            cg.w(f"{cg.access(reg)} = {x};")
    else:               # registers -> memory
        for e in range(V):
            cg.acc_index[id(reg.buffer)] = slot(e)
            x = cast_str(reg.buffer.dtype, mem.buffer.dtype, cg.access(reg))
            cg.w(f"reinterpret_cast<{mt}*>({v})[{e}] = {x};")
        lines = [f"reinterpret_cast<{vt}*>({addr})[{q}] = {v}[{q}];" for q in range(np_)]
        if guard is not None:
            cg.w(f"if ({cg.expr(guard)}) {{ {' '.join(lines)} }}")
        else:
            for ln in lines:
                cg.w(ln)
    del cg.acc_index[id(reg.buffer)]


def tile_batch(op, R, g):
    """Rows a group of g <= 32 threads exchanges together for T.reduce_*(..., batch=B):
    B when a power of two with B <= g and B dividing the R rows a thread holds, else 1."""
    b = getattr(op, "batch", 1) or 1
    return b if g <= 32 and 1 < b <= g and b & (b - 1) == 0 and R % b == 0 else 1


def emit_tile_reduce(cg, op, L):
    """A reduction over the last dimension of register tile L into its rows."""
    from tilelang.backend.cuda.ops.reduce import combine, warp_op, reduce_parts, scratch_lines, round_rows, barrier
    from tilelang.backend.cuda.ops.reduce_pairs import pair_parts, pair_lines
    P = reduce_parts(cg, op)
    dt, ct, src, dst, init, clear, cross, nan = P.dt, P.ct, P.src, P.dst, P.init, P.clear, P.cross, P.nan
    wop = warp_op(op.kind, nan)
    R, G, g = L.row_regs, L.G, L.group
    x = cast_str(op.src.buffer.dtype, dt, f"{src}[tl_s * {G} + tl_r]")
    pp = pair_parts(op, P, G)
    if pp is not None:   # 16-bit elements two at a time (ops/reduce_pairs.py)
        own = [f"{ct} tl_a;"] + pair_lines(pp, "tl_a", "tl_p", G, lambda j: f"{src}[tl_s * {G} + 2 * tl_q + {j}]")
    else:
        own = [f"{ct} tl_a = {init};", "#pragma unroll",
               f"for (int tl_r = 0; tl_r < {G}; ++tl_r) tl_a = {combine(op.kind, 'tl_a', x, nan)};"]
    out = ["{", f"  {ct} tl_acc[{R}];", "  #pragma unroll"]
    B = tile_batch(op, R, g)
    if B > 1:   # batch=B: B rows per group exchange (tl::group_allreduce_rows)
        out += [f"  for (int tl_s0 = 0; tl_s0 < {R}; tl_s0 += {B}) {{", f"    {ct} tl_rows[{B}];",
                "    #pragma unroll", f"    for (int tl_b = 0; tl_b < {B}; ++tl_b) {{",
                "      const int tl_s = tl_s0 + tl_b;"] + ["      " + ln for ln in own] + [
                "      tl_rows[tl_b] = tl_a;", "    }",
                f"    tl::group_allreduce_rows<{B}, {g}>(tl_rows, {wop}(), tl_tid & 31);",
                "    #pragma unroll", f"    for (int tl_b = 0; tl_b < {B}; ++tl_b) tl_acc[tl_s0 + tl_b] = tl_rows[tl_b];",
                "  }"]
    else:
        out += [f"  for (int tl_s = 0; tl_s < {R}; ++tl_s) {{"] + ["    " + ln for ln in own]
        m = min(g, 32) // 2
        while m >= 1:
            out.append(f"    tl_a = {wop}()(tl_a, tl::shfl_xor(tl_a, {m}));")
            m //= 2
        out += ["    tl_acc[tl_s] = tl_a;", "  }"]
    if g > 32:
        nw = cg.plan.nthreads // 32
        C = round_rows(nw, R, op.dst.buffer.dtype.itemsize)
        # warp leaders publish C rows' partials per round (all rows in one round unless
        # the scratch would exceed ROUND_BYTES), one barrier, every thread combines
        row, live = ("tl_s", "") if C == R else ("tl_c0 + tl_s", f"if (tl_c0 + tl_s < {R}) ")
        body = scratch_lines(cg, ct) + [
                "  if ((tl_tid & 31) == 0) {", "    #pragma unroll",
                f"    for (int tl_s = 0; tl_s < {C}; ++tl_s) {live}tl_red[tl_s * {nw} + (tl_tid >> 5)] = tl_acc[{row}];",
                "  }", "  " + barrier(cg),
                "  #pragma unroll", f"  for (int tl_s = 0; tl_s < {C}; ++tl_s) {live}{{",
                f"    {ct} tl_a = tl_red[tl_s * {nw} + tl_w0];", "    #pragma unroll",
                f"    for (int tl_w = 1; tl_w < {g // 32}; ++tl_w) "
                f"tl_a = {wop}()(tl_a, tl_red[tl_s * {nw} + tl_w0 + tl_w]);",
                f"    tl_acc[{row}] = tl_a;", "  }"]
        out.append(f"  const int tl_w0 = (tl_tid / {g}) * {g // 32};")
        if C == R:
            out += body
        else:
            out += [f"  for (int tl_c0 = 0; tl_c0 < {R}; tl_c0 += {C}) {{"] + ["  " + ln for ln in body] + ["  }"]
    d = "0" if isinstance(cg.placement(op.dst.buffer).acc, Scalar) else "tl_s"
    val = P.store("tl_acc[tl_s]" if clear else combine(cross, P.load(f"{dst}[{d}]"), "tl_acc[tl_s]", nan))
    out += ["  #pragma unroll", f"  for (int tl_s = 0; tl_s < {R}; ++tl_s) {dst}[{d}] = {val};", "}"]
    return out
