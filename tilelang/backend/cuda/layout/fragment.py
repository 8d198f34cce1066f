"""Fragment layout inference (CUDA): which `local.fragment` buffers live in registers,
and in which layout.

Two register layouts, both derived from the mma.sync / wgmma accumulator pattern
(`tl::MmaAccLayout<M, N, WM, WN>`, the `style="contiguous"` accumulator of
`tilelang.layout.gemm_partition`):

- `AccLayout(M, N, WM, WN)`: an M x N tile; register r of thread t holds element
  (row(t, r), col(t, r)). A gemm accumulator starts with its gemm's layout; a wgmma
  whose A operand is a fragment asks for `AccLayout(M, K, warps, 1)` (the register
  A fragment of wgmma is the accumulator pattern of an M x K tile);
- `RowLayout(M, WM, WN)`: a length-M vector, each thread holding the 2 * MI rows it owns
  in the accumulator layout, replicated over the 4 lanes of a quad and over the WN warps
  that share those rows (`tl::MmaRowLayout<M, WM, WN>`): row statistics such as m_i / l_i
  of FlashAttention. With WN > 1 a row reduction ends with an exchange of the warps'
  partial results through shared memory.
- `ColLayout(N, WM, WN)`: a length-N vector, each thread holding the 2 * NI columns it owns
  in the accumulator layout, replicated over the 8 rows of lanes and the WM warps that share
  those columns (`tl::MmaColLayout<N, WM, WN>`): per-column masks and biases.

Propagation, to a fixed point:
- a 2-D T.Parallel nest over exactly an AccLayout's M x N that indexes a fragment of
  that layout by (i, j) gives the same layout to every other M x N fragment it indexes
  by (i, j), the row layout to every length-M fragment it indexes by (i,) and the column
  layout to every length-N fragment it indexes by (j,);
- a 1-D T.Parallel nest over M spreads a RowLayout (over N, a ColLayout) over the
  fragments of that length it indexes by (i,); copies and fills are such loops once lowered;
- `T.reduce_*(acc, dst, dim=1)` gives dst the row layout of acc.

A layout is kept only where every use can follow it: parallel nests over the layout
(element loops), dim-1 reductions from an AccLayout into its RowLayout, gemms that read
it as their accumulator (or wgmma register A). Any other use (a scalar statement, a
view, another tile op, a loop that indexes it differently, two layouts meeting) moves
the fragment back to shared memory, which is always correct; `report` says why. The one view
kept: a `T.reshape` splitting an accumulator's last dimension, whose element accesses
transform/fold_fragment_views.py folded into the accumulator and which only a reduction
over its last dimension still reads (`GroupReduce`: groups of columns inside one warp's).

Fragments that no gemm reaches (and that share no loop or reduction with one) then take
the thread-tile layouts of layout/tile.py, driven by their T.Parallel loops (RMSNorm,
softmax, LayerNorm, element-wise epilogues); block-level stores whose fragment operands
have one element run on every thread's replicated copy."""
from __future__ import annotations

from dataclasses import dataclass, field

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk
from tilelang.layout import Fragment, make_mma_accumulator_fragment
from tilelang.backend.cuda.analysis.facts import parallel_nest
from tilelang.backend.cuda.layout.annotated import infer_annotated
from tilelang.backend.cuda.layout.tile import infer_tiles, canon_shape, whole_region, reduce_dim, owner, fragment_of


@dataclass(frozen=True)
class AccLayout:
    M: int
    N: int
    WM: int
    WN: int
    wg_cols: bool = False   # wgmma with warpgroups along N: warp w at row w % WM, column w // WM

    @property
    def MI(self):
        return self.M // self.WM // 16

    @property
    def NI(self):
        return self.N // self.WN // 8

    @property
    def regs(self):
        return self.MI * self.NI * 4

    def layout(self):
        return f"tl::MmaAccLayout<{self.M}, {self.N}, {self.WM}, {self.WN}{', true' if self.wg_cols else ''}>"

    def row_layout(self):
        return RowLayout(self.M, self.WM, self.WN, self.wg_cols)

    def col_layout(self):
        return ColLayout(self.N, self.WM, self.WN, self.wg_cols)

    def warp_col_expr(self, tid):
        """C++ for the warp-grid column of thread `tid` (a C++ expression)."""
        return f"({tid} >> 5) / {self.WM}" if self.wg_cols else f"({tid} >> 5) % {self.WN}"

    # the element each register holds, from the Fragment (tests, debug dumps; the
    # header tl::MmaAccLayout prints the same formulas into the kernel)
    def row(self, tid, r):
        return owner(self, tid, r)[0]

    def col(self, tid, r):
        return owner(self, tid, r)[1]

    def row_slot(self, r):
        """The RowLayout slot of the row that register r holds (the same on every thread)."""
        return fragment_of(self.row_layout()).slot_table()[self.row(0, r)]

    def col_slot(self, r):
        """The ColLayout slot of the column that register r holds (the same on every thread)."""
        return fragment_of(self.col_layout()).slot_table()[self.col(0, r)]

    def fragment(self):
        """This layout as a `tilelang.layout.Fragment` (element -> thread, register):
        the published contiguous mma accumulator over a WM x WN warp grid."""
        return make_mma_accumulator_fragment(self.M, self.N, self.WM, self.WN, style="contiguous",
                                             warp_col_major=self.wg_cols)


@dataclass(frozen=True)
class RowLayout:
    M: int
    WM: int
    WN: int = 1   # warps along N holding the same rows (their partials meet in shared memory)
    wg_cols: bool = False   # the warp grid of AccLayout.wg_cols

    @property
    def length(self):
        return self.M

    @property
    def regs(self):
        return (self.M // self.WM // 16) * 2

    def layout(self):
        return f"tl::MmaRowLayout<{self.M}, {self.WM}, {self.WN}{', true' if self.wg_cols else ''}>"

    def row(self, tid, s):
        return owner(self, tid, s)[0]

    def fragment(self):
        """This layout as a `tilelang.layout.Fragment`: row i lives in the quad of lanes
        4 * (i % 8) .. + 3 of the warps at its warp-grid row, replicated over those 4
        lanes and the WN warps of that row (replica = lane % 4 + 4 * warp column)."""
        WTM, WM, WN, wg = self.M // self.WM, self.WM, self.WN, self.wg_cols

        def fwd(i, rep):
            wr, ii, wc = i // WTM, i % WTM, rep // 4
            warp = wc * WM + wr if wg else wr * WN + wc
            return warp * 32 + (ii % 8) * 4 + rep % 4, (ii // 16) * 2 + (ii % 16) // 8
        return Fragment([self.M], forward_fn=fwd, replicate=4 * WN)


@dataclass(frozen=True)
class ColLayout:
    """A length-N vector of per-column values of `AccLayout(M, N, WM, WN)`: each thread
    holds the 2 * NI columns it owns in the accumulator (slot s: strip s // 2, column
    (lane % 4) * 2 + s % 2 of it), replicated over the 8 rows of lanes of a quad column
    and over the WM warps that share those columns (`tl::MmaColLayout<N, WM, WN>`): a
    mask or bias over the columns of an attention score tile (the sparse MLA's `mask[bi]`
    read as `acc_s[h, bi]`), computed by every thread for its own columns instead of
    going through shared memory and a barrier."""
    N: int
    WM: int
    WN: int
    wg_cols: bool = False   # the warp grid of AccLayout.wg_cols

    @property
    def length(self):
        return self.N

    @property
    def regs(self):
        return (self.N // self.WN // 8) * 2

    def layout(self):
        return f"tl::MmaColLayout<{self.N}, {self.WM}, {self.WN}{', true' if self.wg_cols else ''}>"

    def col(self, tid, s):
        return owner(self, tid, s)[0]

    def fragment(self):
        """This layout as a `tilelang.layout.Fragment` (replica = row of lanes + 8 * warp row)."""
        WTN, WM, WN, wg = self.N // self.WN, self.WM, self.WN, self.wg_cols

        def fwd(j, rep):
            wc, jj, wr = j // WTN, j % WTN, rep // 8
            warp = wc * WM + wr if wg else wr * WN + wc
            return warp * 32 + (rep % 8) * 4 + (jj % 8) // 2, (jj // 8) * 2 + jj % 2
        return Fragment([self.N], forward_fn=fwd, replicate=8 * WM)


# register layouts of 1-D fragments along one axis of an accumulator
VECTOR_LAYOUTS = (RowLayout, ColLayout)


@dataclass(frozen=True)
class Tf32ALayout:
    """The register A operand of the TF32 mma.sync (m16n8k8 .tf32) over a WM x WN warp
    grid: an M x K tile, warp w at grid row w // WN holding its M / WM rows and all K
    columns (replicated over the WN warps of that row). In each 16 x 8 atom lane
    (g = lane / 4, t = lane % 4) holds a0 (g, t), a1 (g + 8, t), a2 (g, t + 4),
    a3 (g + 8, t + 4); register (mi * K / 8 + ki) * 4 + a (`tl::MmaTf32ALayout`). Every
    column a thread holds is t mod 4, so a loop over an M x 4 tile reading
    `a[i, 4 c + j]` runs on the threads of `Tf32ColsLayout` (the sum of squares of mHC)."""
    M: int
    N: int   # K of the gemm
    WM: int
    WN: int

    @property
    def MI(self):
        return self.M // self.WM // 16

    @property
    def KI(self):
        return self.N // 8

    @property
    def regs(self):
        return self.MI * self.KI * 4

    def layout(self):
        return f"tl::MmaTf32ALayout<{self.M}, {self.N}, {self.WM}, {self.WN}>"

    def slot_of(self, s, e):
        """C++ for the register holding [row of Tf32ColsLayout slot s, e + t] (e a
        multiple of 4, t = lane % 4): atom (s / 2, e / 8), a = (e / 4 % 2) * 2 + s % 2."""
        return f"((({s}) >> 1) * {self.KI} + ({e}) / 8) * 4 + ((({e}) / 4) % 2) * 2 + (({s}) & 1)"

    def fragment(self):
        """This layout as a `tilelang.layout.Fragment` (replica = warp column)."""
        WTM, WN, KI = self.M // self.WM, self.WN, self.KI

        def fwd(i, k, rep=0):
            wr, ii = i // WTM, i % WTM
            lane = (ii % 8) * 4 + k % 4
            reg = ((ii // 16) * KI + k // 8) * 4 + ((k % 8) // 4) * 2 + (ii % 16) // 8
            return (wr * WN + rep) * 32 + lane, reg
        return Fragment([self.M, self.N], forward_fn=fwd, replicate=WN)


@dataclass(frozen=True)
class Tf32ColsLayout:
    """An M x 4 tile on the threads of a `Tf32ALayout(M, K, WM, WN)`: element (i, j) on
    lane (i % 8) * 4 + j of the warps at grid row i // (M / WM), slot (i % WTM / 16) * 2 +
    i % 16 / 8, replicated over the WN warps of that row (`tl::MmaTf32ColsLayout`). Its
    rows are those of `RowLayout(M, WM, WN)`, so a dim-1 reduction ends in that row layout
    after a quad exchange (the WN warps hold copies, not partials: no exchange between them)."""
    M: int
    WM: int
    WN: int
    N = 4
    partial_warps = 1   # warps along N holding partial sums of a row (reductions)

    @property
    def regs(self):
        return (self.M // self.WM // 16) * 2

    def layout(self):
        return f"tl::MmaTf32ColsLayout<{self.M}, {self.WM}, {self.WN}>"

    def row_layout(self):
        return RowLayout(self.M, self.WM, self.WN)

    def warp_col_expr(self, tid):
        return f"({tid} >> 5) % {self.WN}"

    def fragment(self):
        WTM, WN = self.M // self.WM, self.WN

        def fwd(i, j, rep=0):
            wr, ii = i // WTM, i % WTM
            return (wr * WN + rep) * 32 + (ii % 8) * 4 + j, (ii // 16) * 2 + (ii % 16) // 8
        return Fragment([self.M, 4], forward_fn=fwd, replicate=WN)


# register layouts of 2-D fragments that T.Parallel nests over their whole M x N run slot by slot
TILE_2D = (AccLayout, Tf32ALayout, Tf32ColsLayout)


def a_register_layout(cfg):
    """The register layout a gemm config reads its A fragment in, or None: wgmma's
    (the accumulator pattern of an M x K tile), the TF32 mma.sync's (Tf32ALayout)."""
    if cfg is None or not getattr(cfg, "a_regs", False):
        return None
    if getattr(cfg, "tf32", False):
        return Tf32ALayout(cfg.M, cfg.K, cfg.WM, cfg.WN)
    return AccLayout(cfg.M, cfg.K, cfg.WM, 1)


def acc_layout_of(cfg):
    return None if cfg is None else AccLayout(cfg.M, cfg.N, cfg.WM, cfg.WN, getattr(cfg, "wg_cols", False))


@dataclass
class FragmentLayouts:
    layouts: dict = field(default_factory=dict)   # id(buffer) -> AccLayout | RowLayout
    report: list = field(default_factory=list)    # (buffer name, layout or "shared", reason)
    names: dict = field(default_factory=dict)     # id(buffer) -> name
    not_honoured: dict = field(default_factory=dict)   # id(buffer) -> why its user's Fragment is not its layout


def _shape(buf):
    return [E.const_int_value(d) for d in buf.shape]


def _fits(buf, lay):
    return _shape(buf) == ([lay.M, lay.N] if isinstance(lay, TILE_2D) else [lay.length])


class _Loop:
    """A block-level T.Parallel nest and the fragments it indexes."""

    def __init__(self, st, frags, thread_range=None):
        self.range = thread_range   # analysis/thread_ranges.py: the threads that run it (None: the block)
        self.vars, self.mins, self.exts, body = parallel_nest(st)
        self.exts = [E.const_int_value(e) for e in self.exts]
        self.guarded = guarded_body(body)
        self.zero = all(E.const_int_value(m) == 0 for m in self.mins)
        self.st = st
        self.idx = {}             # id(frag) -> [index tuples]
        self.written = set()      # id(frag) stored to
        self.atomic = False

        def f(n):
            if isinstance(n, (E.BufferLoad, S.BufferStore)) and id(n.buffer) in frags:
                self.idx.setdefault(id(n.buffer), []).append(list(n.indices))
                if isinstance(n, S.BufferStore):
                    self.written.add(id(n.buffer))
            elif isinstance(n, E.Call) and n.name.startswith("atomic_"):
                self.atomic = True
            elif isinstance(n, S.Print):
                self.atomic = True   # prints run once per element: not replicable
        walk(body, f)

    def indexed_by(self, fid, k):
        """Every access of fid is [v0, ..., v_{k-1}]."""
        return all(len(ix) == k and all(ix[d] is self.vars[d] for d in range(k)) for ix in self.idx[fid])

    def indexed_by_column(self, fid):
        """Every access of the 1-D fid in this 2-D nest is [v1]."""
        return len(self.vars) == 2 and all(len(ix) == 1 and ix[0] is self.vars[1] for ix in self.idx[fid])

    def shifted_by(self, fid):
        """The shift (c0, c1) when every access of the 2-D fid is [v0 + c0, v1 + c1] with
        the same c0, c1 (expressions free of the loop's variables), else None."""
        offs = [index_shift(ix, self.vars) for ix in self.idx[fid]]
        if not offs or None in offs or len({tuple(map(str, o)) for o in offs}) != 1:
            return None
        return offs[0]


def window_of(exts, L):
    """The loop over the 2-D accumulator L covers rows [0, exts[0]) and columns [0, exts[1]):
    (exts[0] < L.M, exts[1] < L.N) says which bound its slots are checked against, or None
    when the extents are not a leading window of L. A window (`T.copy(acc_o[:valid_block_H,
    :], O_shared)` of GQA decode: 4 of its 64 rows) runs each element on the thread that
    holds it, as the whole tile does; without it the accumulator went to shared memory."""
    if len(exts) != 2 or None in exts or not (0 < exts[0] <= L.M and 0 < exts[1] <= L.N):
        return None
    return exts[0] < L.M, exts[1] < L.N


def index_shift(ix, vars_):
    """(c0, c1) when the 2-D index ix is (vars_[0] + c0, vars_[1] + c1) with c0, c1 free
    of vars_ (constants, or outer loop variables as in `acc[i + s * 32, j]`), else None."""
    from tilelang.arith.simplify import simplify
    from tilelang.ir.visitor import collect_vars
    if len(ix) != 2 or len(vars_) != 2:
        return None
    out = []
    for d in range(2):
        c = simplify(E.binop("-", ix[d], vars_[d]))
        if any(v is vars_[0] or v is vars_[1] for v in collect_vars(c)):
            return None
        out.append(c)
    return tuple(out)


def guarded_body(body):
    """The loop body does nothing outside one `if` (no else): iterations that a shifted
    accumulator access would take out of bounds can be skipped (they either do nothing or
    read out of bounds)."""
    return isinstance(body, S.IfThenElse) and body.else_body is None or isinstance(body, S.BufferStore)


def infer(launch, gemm_cfgs, depends, regions=None):
    """FragmentLayouts for one kernel. `gemm_cfgs`: id(Gemm) -> MmaConfig | WgmmaConfig | None;
    `regions`: thread_ranges.Regions (branches of a warp-specialized kernel run like
    uniform ones, on their range of threads)."""
    ranged = regions.branches if regions is not None else {}
    from tilelang.transform.lower_tile_ops import lower_copy, lower_fill
    frags = {}

    views = {}   # id(view) -> view: a view's base stays in registers only for group_reduce

    def decl(n):
        if isinstance(n, S.DeclBuffer):
            b = n.buffer
            if getattr(b, "alias_of", None) is not None:
                views[id(b)] = b
            elif b.scope == "local.fragment" and None not in _shape(b):
                frags[id(b)] = b
    walk(launch.body, decl)
    aliased = {id(views[v].alias_of) for v in _views_not_folded(launch.body, views)}
    out = FragmentLayouts(names={k: b.name for k, b in frags.items()})
    bad = {}   # id -> reason

    def mark(ids, why):
        for i in ids:
            if i in frags and i not in bad:
                bad[i] = why

    mark(aliased, "a view aliases it")
    touching = _ranges_touching(launch, regions, frags) if ranged else {}
    # registers belong to threads: a fragment that two thread ranges (or a range and the
    # whole block) touch cannot live in registers
    mark({i for i, rs in touching.items() if len(rs) > 1}, "used by more than one thread range")

    def touched(node):
        ids = set()

        def f(n):
            if isinstance(n, (E.BufferLoad, S.BufferStore)):
                ids.add(id(n.buffer))
            elif isinstance(n, S.Print) and hasattr(n.obj, "scope"):
                ids.add(id(n.obj))
        walk(node, f)
        return ids

    loops, reduces, gemms = [], [], []

    def where(st):
        return regions.range_of(st) if ranged else None

    def visit(st):
        if st is None:
            return
        if isinstance(st, S.SeqStmt):
            for s in st.stmts:
                visit(s)
        elif isinstance(st, S.DeclBuffer):
            return
        elif isinstance(st, S.For) and st.kind == S.PARALLEL:
            loops.append(_Loop(st, frags, where(st)))
        elif isinstance(st, TO.Copy):
            loops.append(_Loop(lower_copy(st), frags, where(st)))
        elif isinstance(st, TO.Fill):
            loops.append(_Loop(lower_fill(st), frags, where(st)))
        elif isinstance(st, TO.Reduce):
            reduces.append(st)
        elif isinstance(st, TO.Gemm):
            gemms.append(st)
        elif isinstance(st, TO.TileOp):
            ids = set()
            for k, v in vars(st).items():
                if hasattr(v, "buffer"):
                    ids.add(id(v.buffer))
            mark(ids | touched(st), f"operand of T.{getattr(st, 'op_name', type(st).__name__)}")
        elif isinstance(st, S.For) and not depends(st.extent) and not depends(st.min):
            mark(touched(S.Evaluate(st.extent)) | touched(S.Evaluate(st.min)), "loop bound")
            visit(st.body)
        elif isinstance(st, S.IfThenElse) and (not depends(st.cond) or id(st) in ranged):
            mark(touched(S.Evaluate(st.cond)), "branch condition")
            visit(st.then_body)
            visit(st.else_body)
        elif isinstance(st, S.LetStmt):
            mark(touched(S.Evaluate(st.value)), "let value")
            visit(st.body)
        elif isinstance(st, S.While) and not depends(st.cond):
            mark(touched(S.Evaluate(st.cond)), "loop condition")
            visit(st.body)
        elif _scalar_store(st, frags) and not depends(st.value):
            loops.append(_Loop(st, frags, where(st)))   # a replicated one-element fragment: a 0-D loop
        else:
            # a one-element fragment only read here stays replicated (every thread holds it)
            written = {id(n.buffer) for n in _stores(st)}
            ids = {i for i in touched(st) if i in written or i not in frags or None in _shape(frags[i]) or
                   any(d != 1 for d in _shape(frags[i]))}
            mark(ids, f"scalar or thread-divergent use ({type(st).__name__})")
    visit(launch.body)

    def seeds():
        want = {}
        for g in gemms:
            cfg = gemm_cfgs.get(id(g))
            c = id(g.C.buffer)
            lay = acc_layout_of(cfg)
            if c in frags and lay is not None and whole_region(g.C) and _fits(frags[c], lay):
                want.setdefault(c, []).append(lay)
            a_lay = a_register_layout(cfg)
            if a_lay is not None and id(g.A.buffer) in frags:
                want.setdefault(id(g.A.buffer), []).append(a_lay)
        return want

    while True:
        lay = {}
        conflict = None
        for fid, ls in seeds().items():
            if fid in bad:
                continue
            if len(set(ls)) > 1:
                conflict = (fid, "gemms want different accumulator layouts")
                break
            lay[fid] = ls[0]

        def assign(fid, want):
            nonlocal conflict
            if fid in bad or conflict or want is None or not _fits(frags[fid], want):
                return False
            cur = lay.get(fid)
            if cur is None:
                lay[fid] = want
                return True
            if cur != want:
                conflict = (fid, f"layouts meet: {cur} and {want}")
            return False
        changed = True
        while changed and not conflict:
            changed = False
            for lp in loops:
                if not lp.zero or None in lp.exts:
                    continue
                k = len(lp.exts)
                if k == 2:
                    src = _residue_source(lp, lay)
                    if src is not None:   # `cols[i, j] op= a[i, 4 c + j]` over an M x 4 tile
                        for f in lp.idx:
                            if lay.get(f) != src and frags[f].ndim == 2 and lp.indexed_by(f, 2):
                                changed |= assign(f, Tf32ColsLayout(src.M, src.WM, src.WN))
                        continue
                    accs = {lay[f] for f in lp.idx if isinstance(lay.get(f), TILE_2D) and lp.indexed_by(f, 2)
                            and [lay[f].M, lay[f].N] == lp.exts}
                    if len(accs) != 1:
                        continue
                    (L,) = accs
                    for f in lp.idx:
                        if frags[f].ndim == 2 and lp.indexed_by(f, 2):
                            changed |= assign(f, L)
                        elif frags[f].ndim == 1 and lp.indexed_by(f, 1) and hasattr(L, "row_layout"):
                            changed |= assign(f, L.row_layout())
                        elif frags[f].ndim == 1 and lp.indexed_by_column(f) and hasattr(L, "col_layout"):
                            changed |= assign(f, L.col_layout())
                elif k == 1:
                    vecs = {lay[f] for f in lp.idx if isinstance(lay.get(f), VECTOR_LAYOUTS) and
                            lp.indexed_by(f, 1) and lay[f].length == lp.exts[0]}
                    if len(vecs) != 1:
                        continue
                    (R,) = vecs
                    for f in lp.idx:
                        if frags[f].ndim == 1 and lp.indexed_by(f, 1):
                            changed |= assign(f, R)
            for r in reduces:
                L = lay.get(id(r.src.buffer))
                if isinstance(L, (AccLayout, Tf32ColsLayout)) and id(r.dst.buffer) in frags and reduce_dim(r) == 1 and \
                        whole_region(r.src) and whole_region(r.dst):
                    changed |= assign(id(r.dst.buffer), L.row_layout())
        if conflict:
            mark([conflict[0]], conflict[1])
            continue
        problems = _validate(lay, loops, reduces, gemms, gemm_cfgs, frags)
        if problems:
            for fid, why in problems:
                mark([fid], why)
            continue
        break
    gemm_ids = set(lay)
    for g in gemms:
        gemm_ids |= {id(r.buffer) for r in (g.A, g.B, g.C)}
    one = {f for f, b in frags.items() if not canon_shape(b)}
    # the element-wise tiles of the whole block; those of a thread range are laid out over its threads below
    in_range = {i for i, rs in touching.items() if any(r != regions.full for r in rs)}
    # a loop that reads a gemm operand held in shared memory (an mma.sync A fragment, say) can
    # still run over register tiles: only the register layouts of the gemms bind their groups
    # a column-group reduction's destination is stored by the quad leaders (shared memory)
    kept_out_of_tiles = {id(r.dst.buffer) for r in reduces if getattr(r.src.buffer, "alias_of", None) is not None}
    # a view reaches only the accumulator's registers (or shared memory), never a thread tile
    kept_out_of_tiles |= {id(v.alias_of) for v in views.values()} - set(lay)
    # a user's Fragment on a fragment no gemm constrains is its register layout (layout/annotated.py)
    placed = gemm_ids | set(bad) | in_range | kept_out_of_tiles
    users = {f: b.layout for f, b in frags.items() if isinstance(getattr(b, "layout", None), Fragment) and
             f not in placed}
    annotated, out.not_honoured = infer_annotated(frags, users, loops, reduces, one, _nthreads(launch), mark,
                                                  skip=placed, pinned=set(lay)) if users else ({}, {})
    lay.update(infer_tiles(frags, placed | set(annotated) | set(bad), loops, reduces, one,
                           _nthreads(launch), mark,
                           taint=set(lay) & set(frags)))
    lay.update(annotated)
    if in_range:
        skip = gemm_ids | set(bad) | set(lay) | kept_out_of_tiles
        lay.update(_range_tiles(frags, touching, regions, skip, loops, reduces, one, mark))
    out.layouts = lay
    for fid, b in frags.items():
        if fid in lay:
            out.report.append((b.name, lay[fid], "registers"))
        else:
            out.report.append((b.name, "shared", bad.get(fid, "no gemm accumulator layout reaches it")))
    return out


def _range_tiles(frags, touching, regions, skip, loops, reduces, one, mark):
    """Thread tiles of the fragments that one warp-aligned thread range alone touches
    (`if tx < 32: ... else: ...`), laid out over that range's threads by its own loops:
    thread lo + t plays thread t there, as the range's code does (`tl_tid = threadIdx.x - lo`).
    Fragments of a reduction stay in shared memory: a register-tile reduction may exchange
    partials through the block's one shared scratch, and the ranges run at the same time."""
    out = {}
    red = {id(x.buffer) for r in reduces for x in (r.src, r.dst)}
    for R in sorted({r for rs in touching.values() for r in rs if r != regions.full}, key=lambda r: r.lo):
        mine = {i for i, rs in touching.items() if rs == {R}} - skip - red
        if mine:
            out.update(infer_tiles(frags, set(frags) - mine, [lp for lp in loops if lp.range == R], [],
                                   one & mine, R.size, mark))
    return out


def _ranges_touching(launch, regions, frags):
    """{id(fragment): the thread ranges whose statements touch it} (analysis/thread_ranges.py)."""
    seen = {}

    def f(n):
        if isinstance(n, (S.BufferStore, S.Evaluate, TO.TileOp, S.Print)):
            ids = set()
            walk(n, lambda m: ids.add(id(m.buffer)) if isinstance(m, (E.BufferLoad, S.BufferStore)) and
                 id(m.buffer) in frags else None)
            if isinstance(n, TO.TileOp):
                ids.update(id(v.buffer) for v in vars(n).values() if hasattr(v, "buffer") and id(v.buffer) in frags)
            for i in ids:
                seen.setdefault(i, set()).add(regions.range_of(n))
    walk(launch.body, f)
    return seen


def _nthreads(launch):
    n = 1
    for t in launch.threads:
        n *= int(t)
    return n


def _scalar_store(st, frags):
    """A block-level store whose fragment operands all have one element, indexed by 0:
    every thread runs it on its replicated copy."""
    if not isinstance(st, S.BufferStore):
        return False
    ok = [True]

    def f(n):
        if isinstance(n, (E.BufferLoad, S.BufferStore)) and id(n.buffer) in frags:
            if canon_shape(n.buffer) or any(E.const_int_value(i) != 0 for i in n.indices):
                ok[0] = False
    walk(st, f)
    return ok[0]


def _validate(lay, loops, reduces, gemms, gemm_cfgs, frags):
    """[(id, reason)] of register fragments some use cannot follow."""
    bad = []
    for lp in loops:
        regs = [f for f in lp.idx if f in lay]
        if not regs:
            continue
        accs = {lay[f] for f in regs if isinstance(lay[f], TILE_2D)}
        rows = {lay[f] for f in regs if isinstance(lay[f], RowLayout)}
        col_vecs = {lay[f] for f in regs if isinstance(lay[f], ColLayout)}
        ok = lp.zero and len(accs) <= 1 and len(rows) <= 1 and len(col_vecs) <= 1 and \
            (accs or len(rows | col_vecs) <= 1)
        src = _residue_source(lp, lay)
        if src is not None:
            cols = Tf32ColsLayout(src.M, src.WM, src.WN)
            ok = all(lay[f] == src or lay[f] == cols and lp.indexed_by(f, 2) for f in regs) and not lp.atomic
        elif ok and accs:
            (L,) = accs
            ok = window_of(lp.exts, L) is not None and all(lp.indexed_by(f, 2) for f in regs if lay[f] == L) and \
                all(hasattr(L, "row_layout") and lay[f] == L.row_layout() and lp.indexed_by(f, 1) or
                    hasattr(L, "col_layout") and lay[f] == L.col_layout() and lp.indexed_by_column(f)
                    for f in regs if lay[f] != L)
            # element-wise only: the registers of the M x K A layout are no accumulator's
            ok = ok and (isinstance(L, AccLayout) or window_of(lp.exts, L) == (False, False))
            if not ok and lp.exts == [L.M, L.N] and all(lay[f] == L for f in regs) and lp.guarded:
                # `X[i, j] = acc[i + c0, j + c1]` (a shifted window of the accumulator):
                # each thread runs the iterations whose element it holds
                shifts = [lp.shifted_by(f) for f in regs]
                ok = None not in shifts and len({tuple(map(str, x)) for x in shifts}) == 1
        elif ok:
            (R,) = rows | col_vecs
            ok = lp.exts == [R.length] and all(lp.indexed_by(f, 1) for f in regs) and not lp.atomic
        if not ok:
            bad += [(f, "a T.Parallel loop that does not follow its layout") for f in regs]
    for r in reduces:
        s, d = id(r.src.buffer), id(r.dst.buffer)
        base = getattr(r.src.buffer, "alias_of", None)
        if base is not None:
            if id(base) in lay or d in lay:
                g = group_reduce(r, lay.get(id(base)))
                if g is None or d in lay:
                    bad += [(f, "a reduction over a view that is not its column groups")
                            for f in (id(base), d) if f in lay]
            continue
        if s not in lay and d not in lay:
            continue
        L = lay.get(s)
        # into its row layout, or (rows of another layout met it) into a 1-D vector in
        # shared memory that the reduction's row holders store
        ok = isinstance(L, (AccLayout, Tf32ColsLayout)) and (lay.get(d) == L.row_layout() or
                                           d not in lay and r.dst.buffer.ndim == 1) and \
            reduce_dim(r) == 1 and whole_region(r.src) and whole_region(r.dst)
        if not ok:
            bad += [(f, "a reduction other than dim=1 of an accumulator into its rows") for f in (s, d) if f in lay]
    for g in gemms:
        cfg = gemm_cfgs.get(id(g))
        c, a, b = id(g.C.buffer), id(g.A.buffer), id(g.B.buffer)
        if c in lay and (lay[c] != acc_layout_of(cfg) or not whole_region(g.C)):
            bad.append((c, "gemm accumulator of another layout"))
        if a in lay and not (lay[a] == a_register_layout(cfg) and whole_region(g.A)):
            bad.append((a, "gemm A operand that this gemm cannot read from registers"))
        if b in lay:
            bad.append((b, "gemm B operand"))
    return bad


def _views_not_folded(body, views):
    """ids of the views other than split views that only column-group reductions name
    (element accesses of split views were folded into their base:
    transform/fold_fragment_views.py)."""
    from tilelang.transform.fold_fragment_views import split_view
    out = {i for i, v in views.items() if split_view(v) is None}

    def f(n):
        if isinstance(n, (E.BufferLoad, S.BufferStore)) and id(n.buffer) in views:
            out.add(id(n.buffer))
        elif isinstance(n, TO.TileOp):
            for k, v in vars(n).items():
                b = getattr(v, "buffer", None)
                if b is not None and id(b) in views and not (isinstance(n, TO.Reduce) and k == "src" and
                                                             group_reduce(n) is not None):
                    out.add(id(b))
    walk(body, f)
    return out


@dataclass(frozen=True)
class GroupReduce:
    """`T.reduce_*(view, dst, dim=-1)` where view splits the last dimension of a 2-D
    accumulator (M, A * B) into (M, A, B): dst[i, g] combines columns [g * B, (g + 1) * B)
    of row i. With B a multiple of 8 inside one warp's columns, a group's columns are held
    by the 4 lanes of a quad (MmaAccLayout: lane & 3 picks column pairs of each 8-column
    strip), so a thread combines its slots of the group and the quad exchanges partials
    (ops/reduce.py emit_group_reduce); dst (M, A) lives in shared memory."""
    L: AccLayout
    A: int
    B: int

    @property
    def groups_per_warp(self):
        return self.L.N // self.L.WN // self.B


def group_reduce(r, L=None):
    """The GroupReduce of reduction `r` (L: the layout of the view's base, when known),
    or None when `r` is not one."""
    from tilelang.transform.fold_fragment_views import split_view
    sv = split_view(r.src.buffer)
    if sv is None:
        return None
    base, A, B = sv
    if base.ndim != 2 or reduce_dim(r) != 2 or not (whole_region(r.src) and whole_region(r.dst)):
        return None
    if _shape(r.dst.buffer) != [_shape(base)[0], A]:
        return None
    if L is None:
        return GroupReduce(None, A, B)
    if not isinstance(L, AccLayout) or B % 8 or (L.N // L.WN) % B:
        return None
    return GroupReduce(L, A, B)


def _residue_source(lp, lay):
    """The Tf32ALayout L when `lp` is a 2-D nest over an L.M x 4 tile reading an L-layout
    fragment only at [i, e + j] (e free of i, j and a multiple of 4): each thread's
    columns of such a fragment are t mod 4, so the nest runs on Tf32ColsLayout's threads."""
    if not lp.zero or len(lp.exts) != 2 or lp.exts[1] != 4:
        return None
    srcs = {lay[f] for f in lp.idx if isinstance(lay.get(f), Tf32ALayout)}
    if len(srcs) != 1:
        return None
    (L,) = srcs
    if lp.exts[0] != L.M:
        return None
    for f in lp.idx:
        if lay.get(f) == L and not all(residue_offset(ix, lp.vars) is not None for ix in lp.idx[f]):
            return None
    return L


def residue_offset(ix, vars_):
    """e when the 2-D index ix is (vars_[0], e + vars_[1]) with e free of vars_ and a
    multiple of 4 for every value of its variables, else None."""
    from tilelang.arith.simplify import simplify, linear_form
    from tilelang.ir.visitor import collect_vars
    if len(ix) != 2 or ix[0] is not vars_[0]:
        return None
    e = simplify(E.binop("-", ix[1], vars_[1]))
    if any(v is vars_[0] or v is vars_[1] for v in collect_vars(e)):
        return None
    lin = linear_form(e)
    if lin is None or lin[1] % 4 or any(c % 4 for _, c in lin[0].values()):
        return None
    return e


def _stores(node):
    out = []
    walk(node, lambda n: out.append(n) if isinstance(n, S.BufferStore) else None)
    return out


def format_report(fl):
    lines = ["fragment layouts:"]
    for name, lay, why in fl.report:
        lines.append(f"  {name:20s} {lay if isinstance(lay, str) else lay.layout():36s} {why}")
    return "\n".join(lines) + "\n"
