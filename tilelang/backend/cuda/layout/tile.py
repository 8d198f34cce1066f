"""Register layouts for fragments that no gemm reaches, driven by T.Parallel loops
(the TileLang rule for element-wise fragments).

A parallel loop over an m x n fragment distributes its iterations over the block's T
threads in chunks of V contiguous elements along the innermost dimension (V * itemsize
= 16 bytes for the narrowest type the loops move): chunk c of thread t covers the
elements flat = (c * T + t) * V + e, e < V (`ThreadTile`). Fragments that the same loop
indexes by (i, j) share that layout; a length-m fragment indexed by i holds the rows the
thread touches (`TileRows`: every row when T * V <= n, else one per chunk, replicated
over the n / V threads of that row); a length-n fragment indexed by j holds the thread's
columns (`TileCols`); a fragment of one element is replicated on every thread (`Scalar`).
Copies between global memory and these fragments are the same loops, so they move one
16-byte vector per chunk, coalesced over the warp; `T.reduce_*(tile, rows, dim=-1)` is a
per-thread partial over the slots of each row, butterfly shuffles over the lanes of the
row, then (rows wider than a warp) one exchange through shared memory.

Shapes are taken *canonically*: unit dimensions of loops and fragments are dropped, so a
(1, N) tile, its (N,) copy loop and its (1,) row statistic are one (1, N) tile, its
columns, and a scalar.

Inference (`infer_tiles`) runs after the gemm-driven layouts of layout/fragment.py, over
the fragments those left in shared memory. A group of fragments connected by loops and
reductions to a gemm operand or an accumulator layout stays where it is. A fragment
falls back to shared memory when its uses disagree (two tile shapes, a non-canonical
index, a reduction over another dimension, a replicated loop with atomics, a tile that
T and V cannot split evenly); the inference then runs again without it."""
from __future__ import annotations

import functools
from dataclasses import dataclass

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk, collect_vars
from tilelang.layout import Fragment, make_fully_replicated_layout_fragment

def owner(layout, t, r):
    """The logical index (a tuple of ints or int arrays) that register r of thread t
    holds in a register layout, read off its Fragment (the one model of the element
    placement; the device header's formulas are checked against it)."""
    table = _owner_table(layout)
    return tuple(table[t, r, k] for k in range(table.shape[-1]))


@functools.lru_cache(maxsize=64)
def fragment_of(layout):
    """layout.fragment(), built once per layout (they are frozen dataclasses)."""
    return layout.fragment()


@functools.lru_cache(maxsize=64)
def _owner_table(layout):
    return fragment_of(layout).owner_table()


MAX_TILE_REGS = 128   # elements per thread and fragment; larger tiles stay in shared memory,
# unless no GPU's shared memory holds them (227 KB on sm_90): then registers, spilling to
# local memory, are the only place the kernel can run with
MAX_SMEM_ANY = 227 * 1024


@dataclass(frozen=True)
class ThreadTile:
    M: int
    N: int
    T: int
    V: int

    @staticmethod
    def fits(M, N, T, V):
        TV = T * V
        if T % 32 or N % V or (M * N) % TV or not (N % TV == 0 or TV % N == 0):
            return False
        g = N // max(V, N // T)     # the threads of a row: within one warp, or whole warps
        return (g <= 32 and 32 % g == 0) or g % 32 == 0

    @property
    def K(self):            # chunks per thread
        return self.M * self.N // (self.T * self.V)

    @property
    def G(self):            # contiguous elements a thread holds in one row
        return max(self.V, self.N // self.T)

    @property
    def group(self):        # threads that share a row (consecutive, aligned)
        return self.N // self.G

    @property
    def regs(self):
        return self.K * self.V

    @property
    def row_regs(self):
        return self.regs // self.G

    def layout(self):
        return f"ThreadTile<{self.M}, {self.N}, T={self.T}, V={self.V}>"

    # the element each register holds (from the Fragment; tests, debug dumps)
    def row(self, t, r):
        return owner(self, t, r)[0]

    def col(self, t, r):
        return owner(self, t, r)[1]

    def fragment(self):
        """This layout as a `tilelang.layout.Fragment` over the canonical M x N tile:
        element f = i * N + j is lane f % V of chunk f // V, chunk q on thread q % T
        at registers (q // T) * V + f % V."""
        M, N, T, V = self.M, self.N, self.T, self.V

        def fwd(i, j):
            f = i * N + j
            return (f // V) % T, (f // (V * T)) * V + f % V
        return Fragment([M, N], forward_fn=fwd)


@dataclass(frozen=True)
class TileRows:
    tile: ThreadTile

    @property
    def regs(self):
        return self.tile.row_regs

    def layout(self):
        return f"TileRows<{self.tile.layout()}>"

    def row(self, t, s):
        return owner(self, t, s)[0]

    def fragment(self):
        """This layout as a `tilelang.layout.Fragment` over the tile's M rows: when a
        round of chunks (T * V elements) covers R = T V / N >= 1 rows, row i is held by
        the N / V threads of its place i % R in the round, at slot i // R; otherwise
        every thread touches every row (slot i, replicated over all T threads)."""
        L = self.tile
        if L.T * L.V <= L.N:
            return Fragment([L.M], forward_fn=lambda i, rep: (rep, i), replicate=L.T)
        R, g = L.T * L.V // L.N, L.N // L.V
        return Fragment([L.M], forward_fn=lambda i, rep: ((i % R) * g + rep, i // R), replicate=g)


@dataclass(frozen=True)
class TileCols:
    tile: ThreadTile

    @property
    def regs(self):
        return self.tile.G

    def layout(self):
        return f"TileCols<{self.tile.layout()}>"

    def col(self, t, s):
        return owner(self, t, s)[0]

    def fragment(self):
        """This layout as a `tilelang.layout.Fragment` over the tile's N columns: chunk
        q = j // V of a row is on thread q % T (the same for every row, N / V being a
        multiple of T or T of N / V), replicated over the T V / N rows of a round."""
        L = self.tile
        g, rep = L.N // L.V, max(1, L.T * L.V // L.N)
        if rep == 1:
            return Fragment([L.N], forward_fn=lambda j: ((j // L.V) % L.T, (j // (L.V * L.T)) * L.V + j % L.V))
        return Fragment([L.N], forward_fn=lambda j, r: (j // L.V + r * g, j % L.V), replicate=rep)


@dataclass(frozen=True)
class Scalar:
    regs: int = 1

    def layout(self):
        return "Scalar (replicated)"

    def fragment(self, nthreads):
        """This layout as a `tilelang.layout.Fragment`: one element on all `nthreads`."""
        return make_fully_replicated_layout_fragment([1], nthreads)


TILE_LAYOUTS = (ThreadTile, TileRows, TileCols, Scalar)


FREE = "*"   # CanonLoop access position of a row index that is no loop variable


def column_owner(L):
    """Whether thread t of tile L holds whole columns (the V columns t V .. t V + V - 1
    of every row, chunk c being row c): then any row of a column the thread runs is in
    its registers, at slot row * V + (column % V)."""
    return L.T * L.V == L.N


def canon_shape(buf):
    return [d for d in (E.const_int_value(x) for x in buf.shape) if d != 1]


def _unit_dims(buf):
    return [E.const_int_value(x) == 1 for x in buf.shape]


class CanonLoop:
    """A T.Parallel nest seen without its unit loops: canonical extents, and for each
    fragment the positions of the canonical loop vars indexing its non-unit dims."""

    def __init__(self, lp, frags):
        self.lp = lp
        self.ok = lp.zero and None not in lp.exts
        keep = [k for k, e in enumerate(lp.exts or []) if e != 1] if self.ok else []
        self.exts = [lp.exts[k] for k in keep]
        self.vars = [lp.vars[k] for k in keep]
        unit_vars = [lp.vars[k] for k, e in enumerate(lp.exts or []) if e == 1] if self.ok else []
        self.access = {}    # fid -> tuple of canonical positions | None (not canonical)
        for fid, ixs in lp.idx.items():
            forms = set()
            for ix in ixs:
                forms.add(self._form(frags[fid], ix, unit_vars))
            self.access[fid] = forms.pop() if len(forms) == 1 else None

    def _form(self, buf, ix, unit_vars):
        if len(ix) != buf.ndim:
            return None
        pos = []
        for unit, i in zip(_unit_dims(buf), ix):
            if unit:
                if not (E.const_int_value(i) == 0 or any(i is u for u in unit_vars)):
                    return None
                continue
            k = next((k for k, v in enumerate(self.vars) if i is v), None)
            if k is None:
                # a row the iteration picks itself (`b[k, j]` under `for k in T.serial`, in a
                # 2-D nest or a 1-D one over the columns): FREE, when the index reads none of
                # the nest's variables
                if not pos and len(self.vars) in (1, 2) and buf.ndim - sum(_unit_dims(buf)) == 2 and \
                        not any(x is v for x in collect_vars(i) for v in self.vars):
                    pos.append(FREE)
                    continue
                return None
            pos.append(k)
        if FREE not in pos and pos != sorted(set(pos)):
            return None
        if FREE in pos and tuple(pos) != (FREE, len(self.vars) - 1):
            return None
        return tuple(pos)


def _role(cl, fid, buf):
    """(kind, (m, n)) this loop asks of fragment fid, 'any1' for a 1-D loop's
    fragment whose role comes from elsewhere, or None (the loop cannot follow)."""
    a = cl.access.get(fid)
    if a is None or not cl.ok:
        return None
    cs = canon_shape(buf)
    if len(cs) != len(a):
        return None
    if a == ():
        return ("scalar", None)
    if len(cl.exts) == 2:
        m, n = cl.exts
        if a == (FREE, 1):      # any row of the iteration's column: the column's owner holds them all
            return ("tile", (m, n)) if cs == [m, n] else None
        if FREE in a:
            return None
        return {(0, 1): ("tile", (m, n)), (0,): ("rows", (m, n)), (1,): ("cols", (m, n))}[a]
    if len(cl.exts) == 1:
        if a == (FREE, 0):      # `b[k, j]` in a loop over j: b's column owners run it
            return ("tile", tuple(cs)) if cs[1] == cl.exts[0] else None
        return "any1"
    return None


def _norm(role):
    """cols of a one-row tile are the tile itself."""
    if role and role[0] == "cols" and role[1][0] == 1:
        return ("tile", role[1])
    return role


def _role_extent(role):
    """The 1-D extent a 1-D loop over this role's fragment runs over."""
    kind, (m, n) = role
    return {"tile": n if m == 1 else None, "rows": m, "cols": n}[kind]


def infer_tiles(frags, skip, loops, reduces, scalar_ok, nthreads, mark, taint=()):
    """{fid: layout} for fragments not in `skip`. `loops`: fragment_layout._Loop list;
    `scalar_ok`: fids of one-element fragments; `taint`: gemm operands and accumulator
    layouts, whose groups stay as they are; `mark(fids, why)` sends a fragment to
    shared memory."""
    cand = {f for f in frags if f not in skip}
    if not cand:
        return {}
    cls = [CanonLoop(lp, frags) for lp in loops]
    # groups: fragments connected by a loop or a reduction; a group touching a gemm stays put
    parent = {f: f for f in frags}

    def find(f):
        while parent[f] != f:
            parent[f] = parent[parent[f]]
            f = parent[f]
        return f

    def union(ids):
        ids = list(ids)
        for f in ids[1:]:
            parent[find(f)] = find(ids[0])
    for cl in cls:
        union(cl.lp.idx.keys())
    for r in reduces:
        ids = [id(x.buffer) for x in (r.src, r.dst) if id(x.buffer) in frags]
        union(ids)
    tainted = {find(f) for f in taint}
    for f in list(cand):
        if find(f) in tainted:
            mark([f], "shares a loop or reduction with a gemm fragment")
            cand.discard(f)
    bad = set()
    while True:
        live = cand - bad
        out = _solve(frags, live, cls, reduces, scalar_ok, nthreads, loops)
        if isinstance(out, dict):
            return out
        fids, why = out
        mark(fids, why)
        bad |= set(fids)


def _solve(frags, live, cls, reduces, scalar_ok, T, loops):
    """{fid: layout}, or ([fids], reason) for fragments to send to shared memory."""
    role = {}
    owned = {}      # tile shape -> fids some loop reads at rows of its own choosing
    free_1d = {}    # id(1-D CanonLoop) -> the 2-D fids it reads at rows of its own choosing

    def want(fid, r):
        r = _norm(r)
        cur = role.get(fid)
        if cur is None:
            role[fid] = r
            return True
        if cur != r:
            raise _Conflict([fid], f"uses disagree: {cur} and {r}")
        return False
    try:
        for fid in live:
            if not canon_shape(frags[fid]):
                if fid not in scalar_ok:
                    raise _Conflict([fid], "a block-level use other than a plain store or load")
                role[fid] = ("scalar", None)
            elif len(canon_shape(frags[fid])) > 2:
                raise _Conflict([fid], "more than two non-unit dimensions")
        for r in reduces:
            s, d = id(r.src.buffer), id(r.dst.buffer)
            if s not in live and d not in live:
                continue
            ok = s in live and d in live and _reduce_ok(r)
            if not ok:
                raise _Conflict([f for f in (s, d) if f in live], "a reduction other than over the last dimension "
                                "of a register tile into its rows")
            cs = canon_shape(r.src.buffer)
            mn = (1, cs[0]) if len(cs) == 1 else tuple(cs)
            want(s, ("tile", mn))
            if mn[0] == 1:
                want(d, ("scalar", None))
            else:
                want(d, ("rows", mn))
        for cl in cls:
            for fid in cl.lp.idx:
                if fid not in live:
                    continue
                r = _role(cl, fid, frags[fid])
                if r is None:
                    raise _Conflict([fid], "a T.Parallel loop that indexes it other than by its loop variables")
                if cl.access.get(fid) in ((FREE, 1), (FREE, 0)):
                    owned.setdefault(r[1], set()).add(fid)
                    if len(cl.exts) == 1:   # the loop's own one-row tiles: whole columns too
                        free_1d.setdefault(id(cl), set()).add(fid)
                if r != "any1":
                    want(fid, r)
        changed = True
        while changed:      # 1-D loops: their fragments share one role
            changed = False
            for cl in cls:
                if len(cl.exts) != 1:
                    continue
                ones = [f for f in cl.lp.idx if f in live and role.get(f, ("", None))[0] != "scalar"
                        and f not in free_1d.get(id(cl), ())]
                known = {role[f] for f in ones if f in role}
                if len(known) > 1:
                    raise _Conflict(ones, f"one loop over {sorted(map(str, known))}")
                if known:
                    (r,) = known
                    if _role_extent(r) != cl.exts[0]:
                        raise _Conflict(ones, "a 1-D loop over another extent")
                    for f in ones:
                        changed |= want(f, r)
        for cl in cls:      # 1-D loops that nothing else reaches: a one-row tile
            if len(cl.exts) == 1:
                for f in cl.lp.idx:
                    if f in live and f not in role:
                        want(f, ("tile", (1, cl.exts[0])))
        for cl in cls:      # a 1-D loop reading rows of its own choosing runs on the columns' owners
            if id(cl) in free_1d:
                for f in cl.lp.idx:
                    if f in live and f not in free_1d[id(cl)] and role[f][0] != "scalar":
                        if role[f] != ("tile", (1, cl.exts[0])):   # (its chunk is then the owner's columns)
                            raise _Conflict(free_1d[id(cl)], "rows of its own choosing in a 1-D loop over "
                                            f"a {role[f][0]} fragment")
                        owned.setdefault(role[f][1], set()).add(f)
        for cl in cls:
            regs = [f for f in cl.lp.idx if f in live]
            if not regs:
                continue
            dist = {role[f] for f in regs if role[f][0] != "scalar"}
            # a reducer (T.alloc_reducer) is the exception: each thread accumulates the
            # iterations it runs into its own copy, T.finalize_reducer combines the copies
            writes_scalar = any(role[f][0] == "scalar" and f in cl.lp.written and
                                getattr(frags[f], "reducer_op", None) is None for f in regs)
            if writes_scalar and cl.exts:
                raise _Conflict(regs, "a T.Parallel loop of several iterations writes a one-element fragment")
            tile_mode = len(cl.exts) == 2 or (len(cl.exts) == 1 and dist and next(iter(dist))[0] == "tile")
            if not tile_mode and (dist or writes_scalar) and cl.lp.atomic:
                raise _Conflict(regs, "an atomic or print in a loop over replicated fragments")
    except _Conflict as c:
        return c.fids, c.why
    # vector width per tile shape: 16 bytes of the narrowest element the loops move
    narrow = {}
    for cl in cls:
        shapes = {role[f][1] for f in cl.lp.idx if f in live and role[f][0] != "scalar"}
        if not shapes:
            continue
        item = min(_itemsizes(cl.lp.st))
        for mn in shapes:
            narrow[mn] = min(narrow.get(mn, 16), item)
    for fid, r in role.items():
        if r[0] != "scalar":
            narrow.setdefault(r[1], frags[fid].dtype.itemsize)
    tiles = {}
    for mn, item in narrow.items():
        users = [f for f, r in role.items() if r[1] == mn]
        if mn in owned:     # whole columns per thread: N / T of them, at least 4 bytes of the
            V = mn[1] // T if mn[1] % T == 0 else 0    # narrowest element (no 1- or 2-byte accesses)
            if V * item < 4 or not ThreadTile.fits(mn[0], mn[1], T, V):
                return sorted(owned[mn]), f"rows of its own choosing in a {mn[0]} x {mn[1]} tile that " \
                    f"{T} threads cannot hold by whole columns"
            tiles[mn] = L = ThreadTile(mn[0], mn[1], T, V)
            if L.regs > MAX_TILE_REGS:
                return users, f"{L.regs} registers per thread for a {mn[0]} x {mn[1]} tile"
            continue
        V = max(1, 16 // max(1, item))
        while V > 1 and not ThreadTile.fits(mn[0], mn[1], T, V):
            V //= 2
        L = ThreadTile(mn[0], mn[1], T, V)
        if not ThreadTile.fits(*mn, T, V):
            return users, f"a {mn[0]} x {mn[1]} tile that {T} threads cannot split evenly"
        tile_bytes = mn[0] * mn[1] * max(frags[f].dtype.itemsize for f in users)
        if L.regs > MAX_TILE_REGS and tile_bytes <= MAX_SMEM_ANY:
            return users, f"{L.regs} registers per thread for a {mn[0]} x {mn[1]} tile"
        tiles[mn] = L
    out = {}
    for fid, (kind, mn) in role.items():
        out[fid] = Scalar() if kind == "scalar" else \
            {"tile": tiles[mn], "rows": TileRows(tiles[mn]) if mn in tiles else None,
             "cols": TileCols(tiles[mn]) if mn in tiles else None}[kind]
    return out


class _Conflict(Exception):
    def __init__(self, fids, why):
        super().__init__(why)
        self.fids, self.why = list(fids), why


def whole_region(region):
    """Does `region` cover its whole buffer (constant shape)?"""
    return all(E.const_int_value(s) == 0 for s in region.starts) and \
        [E.const_int_value(e) for e in region.extents] == [E.const_int_value(d) for d in region.buffer.shape]


def reduce_dim(r):
    """The reduced dimension of T.reduce_* `r`, counted from 0."""
    nd = len(r.src.extents)
    return r.dim + nd if r.dim < 0 else r.dim


def _reduce_ok(r):
    src, dst = r.src.buffer, r.dst.buffer
    if not (whole_region(r.src) and whole_region(r.dst)):
        return False
    d = reduce_dim(r)
    sc = [k for k, x in enumerate(src.shape) if E.const_int_value(x) != 1]
    if not sc or sc[-1] != d or len(sc) > 2:
        return False
    return canon_shape(dst) == canon_shape(src)[:-1]


def _itemsizes(st):
    out = []

    def f(n):
        if isinstance(n, (E.BufferLoad, S.BufferStore)) and n.buffer.dtype.bits >= 8:
            out.append(n.buffer.dtype.itemsize)
    walk(st, f)
    return out or [16]
