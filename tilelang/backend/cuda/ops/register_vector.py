"""Register-tile loops (layout/tile.py thread tiles) whose chunks move between registers
and memory as vectors: emit/tile_loops.py runs such a loop chunk by chunk, V contiguous
elements each; where the body copies one element between a register tile and global or
shared memory, a chunk goes out as vectors of W elements (W divides V, up to 16 bytes, a
piece of 16 bytes at a time beyond). plan/copy_forms.py chooses W (`chunk_vector_width`) and
records it on the nest (`registers xW`); emit/tile_loops.py prints it."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.backend.cuda.layout.tile import ThreadTile, TileRows, TileCols, Scalar
from tilelang.backend.cuda.ops.vector_access import _has, _cond_ok, consecutive, swizzled_vector_ok


def _free_rows(body, buf, iv):
    """Whether the body reads or writes `buf` at a row other than the loop's own `iv`
    (None: a 1-D loop over the columns, which has no row of its own)."""
    from tilelang.ir.visitor import walk
    hit = []

    def f(n):
        if isinstance(n, (E.BufferLoad, S.BufferStore)) and n.buffer is buf:
            rows = [i for i, d in zip(n.indices, buf.shape) if E.const_int_value(d) != 1]
            if len(rows) == 2 and (iv is None or rows[0] is not iv):
                hit.append(n)
    walk(body, f)
    return bool(hit)



def _strip(v, types=None):
    """`v` without its casts; `types` (a list) collects the dtypes they convert to."""
    while isinstance(v, E.Cast):
        if types is not None:
            types.append(v.dtype)
        v = v.value
    return v


def vector_copy_parts(cg, body, jv, V, lays):
    """(guard, store, load, sel, reg side 'dst'|'src') when the body copies one element
    between a register tile and memory that a V-element vector can move (the emitter
    converts once, from the load's dtype to the store's: a chain of casts through
    another dtype, which rounds or truncates on the way, is not a copy)."""
    guard = None
    if isinstance(body, S.IfThenElse) and body.else_body is None:
        guard, body = body.cond, body.then_body
    if not isinstance(body, S.BufferStore):
        return None
    via = []
    val, sel = _strip(body.value, via), None
    if isinstance(val, E.Select):
        z = _strip(val.f)
        if not (isinstance(z, (E.FloatImm, E.IntImm)) and z.value == 0):
            return None
        via.append(val.dtype)
        sel, val = val.cond, _strip(val.t, via)
    if not isinstance(val, E.BufferLoad) or any(t not in (val.dtype, body.buffer.dtype) for t in via):
        return None
    reg = [x for x in (body, val) if id(x.buffer) in lays and isinstance(lays[id(x.buffer)], (ThreadTile, TileCols))]
    if len(reg) != 1:
        return None
    mem = val if reg[0] is body else body
    p = cg.placement(mem.buffer)
    if mem.buffer.dtype.bits < 8 or (p is not None and p.kind != "smem"):
        return None
    if mem.buffer.scope not in ("global", "shared", "shared.dyn", "local.fragment"):
        return None
    if V * mem.buffer.dtype.itemsize < 2 or (V * mem.buffer.dtype.itemsize > 16 and
                                              V * mem.buffer.dtype.itemsize % 16):
        return None
    if p is not None and p.swizzle:     # a tl::sw* tile: vectors inside its 16-byte chunks
        if not swizzled_vector_ok(mem.indices, jv, V):
            return None
    else:
        strides = cg.strides(mem.buffer)
        if E.const_int_value(strides[-1]) != 1 or any(_has(i, jv) for i in mem.indices[:-1]):
            return None
        if any(E.const_int_value(s) is None or E.const_int_value(s) % V for s in strides[:-1]):
            return None
        if not consecutive(mem.indices[-1], jv, V):
            return None
    if not all(c is None or _cond_ok(c, jv, V) for c in (guard, sel)):
        return None
    if sel is not None and mem is body:
        return None
    return guard, body, val, sel, "dst" if reg[0] is body else "src"


def chunk_geometry(vars_, exts, body, regs, lays):
    """(L, mode, cv) of a nest over register tiles `regs` (layouts `lays`, at least one of
    them distributed) that emit/tile_loops.py runs slot by slot: the thread tile L whose
    chunks the loop walks, the mode ("tile": chunks of the tile or of a one-row tile;
    "rows" / "cols": a 1-D loop over the rows or columns of a row or column fragment) and
    the loop's variables of extent above 1 (`exts`: constant extents)."""
    cv = [v for v, e in zip(vars_, exts) if e != 1]
    D = [L for L in lays.values() if not isinstance(L, Scalar)][0]
    if len(cv) == 1:
        # a 1-D loop runs over its own one-row tile, not over a 2-D tile it reads at rows of its
        # own choosing (layout/tile.py: on the column owners, one chunk per thread)
        own = [lays[id(b)] for b in regs if not isinstance(lays[id(b)], Scalar) and
               id(b) not in free_row_fragments(body, [b], lays, "tile", cv)]
        D = own[0] if own else ThreadTile(1, D.N, D.T, D.V)
    L = D if isinstance(D, ThreadTile) else D.tile
    mode = "tile" if len(cv) == 2 or isinstance(D, ThreadTile) else "rows" if isinstance(D, TileRows) else "cols"
    return L, mode, cv


def free_row_fragments(body, regs, lays, mode, cv):
    """ids of the thread-tile fragments the body reads at rows of its own choosing (a
    column-owner tile): their loop runs element by element."""
    return {id(b) for b in regs if mode == "tile" and len(cv) in (1, 2) and isinstance(lays[id(b)], ThreadTile)
            and _free_rows(body, b, cv[0] if len(cv) == 2 else None)}


def chunk_vector_width(k, vars_, exts, body, regs):
    """W (elements per vector) for a nest over register tiles `regs` that emit/tile_loops.py
    runs chunk by chunk and whose body copies one element between a tile and memory: the
    widest W dividing the chunk that the copy's addresses allow; 0 where it runs element by
    element (a loop over the rows or columns of a row or column fragment, a tile read at
    other rows, a body that is no such copy). `k` gives the placements and strides."""
    exts = [E.const_int_value(e) for e in exts]
    cv = [v for v, e in zip(vars_, exts) if e != 1]
    lays = {id(b): k.placement(b).acc for b in regs}
    dist = [L for L in lays.values() if not isinstance(L, Scalar)]
    if not dist or not cv:
        return 0
    D = dist[0]
    L = D if isinstance(D, ThreadTile) else D.tile
    mode = "tile" if len(cv) == 2 or isinstance(D, ThreadTile) else "rows" if isinstance(D, TileRows) else "cols"
    if mode == "rows" or free_row_fragments(body, regs, lays, mode, cv):
        return 0
    W = L.V
    while W >= 2:   # the widest vector that divides the chunk and the row stride
        if vector_copy_parts(k, body, cv[-1], W, lays) is not None:
            return W
        W //= 2
    return 0
