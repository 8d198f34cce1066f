"""Tile copies of a pipelined sm_90a GEMM loop as bulk tensor copies (TMA).

A copy `S[i, j] = A[r0 + i, c0 + j]` (optionally `if_then_else(bounds, A[...], 0)`)
of a whole 2-D shared tile in the `tl::sw128` layout from a contiguous 16-bit (or fp8) global
kernel parameter whose strides are compile-time multiples of 16 bytes becomes
`C / 64` bulk tensor copies of R x 64 boxes, issued by one thread,
completing on an mbarrier (`include/tl_cuda/tma.h`); a tile in `tl::sw64` / `sw32` (a
32- or 16-wide K tile of wgmma) takes boxes 32 / 16 columns wide; a tile whose annotated layout
is exactly one of the hardware swizzles (8-bit tiles for now) takes boxes one atom row wide, and a
row-major 8-bit tile one unswizzled box (`tile_swizzle_bytes`, `plain_row_bytes`: the packed
operand of a dequantizing GEMM). The host encodes one tensor
map (`CU_TENSOR_MAP_SWIZZLE_128B` (64B, 32B), whose shared layout is exactly sw128's) per copy
in the launcher (runtime.py) and passes it as a `const __grid_constant__`
parameter. Boxes that run past the tensor's edge are zero-filled by the hardware,
which is what the bound-check selects that T.copy adds would give; any other
select or guard keeps the cp.async path. The source may have up to 5 dimensions
(`K[b, s0 + i, h, j]` in attention): the tile's columns run along the last, its rows
along another, and every other index is fixed per copy (a box extent of 1 there
leaves the shared layout that of the 2-D box).

T.tma_copy (`match_tma(views=True)`, plan/copy_forms.py) also moves a slot of a user's
`[stages, R, C]` ring (`_slot_view`) and a row-major tile of 1- to 8-byte elements as one
unswizzled box.

On by default for sm_90a; `pass_configs={"tl.disable_tma_lower": True}` or
TILELANG_CUDA_TMA=0 turns it off."""
from __future__ import annotations

from dataclasses import dataclass

from tilelang.ir import expr as E
from tilelang.ir.visitor import collect_vars
from tilelang.arith.simplify import simplify, linear_form
from tilelang.backend.cuda.analysis.facts import parallel_nest
from tilelang.backend.cuda.ops.vector_access import is_bound_atom, offset_aligned16


@dataclass
class TmaCopy:
    src: object          # the global Buffer (a kernel parameter)
    dst: object          # the shared Buffer (sw128, pipelined)
    rows: int            # R: tile rows (box outer extent)
    cols: int            # C: tile columns, a multiple of 64 (C / 64 boxes)
    row0: object         # PrimExpr: the tile's first global row (may use the loop var)
    col0: object         # PrimExpr: its first global column
    nbytes: int          # bytes one issue of this copy delivers
    row_dim: int = 0     # the source dimension of the tile's rows (columns: the last)
    fixed: dict = None   # source dimension -> its index, for the dimensions besides those two
    width: int = 64      # columns of one box: the tile's swizzle strip (16-bit sw128: 64, sw64: 32,
                         # sw32: 16; fp8: 128, 64, 32)
    row_slabs: int = 1   # the tile's rows are stored in tl::slab_row<row_slabs> order: boxes of 16 rows
    elem_bytes: int = 2  # bytes of one element (fp8: 1): the swizzle is width * elem_bytes
    plain: bool = False  # a row-major tile, one box per row run, no swizzle
    slab_view: bool = False  # slab_row order written by one box per strip (slab_view_map)
    dst_offset: object = None  # elements from the buffer's start to the tile (a slot view, `views`)
    flat: object = None  # a plain bulk copy (`_bulk_run`): the run's first element in its row-major
                         # tensor; nbytes from there, no tensor map

    @property
    def box_rows(self):
        return self.rows if self.row_slabs == 1 else 16

    def stored_row(self, r):
        """tl::slab_row<row_slabs>(r): where row r of the tile is stored (16-row runs stay together)."""
        s = self.row_slabs
        t = r >> 4
        w, sl = t // s, t % s
        return ((w >> 2) * s + sl) * 64 + (w & 3) * 16 + (r & 15)

    def boxes(self):
        """(first tile row, stored row, first column) of every box of one issue (a plain
        bulk copy: one)."""
        if self.flat is not None:
            return [(0, 0, 0)]
        step = 16 if self.row_slabs > 1 and not self.slab_view else self.rows
        return [(r, self.stored_row(r), c) for c in range(0, self.cols, self.width)
                for r in range(0, self.rows, step)]

    def slab_view_map(self):
        """The tensor map that writes a whole strip of a tile stored in slab_row order
        with ONE box (instead of one box per 16-row run, 8 for a 128-row tile on one
        warpgroup): the source's rows seen as (16 rows, 4 warps, row_slabs slabs,
        warpgroups), each with its own row stride, listed in the order the tile stores
        them (the box fills shared memory innermost dimension first). Global row
        row0 + i + 16 S w + 16 s + 64 S g lands at stored row 64 (S g + s) + 16 w + i,
        tl::slab_row<S>'s order. The row dimension's extent is the rows minus the
        tile's last run (R - 16): a tile that starts at row0 <= rows - R is read
        exactly; only tiles known to be in bounds use it (match_tma).
        Returns (extra dims, their row strides, their box extents), after the 16-row one."""
        S, wgs = self.row_slabs, self.rows // (64 * self.row_slabs)
        dims = [(4, 16 * S), (S, 16)] + ([(wgs, 64 * S)] if wgs > 1 else [])
        return [d for d, _ in dims], [r for _, r in dims], [d for d, _ in dims]

    @property
    def swizzle_bytes(self):
        return self.width * self.elem_bytes

    @property
    def swizzle_code(self):
        """CUtensorMapSwizzle of the box: 128B (3), 64B (2), 32B (1), none (0)."""
        return 0 if self.plain else {128: 3, 64: 2, 32: 1}[self.swizzle_bytes]

    def coords(self, row0, col0):
        """Every source dimension's index for a box at (row0, col0), innermost first
        (the order of the tensor map and of the copy instruction)."""
        n = self.src.ndim
        out = [(self.fixed or {}).get(d) for d in range(n)]
        out[self.row_dim], out[n - 1] = row0, col0
        if self.slab_view:   # the map's run, warp, slab (and warpgroup) dimensions start at 0
            return out[::-1] + [0] * len(self.slab_view_map()[0])
        return out[::-1]


def _zero(e):
    return E.const_int_value(simplify(e)) == 0


def tile_swizzle_bytes(pd, dst):
    """Bytes of one swizzle-atom row of shared tile `dst` as a TMA box writes it, or 0:
    our tl::sw128 / sw64 / sw32 placements (16-bit tiles), or a user's annotated layout
    (`make_swizzled_layout`, e.g. the packed uint8 tile of a dequantizing GEMM) that is
    exactly a TMA swizzle, strip by strip (layout/swizzle.py `is_tma_wgmma_compatible`)."""
    if pd.swizzle:   # bytes of the strip: 16-bit tiles, and fp8 gemm operands (ops/wgmma.py)
        return pd.swizzle
    # (8-bit tiles only for now: the dequantizing GEMMs' packed operands; a kept 16-bit
    # annotation, e.g. a half-bank swizzle, stays on cp.async until measured on the GPU)
    if pd.layout is None or pd.row_slabs != 1 or dst.dtype.bits != 8:
        return 0
    from tilelang.layout.swizzle import detect_swizzle_mode, is_tma_wgmma_compatible
    mode = detect_swizzle_mode(pd.layout, dst)
    if mode.is_none() or not is_tma_wgmma_compatible(pd.layout, dst):
        return 0
    return mode.value


def plain_row_bytes(pd, dst, views=False):
    """Bytes of a row of shared tile `dst` stored row-major without padding, where one
    unswizzled TMA box (rows of 16-byte multiples, at most 256 elements) writes it
    exactly (the packed uint8 tile of a dequantizing GEMM without a layout); else 0.
    `views`: `dst` may have leading (slot) dimensions, the tile being its last two."""
    if pd.swizzle or pd.layout is not None or pd.row_slabs != 1 or pd.strides is None or \
            not (dst.ndim == 2 or views and dst.ndim > 2):
        return 0
    C = E.const_int_value(dst.shape[-1])
    if C is None or C > 256 or [E.const_int_value(x) for x in pd.strides[-2:]] != [C, 1]:
        return 0
    nbytes = C * dst.dtype.itemsize
    return nbytes if nbytes % 16 == 0 else 0


def _slot_view(store, vars_, pd, plan):
    """The element offset of the tile `store` writes in its shared buffer when the
    buffer's leading dimensions are fixed by the copy (`a_shared[slot, i, j]`, a slot of a
    user's `[stages, R, C]` ring): the tile is stored row-major without padding, or in the
    buffer's swizzle with one R x C tile per slot (ops/wgmma.py `operand_offset`); the
    offset is the same for all threads (an index that is no thread's own) and aligned for
    a tensor copy's shared address (128 bytes, a swizzle's whole 8-row atom). None
    otherwise; 0 for a 2-D tile."""
    dst = store.buffer
    lead = dst.ndim - 2
    if lead == 0:
        return E.IntImm(0, "int32")
    shape = [E.const_int_value(d) for d in dst.shape]
    if pd.layout is not None or pd.row_slabs != 1 or None in shape:
        return None
    if pd.swizzle:   # slots of R x C swizzled tiles, one after the other
        strides, align = [0] * dst.ndim, max(128, 8 * pd.swizzle)
        for d in reversed(range(lead)):
            strides[d] = shape[d + 1] * (strides[d + 1] if d + 1 < lead else shape[-1])
    else:
        strides, align = [E.const_int_value(x) for x in (pd.strides or [])], 128
        if len(strides) != dst.ndim or None in strides or strides[-2:] != [shape[-1], 1]:
            return None
    off = E.IntImm(0, "int32")
    for d in range(lead):
        idx = store.indices[d]
        if any(x is v for x in collect_vars(idx) for v in vars_) or plan.depends(idx) or _has_load(idx):
            return None
        off = E.binop("+", off, E.binop("*", idx, E.IntImm(strides[d], "int32")))
    off = simplify(off)
    return off if offset_aligned16(off, dst.dtype.itemsize, align) else None


def _column_strip(store, vars_, exts, pd, plan, width):
    """(columns, first column) when `store` writes whole swizzle strips of its swizzled
    tile, columns c0 + v1 with c0 the same for every thread and a multiple of the strip
    width (`KV_shared_l[:, j * 64:(j + 1) * 64]` of the hand warp-specialized FlashMLA, in
    a `T.unroll` loop over K tiles); its strips then lie where the whole tile's do, c0 * R
    elements into it (ops/wgmma.py operand_offset). None otherwise."""
    from tilelang.backend.cuda.ops.wgmma import _first_column
    idx = simplify(store.indices[-1])
    if not pd.swizzle or pd.row_slabs != 1 or len(vars_) != 2:
        return None
    lin = linear_form(idx)
    if lin is None:
        return None
    terms, _ = lin
    coef = {id(a): c for a, c in terms.values() if isinstance(a, E.Var)}
    if coef.get(id(vars_[1])) != 1:
        return None
    c0 = simplify(E.binop("-", idx, vars_[1]))
    if any(x is w for x in collect_vars(c0) for w in vars_) or plan.depends(c0) or _has_load(c0):
        return None
    cols, C = E.const_int_value(exts[1]), E.const_int_value(store.buffer.shape[-1])
    span = _first_column(c0, width, getattr(plan, "loop_ranges", None))
    if cols is None or C is None or span is None or span[0] < 0 or span[1] + cols > C or span == (0, 0) and cols == C:
        return None   # (the whole tile: no strip)
    return cols, c0


def match_tma(st, plan, param_ids, views=False):
    """A TmaCopy for the T.Parallel copy nest `st`, or None (cp.async then). `views`
    (T.tma_copy): the tile may also be a slot of a larger shared buffer (`_slot_view`), and
    a row-major tile of 1- to 8-byte elements one unswizzled box (`plain_row_bytes`).
    Without `views`, a row-major tile that one contiguous run of its tensor fills (a row of
    attention's log-sum-exp) is one plain bulk copy (`_bulk_run`)."""
    t = _tensor_tile(st, plan, param_ids, views)
    if t is None and not views and getattr(plan.options, "tma_bulk_runs", True):
        t = _bulk_run(st, plan, param_ids)
    return t


def _bulk_run(st, plan, param_ids):
    """A TmaCopy (`flat`: no tensor map) for the copy nest `st` when it fills a whole
    row-major shared tile (or each slot of a pipelined one) from one contiguous run of a
    global tensor, 16-byte aligned in every block and iteration and a multiple of 16 bytes
    long, without a bound check (a plain bulk copy fills no zeros): the `lse` and `Delta`
    rows of FlashAttention's backward loop, which kept the whole loop on cp.async."""
    from tilelang.backend.cuda.ops.tma_store import match_tile_copy, _flat_offset
    t = match_tile_copy(st, plan, param_ids, to_global=False, slots=True)
    if t is None or not t.contiguous:
        return None
    g, s = t.dst, t.src   # (TmaStore names its sides for a store: dst is the global one)
    n = 1
    for d in s.shape:
        n *= E.const_int_value(d)
    es = s.dtype.itemsize
    return TmaCopy(g, s, 1, n, E.IntImm(0, "int32"), E.IntImm(0, "int32"), n * es, elem_bytes=es,
                   flat=simplify(_flat_offset(g, t.origin)))


def _tensor_tile(st, plan, param_ids, views):
    """match_tma's tiles that take a tensor map (its docstring)."""
    from tilelang.backend.cuda.ops.vector_copy import match_copy
    vars_, mins, exts, inner = parallel_nest(st)
    m = match_copy(inner)
    if m is None or len(vars_) != 2:
        return None
    guard, store, load, sel = m
    dst, src = store.buffer, load.buffer
    pd = plan.placements.get(id(dst))
    if guard is not None or pd is None or not 2 <= src.ndim <= 5 or not (dst.ndim == 2 or views and dst.ndim > 2):
        return None
    bits = (8, 16, 32, 64) if views else (8, 16)
    if id(src) not in param_ids or src.dtype.bits not in bits or src.dtype.bits != dst.dtype.bits or \
            getattr(src, "strides", None) is not None:
        return None
    dst_offset = _slot_view(store, vars_, pd, plan)
    if dst_offset is None:
        return None
    sw = tile_swizzle_bytes(pd, dst) if dst.ndim == 2 else pd.swizzle
    plain = not sw and (dst.dtype.bits == 8 or views) and plain_row_bytes(pd, dst, views)
    if plain:       # one box per row: its columns are the whole row
        sw = plain
    if not sw:
        return None
    # every stride (the product of the later dimensions) a constant multiple of 16 bytes
    inner = [E.const_int_value(d) for d in src.shape[1:]]
    if None in inner or any(x <= 0 for x in inner) or (inner[-1] * src.dtype.itemsize) % 16:
        return None
    R, C = (E.const_int_value(d) for d in dst.shape[-2:])
    width = sw // dst.dtype.itemsize   # one box per swizzle strip
    strip = _column_strip(store, vars_, exts, pd, plan, width) if views and not plain else None
    if strip is not None:   # whole strips of the tile's columns: C of them, from column c0
        C, c0 = strip
        dst_offset = simplify(E.binop("+", dst_offset, E.binop("*", c0, E.IntImm(R, "int32"))))
    if R is None or C is None or R > 256 or R % 8 or C % width or R % (16 * pd.row_slabs):
        return None
    if [E.const_int_value(e) for e in exts] != [R, C] or not all(E.const_int_value(x) == 0 for x in mins):
        return None
    # dst[..., v0, v1] exactly (or dst[..., v0, c0 + v1]: a column strip)
    if not isinstance(store.indices[-2], E.Var) or store.indices[-2] is not vars_[0] or \
            strip is None and store.indices[-1] is not vars_[1]:
        return None
    # the tile's rows run along the one other dimension that indexes with vars_[0]
    n = src.ndim
    uses = [any(x is vars_[0] for x in collect_vars(load.indices[d])) for d in range(n - 1)]
    if uses.count(True) != 1:
        return None
    row_dim = uses.index(True)
    origin = []
    for d, v in ((row_dim, vars_[0]), (n - 1, vars_[1])):
        idx = simplify(load.indices[d])
        lin = linear_form(idx)
        if lin is None:
            return None
        terms, _ = lin
        coef = {id(a): c for a, c in terms.values() if isinstance(a, E.Var)}
        if coef.get(id(v)) != 1:
            return None
        rest = simplify(E.binop("-", idx, v))
        if any(x is w for x in collect_vars(rest) for w in vars_):
            return None
        if plan.depends(rest):
            return None
        origin.append(rest)
    if not offset_aligned16(origin[1], src.dtype.itemsize):   # the box's first column
        return None
    fixed = {}
    for d in range(n - 1):
        if d != row_dim:
            idx = simplify(load.indices[d])
            if any(x is w for x in collect_vars(idx) for w in vars_) or plan.depends(idx):
                return None
            fixed[d] = idx
    row_bounded = False
    if sel is not None:
        for atom in E.conjuncts(sel):
            if not any(is_bound_atom(atom, load.indices[d], src.shape[d]) for d in range(n)):
                return None
            row_bounded = row_bounded or is_bound_atom(atom, load.indices[row_dim], src.shape[row_dim])
    # a slab_row tile in one box per strip: a 2-D source (the view takes 3 or 4 more map
    # dimensions of the 5) of at least R rows, known when compiling, which the copy reads
    # without a bound check
    slab_view = pd.row_slabs > 1 and n == 2 and not row_bounded and (E.const_int_value(src.shape[0]) or 0) >= R \
        and getattr(plan.options, "tma_slab_box", True)
    return TmaCopy(src, dst, R, C, origin[0], origin[1], R * C * dst.dtype.itemsize, row_dim, fixed or None, width,
                   pd.row_slabs, dst.dtype.itemsize, bool(plain), slab_view,
                   None if _zero(dst_offset) else dst_offset)


@dataclass
class Multicast:
    """Two blocks of a cluster along grid axis `axis` load the tiles of `shared` once
    between them: each issues half of every such tile with `.multicast::cluster`, so
    both copies land in both blocks (half the L2 traffic for that operand)."""
    axis: int            # 0: pairs along blockIdx.x, 1: along blockIdx.y
    shared: list         # the TmaCopy of the loop both blocks load alike
    halves: dict         # id(TmaCopy) -> "strips" (alternate 64-column strips) or "rows"


def _top_level(body, loop):
    """`loop` runs on every thread of the block exactly once: reached from the kernel
    body through sequences only (no enclosing loop, branch or let)."""
    from tilelang.ir import stmt as S
    if body is loop:
        return True
    if isinstance(body, S.SeqStmt):
        return any(_top_level(s, loop) for s in body.stmts)
    return False


def _bound_vars(body):
    """Variables bound inside the kernel body (lets, loops): their values may differ
    between blocks in ways the launch's block indices do not show."""
    from tilelang.ir import stmt as S
    from tilelang.ir.visitor import walk
    out = set()

    def f(n):
        if isinstance(n, (S.LetStmt, S.For)):
            out.add(id(n.var))
    walk(body, f)
    return out


def _has_load(e):
    from tilelang.ir.visitor import walk
    found = []
    walk(e, lambda n: found.append(n) if isinstance(n, E.BufferLoad) else None)
    return bool(found)


def plan_multicast(launch, loop, tmas, enabled):
    """A Multicast for the TMA GEMM loop `loop` of `launch`, or None. Pairs of blocks
    along a grid axis whose extent is an even constant share the tiles whose origin
    does not involve that axis' block index. Both blocks must run the loop alike: it
    sits at the kernel's top level, its bounds involve no block index and no loaded
    value, and the kernel asks for no clusters of its own. Opt-in (`enabled`:
    CudaOptions.tma_multicast): correct on the H200, but with the loop's producer inside a
    consumer warp the paired blocks wait on each other and the GEMM ran 25-40% slower
    (benchmarks/results/2026-11-29_h200_gemm_multicast_pairs.json)."""
    if not enabled or launch.annotations.get("cluster_dims") is not None:
        return None
    if launch.annotations.get("block_remap") is not None:   # T.use_swizzle: cluster neighbours
        return None                                          # need not share a block row or column
    if not _top_level(launch.body, loop):
        return None
    from tilelang.backend.cuda.analysis.launch_config import called
    from tilelang.ir import mbarrier as M
    from tilelang.ir.cluster import CLUSTER_DEVICE_CALLS
    if called(launch.body) & (M.CLUSTER_CALLS | CLUSTER_DEVICE_CALLS):
        return None
    blocks = {id(v) for v in launch.block_vars}
    bounds = [loop.min, loop.extent]
    if any(_has_load(b) or any(id(v) in blocks for v in collect_vars(b)) for b in bounds):
        return None
    inner = _bound_vars(launch.body) - {id(loop.var)}
    best = None
    for axis, (bv, g) in enumerate(zip(launch.block_vars[:2], launch.grid[:2])):
        gv = E.const_int_value(g)
        if gv is None or gv < 2 or gv % 2:
            continue
        shared, halves = [], {}
        for t in tmas:
            if t.fixed or t.plain or t.flat is not None or t.width != 64 or t.row_slabs > 1 or t.elem_bytes != 2:   # the halves: 2-D
                # 16-bit sw128 tiles
                continue
            vs = collect_vars(t.row0) + collect_vars(t.col0)
            if _has_load(t.row0) or _has_load(t.col0) or any(id(v) in inner or v is bv for v in vs):
                continue
            if (t.cols // 64) % 2 == 0:
                halves[id(t)] = "strips"
            elif t.rows % 16 == 0:
                halves[id(t)] = "rows"
            else:
                continue
            shared.append(t)
        saved = sum(t.nbytes for t in shared)
        if shared and (best is None or saved > best[0]):
            best = (saved, Multicast(axis, shared, halves))
    return best[1] if best else None
