"""Register layouts for the fragments of a T.Kernel that are not gemm accumulators,
derived from the accumulators' MFMA layouts (as the CUDA backend derives its fragments'
layouts from mma/wgmma), before printing:

- the gemms whose accumulators meet in one T.Parallel nest or reduction (a FlashAttention's
  S and O, linked by the softmax statistics) get one MFMA shape and one split of the wave
  rows (`joint_tilings`), so that a row of the block sits in the same lanes in all of them;
- a 2-D fragment of an accumulator's shape, used only elementwise with it in T.Parallel
  nests over (i, j), takes its layout slot for slot ("tile": the softmax's P, its cast);
  if a gemm reads it as A, it must be the register operand that layout already is
  (fp16/bf16, whole rows per wave, K along its columns: tilelang/layout/mfma.py);
- a 2-D fragment read as the A operand of a gemm whose waves hold whole rows (and
  written elementwise, e.g. loaded from global memory) takes the operand layout that
  gemm reads (the accumulator layout of an M x K tile, tilelang/layout/mfma.py);
- a 1-D fragment of an accumulator's row count, indexed only by the row variable of such
  nests, of 1-D nests over its length, or written by a row reduction of a register
  fragment, is a "rows" vector: one register per tile row per lane.

A fragment that any other use touches (a block-level access, a column index, a reduction
from it, a mismatched layout) stays in LDS, where every thread can reach it; the demotions
repeat until every nest left in registers is consistent."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk
from tilelang.layout.mfma import choose_tiling, shapes_for, MfmaTiling, WAVE

REGISTER_A_DTYPES = ("float16", "bfloat16")


class _Nest:
    def __init__(self, loop):
        from tilelang.backend.hip.parallel import nest_of
        self.loop = loop
        self.vars, exts, body = nest_of(loop)
        if not self.vars:
            self.vars, exts, body = [loop.var], [loop.extent], loop.body
        self.exts = [E.const_int_value(x) for x in exts]
        self.accesses = []   # (buffer, indices)
        walk(loop, lambda n: self.accesses.append((n.buffer, n.indices))
             if isinstance(n, (E.BufferLoad, S.BufferStore)) else None)

    def fragments(self):
        out = {}
        for b, _ in self.accesses:
            if b.scope == "local.fragment":
                out[id(b)] = b
        return out


def _scan(body):
    """(outermost T.Parallel nests, ids of buffers accessed outside them, reduces)."""
    nests, inner, inside, everywhere, reduces = [], set(), set(), {}, []

    def f(n):
        if isinstance(n, S.For) and n.kind == S.PARALLEL and id(n) not in inner:
            nest = _Nest(n)
            nests.append(nest)
            walk(n.body, lambda m: inner.add(id(m)))
            walk(n, lambda m: inside.add(id(m)) if isinstance(m, (E.BufferLoad, S.BufferStore)) else None)
        elif isinstance(n, (E.BufferLoad, S.BufferStore)):
            everywhere[id(n)] = n.buffer
        elif isinstance(n, TO.Reduce):
            reduces.append(n)
    walk(body, f)
    outside = {id(b) for k, b in everywhere.items() if k not in inside}
    return nests, outside, reduces


class _Links:
    """Union-find over fragments that meet in a nest, a reduction or a gemm."""
    def __init__(self):
        self.parent = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a, b):
        self.parent[self.find(a)] = self.find(b)


def _links(body, gemms):
    nests, _, reduces = _scan(body)
    L = _Links()
    for n in nests:
        ids = list(n.fragments())
        for x in ids[1:]:
            L.union(ids[0], x)
    for r in reduces:
        L.union(id(r.src.buffer), id(r.dst.buffer))
    for g in gemms:
        L.find(id(g.C.buffer))
        if g.A.buffer.scope == "local.fragment":
            L.union(id(g.A.buffer), id(g.C.buffer))
    return L


def joint_tilings(body, gemms, threads, arch):
    """{id(gemm): MfmaTiling} for gemms whose accumulators are linked to another gemm's:
    one MFMA shape and one number of wave rows for the whole group (the first gemm's
    policy decides the split). Unlinked gemms are left to `choose_tiling` alone."""
    from tilelang.backend.hip.plan import gemm_dims, policy_name
    if len(gemms) < 2 or threads % WAVE:
        return {}
    L = _links(body, gemms)
    groups = {}
    for g in gemms:
        groups.setdefault(L.find(id(g.C.buffer)), []).append(g)
    out = {}
    for gs in groups.values():
        if len(gs) < 2:
            continue
        try:
            dims = [gemm_dims(g) for g in gs]
        except Exception:   # noqa: BLE001 -- _plan_gemm reports it at the gemm's line
            continue
        dt, pol = gs[0].A.buffer.dtype.name, policy_name(gs[0])
        full = {"row": lambda t: t.WN == 1, "col": lambda t: t.WM == 1}.get(pol, lambda t: True)
        found = None
        for want_full in (True, False):   # the policy's full split in any shape first
            for s in shapes_for(dt, arch):
                first = choose_tiling(dt, arch, *dims[0], threads // WAVE, pol, shape_m=s.m)
                if first is None or (want_full and not full(first)):
                    continue
                ts = [first] + [choose_tiling(g.A.buffer.dtype.name, arch, *d, threads // WAVE, policy_name(g),
                                              shape_m=s.m, WM_only=first.WM) for g, d in zip(gs[1:], dims[1:])]
                if all(t is not None for t in ts):
                    found = ts
                    break
            if found:
                break
        if found:
            out.update({id(g): t for g, t in zip(gs, found)})
    return out


def rows_compatible(a, b):
    """Two tilings place row i in the same lanes of the same wave rows."""
    return a.shape.m == b.shape.m and a.WM == b.WM and a.M == b.M


def register_a_ok(tile_tiling, gemm_tiling, g, K):
    """A "tile" fragment (C layout of `tile_tiling`) is the MFMA A operand of gemm `g`
    as it stands: each wave holds whole rows (WN == 1), the rows sit where `g`'s
    accumulator expects them, K runs along its columns in 4-element runs."""
    t, s = tile_tiling, gemm_tiling.shape
    return (t.WN == 1 and rows_compatible(t, gemm_tiling) and t.shape == s and s.a_regs == 4
            and s.k == 4 * s.groups and t.N == K and not _flag(g.trans_A))


def _flag(x):
    return bool(x) if isinstance(x, (bool, int)) else bool(E.const_int_value(x))


def _whole(region):
    return all(E.const_int_value(x) == 0 for x in region.starts) and \
        [E.const_int_value(x) for x in region.extents] == [E.const_int_value(d) for d in region.buffer.shape]


def _is_vars(indices, vars_):
    return len(indices) == len(vars_) and all(i is v for i, v in zip(indices, vars_))


def assign_register_layouts(plan, body, gemms):
    from tilelang.backend.hip.plan import RegLayout, gemm_dims
    nests, outside, reduces = _scan(body)
    cand = {}
    frags = {id(b): b for b in plan.buffers.values()
             if b.scope == "local.fragment" and id(b) not in plan.tilings and getattr(b, "alias_of", None) is None}
    accs = {k: RegLayout("acc", t) for k, t in plan.tilings.items()}
    for g in gemms:   # an A operand loaded straight into registers: the layout MFMA reads it in
        a, t = g.A.buffer, plan.tilings.get(id(g.C.buffer))
        if id(a) in frags and id(a) not in outside and t is not None and t.WN == 1 and \
                a.dtype.name in REGISTER_A_DTYPES and _whole(g.A) and len(a.shape) == 2:
            K = gemm_dims(g)[2]
            if [E.const_int_value(d) for d in a.shape] == [t.M, K]:
                cand[id(a)] = RegLayout("tile", MfmaTiling(t.shape, t.M, K, t.WM, 1))
    grew = True
    while grew:   # spread from the accumulators through the nests and reductions they share
        grew = False
        for k, b in frags.items():
            shape = [E.const_int_value(d) for d in b.shape]
            if k in cand or k in outside or any(d is None for d in shape):
                continue
            near = [accs.get(a) or cand.get(a) for n in nests if k in n.fragments() for a in n.fragments()]
            near += [accs.get(id(r.src.buffer)) or cand.get(id(r.src.buffer)) for r in reduces if r.dst.buffer is b]
            for lay in near:
                if lay is None:
                    continue
                t = lay.tiling
                if len(shape) == 2 and lay.kind != "rows" and shape == [t.M, t.N] and b.dtype.bits >= 16:
                    cand[k] = RegLayout("tile", t)
                    break
                if len(shape) == 1 and shape == [t.M]:
                    cand[k] = RegLayout("rows", t)
                    break
            grew = grew or k in cand
    layout = dict(accs)
    layout.update(cand)
    changed = True
    while changed:
        changed = False
        bad = set()
        for n in nests:
            bad |= _nest_offenders(n, layout)
        for r in reduces:
            s, d = layout.get(id(r.src.buffer)), layout.get(id(r.dst.buffer))
            if s is not None and s.kind == "rows":
                bad.add(id(r.src.buffer))
            if d is not None and d.kind != "acc" and not (
                    d.kind == "rows" and s is not None and s.kind != "rows" and r.dim == 1 and _whole(r.src)
                    and len(r.src.extents) == 2 and rows_compatible(s.tiling, d.tiling)):
                bad.add(id(r.dst.buffer))
        for g in gemms:
            if id(g.B.buffer) in cand:
                bad.add(id(g.B.buffer))
            a = layout.get(id(g.A.buffer))
            if a is not None and a.kind != "acc" and not (
                    a.kind == "tile" and g.A.buffer.dtype.name in REGISTER_A_DTYPES and _whole(g.A)
                    and register_a_ok(a.tiling, plan.tilings[id(g.C.buffer)], g, gemm_dims(g)[2])):
                bad.add(id(g.A.buffer))
        bad = {k for k in bad if k in layout and k in cand}
        if bad:
            changed = True
            for k in bad:
                del layout[k]
    for k, lay in layout.items():
        plan.regs[k] = lay


def _nest_offenders(n, layout):
    """The register fragments of nest `n` whose accesses its layout cannot serve: with a
    2-D register fragment indexed by the loop variables as the driver (an accumulator
    first), those of another tiling or indexed otherwise; without one, every row vector
    not indexed by the only loop variable of an M-long nest."""
    regs = [(b, idx) for b, idx in n.accesses if id(b) in layout]
    drivers = [layout[id(b)] for b, idx in regs if layout[id(b)].kind != "rows" and _is_vars(idx, n.vars)
               and n.exts == [layout[id(b)].tiling.M, layout[id(b)].tiling.N]]
    drivers.sort(key=lambda lay: lay.kind != "acc")
    out = set()
    if drivers:
        t = drivers[0].tiling
        for b, idx in regs:
            lay = layout[id(b)]
            ok = (len(idx) == 1 and idx[0] is n.vars[0] and rows_compatible(lay.tiling, t)) if lay.kind == "rows" \
                else (lay.tiling == t and _is_vars(idx, n.vars))
            if not ok:
                out.add(id(b))
        return out
    for b, idx in regs:
        lay = layout[id(b)]
        if lay.kind != "rows" or n.exts != [lay.tiling.M] or len(idx) != 1 or idx[0] is not n.vars[0]:
            out.add(id(b))
    rows = [layout[id(b)].tiling for b, _ in regs if id(b) not in out]
    if any(not rows_compatible(rows[0], t) for t in rows[1:]):
        out |= {id(b) for b, _ in regs}
    return out
