"""Copies of a whole shared tile into a global tensor as bulk stores (TMA, sm_90a):
`T.copy(S, G[r0, c0])` (and the store direction of `T.tma_copy`), whose lowered form is
the T.Parallel nest `G[o + i, ...] = S[i, ...]` (optionally guarded by G's bounds).

One thread issues the store, commits its bulk group and waits until the tile has been
read (`tma_store_wait<0, true>`); when the kernel touches G anywhere else it waits for
the writes too, so the copy is done before the next statement, as T.copy promises. The
tile's writers are ordered before it by the barrier the barrier planner puts there;
in such a kernel every barrier is preceded by each thread's proxy fence
(codegen_kernel.sync), which publishes the generic-proxy writes to the bulk copy.

Two forms:
- a tensor map (`tl::tma_store`, cp.async.bulk.tensor): the row-major tile is one box
  of G at the tile's origin; what lies outside G is not written (the guard's meaning);
- a plain bulk copy (`tl::tma_store_bulk`, cp.async.bulk): the tile is one contiguous
  run of G (it spans G's inner dimensions whole, no guard), so no tensor map is needed.

Conditions (else the threads store): G a dense kernel parameter whose strides are
multiples of 16 bytes, at most 5 dimensions, each tile dimension along one of G's in
order, box extents at most 256 and an innermost one of a multiple of 16 bytes; the tile
row-major in shared memory (no swizzle, padding or stages)."""
from __future__ import annotations

from dataclasses import dataclass

from tilelang.arith.simplify import simplify, linear_form
from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.visitor import collect_vars, walk, substitute
from tilelang.backend.cuda.analysis.facts import parallel_nest
from tilelang.backend.cuda.ops.vector_access import is_bound_atom, offset_aligned16

MAX_BOX = 256
# plan/copy_forms.py `share_store_waits`: the next statement, a bulk store too, waits for this
# one's tile to be read (bulk groups complete in order; printed as the form's note)
SHARED_WAIT = "its tile's read waited for with the next store's"


@dataclass
class TmaStore:
    dst: object          # the global Buffer (a kernel parameter)
    src: object          # the shared Buffer (the whole tile)
    origin: list         # PrimExpr per dimension of dst: the tile's first element
    box: list            # extent per dimension of dst (1 where no tile dimension runs)
    contiguous: bool     # one run of dst: a plain bulk copy, no tensor map
    param_name: str = ""
    strips: int = 0      # a 2-D tile in the 128-byte swizzle (an epilogue's staging tile,
                         # plan/kernel.py): one 64-column box per strip, 0 for a row-major tile

    def spec(self, bufs, env):
        """The tensor map (runtime.TensorMap): extents, byte strides and box innermost
        first, no swizzle (the element type only sizes a copy)."""
        from tilelang.backend.c.launch import py_expr
        g = self.dst
        strides, acc = [], g.dtype.itemsize
        for d in range(g.ndim - 1, 0, -1):
            acc *= E.const_int_value(g.shape[d])
            strides.append(acc)
        return {"buffer": bufs.index(g), "dims": [py_expr(E.convert(g.shape[d]), env) for d in range(g.ndim - 1, -1, -1)],
                "strides": strides, "box": self.box[::-1], "elem_bytes": g.dtype.itemsize,
                "swizzle": 3 if self.strips else 0}

    def strip_boxes(self):
        """(element offset of the strip in the tile, the box origin innermost first as
        PrimExprs) of every box of one store: the tile itself, or its 64-column strips
        (tl::sw128 keeps strip j, all rows, at j * rows * 64)."""
        if not self.strips:
            return [(0, list(reversed(self.origin)))]
        rows = E.const_int_value(self.src.shape[0])
        out = []
        for j in range(self.strips):
            o = list(reversed(self.origin))
            o[0] = simplify(E.binop("+", o[0], E.IntImm(64 * j)))
            out.append((j * rows * 64, o))
        return out


def _sw128_strips(plan, buf):
    """The 64-column strips of a 2-D 16-bit shared tile in the plain 128-byte swizzle
    (tl::sw128, one stage), else 0."""
    p = plan.placements.get(id(buf))
    if p is None or p.kind != "smem" or p.swizzle != 128 or p.layout is not None or p.stages != 1 or \
            getattr(p, "row_slabs", 1) != 1 or buf.ndim != 2 or buf.dtype.bits != 16:
        return 0
    cols = E.const_int_value(buf.shape[1])
    return cols // 64 if cols and cols % 64 == 0 else 0


def _row_major(plan, buf, slots=False):
    """Whether shared `buf` is stored row-major without padding (`slots`: each slot of a
    pipelined buffer is)."""
    p = plan.placements.get(id(buf))
    if p is None or p.kind != "smem" or p.swizzle or p.layout is not None or (p.stages != 1 and not slots):
        return False
    shape = [E.const_int_value(d) for d in buf.shape]
    want, acc = [], 1
    for d in reversed(shape):
        want.append(acc)
        acc *= d
    return list(p.strides) == want[::-1]


def match_tma_store(st, plan, param_ids, launch=None):
    """A TmaStore for the T.Parallel copy nest `st`, or None (the threads store)."""
    return match_tile_copy(st, plan, param_ids, to_global=True, launch=launch)


def match_tile_copy(st, plan, param_ids, to_global, launch=None, pointers=False, slots=False):
    """The copy nest `st` between a whole row-major shared tile and a box of a global
    tensor as a TmaStore (either direction: `to_global` says which), or None. Bounds of
    the global side (a guard of the store, a select of the load with 0 outside) are what
    the bulk copy does anyway. `launch`: block indices of a grid dimension of extent 1
    count as 0 (a tile at the origin of a tensor it spans may be one contiguous run).
    `pointers`: a tensor bound in the kernel (T.make_tensor) may be the global side of a
    contiguous run (no tensor map); one that needs a map is an error (the host cannot
    encode it). `slots`: the shared tile may be a pipelined buffer (its slot then)."""
    from tilelang.backend.cuda.ops.vector_copy import match_copy
    zero = {v: E.IntImm(0) for v, n in zip(launch.block_vars, launch.grid)
            if E.const_int_value(n) == 1} if launch is not None else {}
    vars_, mins, exts, inner = parallel_nest(st)
    m = match_copy(inner)
    if m is None:
        return None
    guard, store, load, sel = m
    if to_global:
        g, s, gidx, sidx, bounds = store.buffer, load.buffer, store.indices, load.indices, guard
        if sel is not None:
            return None
    else:
        g, s, gidx, sidx, bounds = load.buffer, store.buffer, load.indices, store.indices, sel
        if guard is not None:
            return None
    if g.scope != "global" or not s.scope.startswith("shared"):
        return None
    bound_in_kernel = pointers and getattr(plan.placements.get(id(g)), "kind", None) == "pointer"
    if (id(g) not in param_ids and not bound_in_kernel) or not _dense(g) or not 1 <= g.ndim <= 5:
        return None
    strips = _sw128_strips(plan, s) if to_global else 0
    if not (strips or _row_major(plan, s, slots)) or getattr(s, "alias_of", None) is not None:
        return None
    ext = [E.const_int_value(e) for e in exts]
    shape = [E.const_int_value(d) for d in s.shape]
    if None in ext or ext != shape or any(E.const_int_value(x) != 0 for x in mins):
        return None
    if len(sidx) != len(vars_) or not all(i is v for i, v in zip(sidx, vars_)):
        return None
    inner_dims = [E.const_int_value(d) for d in g.shape[1:]]
    if None in inner_dims:
        return None
    es = g.dtype.itemsize
    stride = es
    for d in reversed(inner_dims):
        stride *= d
        if stride % 16:
            return None
    # each tile variable indexes one dimension of G with coefficient 1, in order
    dim_of, origin = [], []
    for d, idx in enumerate(gidx):
        idx = simplify(substitute(idx, zero))
        used = [k for k, v in enumerate(vars_) if any(x is v for x in collect_vars(idx))]
        if len(used) > 1:
            return None
        if used:
            v = vars_[used[0]]
            lin = linear_form(idx)
            coef = {id(a): c for a, c in lin[0].values() if isinstance(a, E.Var)} if lin else {}
            if coef.get(id(v)) != 1:
                return None
            rest = simplify(E.binop("-", idx, v))
            if any(x is w for x in collect_vars(rest) for w in vars_):
                return None
            dim_of.append(used[0])
        else:
            rest = idx
        if plan.depends(rest):
            return None
        origin.append(rest)
    if dim_of != sorted(dim_of) or len(dim_of) != len(vars_):
        return None
    box = [1] * g.ndim
    for d, k in zip([d for d, idx in enumerate(gidx)
                     if any(x is v for x in collect_vars(idx) for v in vars_)], dim_of):
        box[d] = ext[k]
    if bounds is not None:
        live = []
        ranges = dict(zip(vars_, ext))
        if launch is not None:   # block indices of constant grid extents
            ranges.update({v: E.const_int_value(n) for v, n in zip(launch.block_vars, launch.grid)
                           if E.const_int_value(n) is not None})
        for atom in E.conjuncts(bounds):
            if _always(atom, ranges):
                continue   # always true: the tile lies inside the tensor in every block
            if not any(is_bound_atom(atom, gidx[d], g.shape[d]) for d in range(g.ndim)):
                return None
            live.append(atom)
        bounds = bounds if live else None
    if strips:   # the tile's columns run along G's last dimension: boxes of 64 columns
        if dim_of[-1] != 1 or not any(x is vars_[1] for x in collect_vars(gidx[-1])):
            return None
        box[-1] = 64
    contiguous = not strips and bounds is None and _one_run(g, box, origin)
    if bound_in_kernel and not contiguous:
        from tilelang.ir.errors import LoweringError
        raise LoweringError(f"a TMA copy of `{g.name}` needs a tensor map, which the host encodes from the "
                            f"tensor's address, but `{g.name}` is bound inside the device function body "
                            f"(T.make_tensor)", span=getattr(st, "span", None),
                            hint="copy one contiguous run of it (a plain bulk copy needs no tensor map), or drop "
                                 "prefer_instruction=\"tma\" (the threads copy)")
    if not contiguous and (max(box) > MAX_BOX or (box[-1] * es) % 16 or not offset_aligned16(origin[-1], es)):
        return None
    if contiguous and (_bytes(s) % 16 or not offset_aligned16(_flat_offset(g, origin), es)):
        return None
    return TmaStore(g, s, origin, box, contiguous, strips=strips)


def _dense(g):
    """No strides, or strides that are those of the dense row-major layout."""
    strides = getattr(g, "strides", None)
    if not strides:
        return True
    acc, want = 1, []
    for d in reversed(g.shape[1:]):
        acc *= E.const_int_value(d) or 0
        want.append(acc)
    return [E.const_int_value(s) for s in strides] == want[::-1] + [1]


def _always(atom, ranges):
    """Whether a bound `atom` (`a < b` or `a >= b`, a - b linear in variables of known
    ranges [0, n)) holds at every corner of the ranges, hence everywhere."""
    import itertools
    if not isinstance(atom, E.BinOp) or atom.op not in ("<", ">=") or \
            linear_form(simplify(E.binop("-", atom.a, atom.b))) is None:
        return False
    used = [v for v in ranges if any(x is v for x in collect_vars(atom))]
    if len(used) > 12 or any(id(x) not in {id(v) for v in used} for x in collect_vars(atom)):
        return False
    for ends in itertools.product(*[(0, ranges[v] - 1) for v in used]):
        v = simplify(substitute(atom, {x: E.IntImm(e) for x, e in zip(used, ends)}))
        if E.const_int_value(v) != 1:
            return False
    return True


def _flat_offset(g, origin):
    """The element offset of the box's first element in row-major tensor `g`."""
    offset, acc = E.IntImm(0), 1
    for d in reversed(range(g.ndim)):
        offset = E.binop("+", offset, E.binop("*", origin[d], E.IntImm(acc)))
        acc *= E.const_int_value(g.shape[d]) if d else 1
    return offset


def _bytes(buf):
    n = buf.dtype.itemsize
    for d in buf.shape:
        n *= E.const_int_value(d)
    return n


def _one_run(g, box, origin):
    """The box covers G's inner dimensions whole from index 0 (after its first
    dimension of extent > 1), so its elements are one contiguous run of G."""
    first = next((d for d, b in enumerate(box) if b != 1), g.ndim - 1)
    for d in range(first + 1, g.ndim):
        if box[d] != E.const_int_value(g.shape[d]) or E.const_int_value(origin[d]) != 0:
            return False
    if first == g.ndim - 1:   # a run inside one row: its start must be 16-byte aligned in every block
        return offset_aligned16(origin[first], g.dtype.itemsize)
    return True


def is_tma_store(st, cg) -> bool:
    from tilelang.transform.lower_tile_ops import PREFER_TMA
    return cg.options.bulk_tiles and isinstance(st, S.For) and st.kind == S.PARALLEL and \
        st.annotations.get(PREFER_TMA, True) and \
        match_tma_store(st, cg.plan, cg.param_bufs, cg.launch) is not None


def has_tma_store(cg) -> bool:
    """Whether the kernel has a copy nest that becomes a bulk store (its recorded form,
    plan/copy_forms.py; a nest without one: whether it matches)."""
    from tilelang.backend.cuda.plan.copy_form import copy_form
    found = []

    def f(n):
        form = copy_form(n)
        if not found and (form.kind == "tma_store" if form is not None else is_tma_store(n, cg)):
            found.append(n)
    walk(cg.launch.body, f)
    return bool(found)


def _touches_elsewhere(cg, st, g):
    """Whether the kernel accesses `g` outside the copy nest `st`."""
    own = set()
    walk(st, lambda n: own.add(id(n)))
    found = []

    def f(n):
        if id(n) not in own and isinstance(n, (E.BufferLoad, S.BufferStore)) and n.buffer is g:
            found.append(n)
        elif id(n) not in own and hasattr(n, "dst") and getattr(getattr(n, "dst", None), "buffer", None) is g:
            found.append(n)
        elif id(n) not in own and getattr(getattr(n, "src", None), "buffer", None) is g:
            found.append(n)
    walk(cg.launch.body, f)
    return bool(found)


def flat_origin(cg, t):
    """C++ for the element offset of the tile's origin in its (row-major) tensor."""
    return cg.expr(simplify(_flat_offset(t.dst, t.origin)))


def tensor_map_param(cg, t):
    """The kernel parameter holding the tensor map of `t`'s box (shared by copies of the
    same tensor and box)."""
    same = [u for u in cg.tmaps if isinstance(u, TmaStore) and u.dst is t.dst and u.box == t.box and
            bool(u.strips) == bool(t.strips)]
    if same:
        t.param_name = same[0].param_name
    else:
        t.param_name = cg.names.fresh(f"{t.dst.name}_desc")
        cg.tmaps.append(t)
    return t.param_name


def box_coords(cg, t):
    """The box origin as tensor-map coordinates (innermost dimension first)."""
    return ", ".join(cg.expr(o) for o in reversed(t.origin))


def emit_tma_store(cg, st, eviction=None) -> bool:
    """The copy nest `st` as one bulk store from thread 0; False to leave it to the threads.
    `eviction`: T.copy's L2 priority (include/tl_cuda/cache_hint.h)."""
    if not is_tma_store(st, cg) or cg.async_copy or cg.range != cg.plan.regions.full:
        return False
    t = match_tma_store(st, cg.plan, cg.param_bufs, cg.launch)
    if t is None:
        return False
    g, src = t.dst, cg.buf_name(t.src)
    cg.aligned[g.name] = max(cg.aligned.get(g.name, 1), 16)
    cg.w("if (tl_tid == 0) {")
    from tilelang.backend.cuda.ops.vector_copy import EVICTION_CODES
    hint = "" if eviction is None else f"_hint<{EVICTION_CODES[eviction]}>"
    if t.contiguous:
        cg.w(f"  tl::tma_store_bulk{hint}({cg.buf_name(g)} + {flat_origin(cg, t)}, {src}, {_bytes(t.src)});")
    else:
        m = tensor_map_param(cg, t)
        for off, coords in t.strip_boxes():
            at = f"{src} + {off}" if off else src
            cg.w(f"  tl::tma_store{hint}(&{m}, {at}, {', '.join(cg.expr(c) for c in coords)});")
    cg.w("  tl::tma_store_arrive();")
    from tilelang.backend.cuda.plan.copy_form import copy_form
    written = _touches_elsewhere(cg, st, g)
    if not written and getattr(copy_form(st), "why", "") == SHARED_WAIT:
        pass   # the next bulk store's wait covers this group (groups complete in order)
    elif written:
        cg.w("  tl::tma_store_wait<0, false>();   // written: the kernel reads or writes it again")
        cg.w("  tl::fence_proxy_async_global();")
    else:
        cg.w("  tl::tma_store_wait<0, true>();   // the tile is read: shared memory may be reused")
    cg.w("}")
    return True
