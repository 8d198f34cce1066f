"""Register layouts a user gave: `T.annotate_layout({frag: T.Fragment(...)})` on a
fragment that no gemm constrains.

The user's `tilelang.layout.Fragment` is the layout itself (`AnnotatedTile`): register r
of thread t holds the element its owner table says (forward_thread_fn /
forward_index_fn inverted), replicas included; a register that holds nothing on a thread
is skipped there. Inference (`infer_annotated`) runs before the thread tiles of
layout/tile.py: a T.Parallel nest over exactly the annotated tile, indexing it by its loop
variables (T.copy and T.fill lower to such nests), runs each iteration on the threads
holding its element; other fragments of that nest with the same shape and indexing take
the same layout, one-element fragments it only reads stay replicated, and any other
fragment of the nest goes to shared memory (which is always correct). An annotated
fragment that some use cannot follow (a reduction, another index, a nest shared with a
gemm's fragment, an atomic in a nest over a replicated Fragment, no closed form) keeps the
compiler's layout, and the plan report and a warning say why.

The printer (emit/tile_loops.py `emit_annotated_loop`) needs, for each register, the
element's flat index as a C++ expression of the thread: `owner_expr` finds one that is
linear in the bits of the thread index (integer weights: rows or columns per thread,
interleavings, warp-major orders; or XOR weights: swizzles), so a nest becomes one
unrolled loop over the registers with no table."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from tilelang.ir import expr as E
from tilelang.layout import Fragment
from tilelang.backend.cuda.layout.tile import CanonLoop, canon_shape


@dataclass(frozen=True, eq=False)
class AnnotatedTile:
    """A user's Fragment over a fragment of canonical shape `shape`, on `T` threads.
    `flat[t, r]`: the row-major flat index register r of thread t holds (-1: none)."""
    shape: tuple
    T: int
    user: Fragment = field(repr=False)
    flat: np.ndarray = field(repr=False)

    @staticmethod
    def of(fragment, buf_shape, T):
        """The AnnotatedTile of `fragment` on a buffer of constant shape `buf_shape`, or a
        string saying why the Fragment cannot be a register layout of it."""
        fshape = [int(d) for d in fragment.input_shape]
        if fshape != list(buf_shape):
            return f"the Fragment's shape {fshape} is not the buffer's {list(buf_shape)}"
        owners = fragment.owner_table()          # (threads, slots, ndim)
        if owners.shape[0] > T:
            return f"the Fragment places elements on {owners.shape[0]} threads; the block has {T}"
        strides = np.cumprod([1] + fshape[::-1][:-1])[::-1]
        used = owners[..., 0] >= 0
        flat = np.where(used, (owners * strides).sum(-1), -1)
        table = -np.ones((T, max(1, owners.shape[1])), np.int64)
        table[:owners.shape[0], :owners.shape[1]] = flat
        if not _covers(table, int(np.prod(fshape))):
            return "the Fragment leaves some elements on no thread"
        L = AnnotatedTile(tuple(d for d in fshape if d != 1), T, fragment, table)
        if L.schedule is None:
            return "the element each register holds is no bit-linear function of the thread index " \
                   "(no closed form for the printed loop)"
        return L

    def __eq__(self, other):
        return isinstance(other, AnnotatedTile) and self.shape == other.shape and self.T == other.T and \
            np.array_equal(self.flat, other.flat)

    def __hash__(self):
        return hash((self.shape, self.T, self.flat.tobytes()))

    @property
    def regs(self):
        return self.flat.shape[1]

    @property
    def size(self):
        return int(np.prod(self.shape))

    @property
    def replicated(self):
        return self.user.replicate_size > 1

    def layout(self):
        return f"annotated Fragment{list(self.shape)} ({self.regs} registers a thread" + \
            (f", replicated x{self.user.replicate_size})" if self.replicated else ")")

    def fragment(self):
        return self.user

    @functools.cached_property
    def schedule(self):
        """How the printer walks the registers: ("loop", guard, expr of tl_k, s) — one loop
        over tl_r, tl_k = (tl_r << s) + tl_tid, the same threads holding every register — or
        ("unrolled", [(guard, expr of tl_tid) or None per register]); guard: the threads
        below it hold the register (None: all). None when neither has a closed form."""
        T, R = self.flat.shape
        guards = [_prefix(self.flat[:, r]) for r in range(R)]
        if any(g is False for g in guards):
            return None
        if len(set(guards)) == 1:     # threads past the guard hold nothing: the index skips them
            Tg = guards[0] or T
            T2 = 1 << max(0, (Tg - 1).bit_length())
            v = -np.ones((R, T2), np.int64)
            v[:, :Tg] = self.flat[:Tg].T
            e = owner_expr(v.ravel(), "tl_k")
            if e is not None:
                return ("loop", guards[0], e, T2.bit_length() - 1)
        regs = []
        for r in range(R):
            if guards[r] == 0:
                regs.append(None)
                continue
            e = owner_expr(self.flat[:guards[r] or T, r], "tl_tid")
            if e is None:
                return None
            regs.append((guards[r], e))
        return ("unrolled", regs)


def _prefix(col):
    """k when exactly threads [0, k) hold something in this register column (None: all of
    them), False when the holders are no prefix."""
    held = col >= 0
    k = int(held.sum())
    if not held[:k].all():
        return False
    return None if k == col.size else k


def _covers(table, n):
    held = np.unique(table[table >= 0])
    return held.size == n


def owner_expr(values, tid):
    """A C++ expression of `tid` equal to values[t] for every t whose value is >= 0, or
    None: values[t] = c + sum_b bit_b(t) * w_b (integer weights, consecutive bits with
    doubling weights printed as one shifted field), else c ^ xor_b (bit_b(t) ? w_b : 0)."""
    values = np.asarray(values, np.int64)
    valid = values >= 0
    if not valid.any():
        return None
    ts = np.arange(values.size)
    nbits = max(1, int(values.size - 1).bit_length())
    if not valid[0]:
        return None
    c = int(values[0])
    base = [(1 << b) for b in range(nbits)]
    if not all(x < values.size and valid[x] for x in base):
        return None
    w = [int(values[x]) - c for x in base]
    bits = (ts[:, None] >> np.arange(nbits)) & 1
    if np.array_equal((c + bits @ np.array(w, np.int64))[valid], values[valid]):
        return _sum_expr(c, w, tid)
    wx = [int(values[x]) ^ c for x in base]
    acc = np.full(values.size, c, np.int64)
    for b, x in enumerate(wx):
        acc ^= bits[:, b] * x
    if np.array_equal(acc[valid], values[valid]):
        terms = [f"((({tid} >> {b}) & 1) * {x})" for b, x in enumerate(wx) if x]
        return " ^ ".join([str(c)] + terms) if c else (" ^ ".join(terms) or "0")
    return None


def _sum_expr(c, w, tid):
    """c + sum_b bit_b(tid) * w_b, runs of bits whose weights double as one field."""
    terms, b, n = [], 0, len(w)
    while b < n:
        if w[b] == 0:
            b += 1
            continue
        e = b + 1
        while e < n and w[e] == 2 * w[e - 1]:
            e += 1
        field_ = tid if b == 0 else f"({tid} >> {b})"
        if e < n:   # higher bits follow: keep this field's own
            field_ = f"({field_} & {(1 << (e - b)) - 1})"
        terms.append(field_ if w[b] == 1 else f"{field_} * {w[b]}")
        b = e
    if c or not terms:
        terms.append(str(c))
    return " + ".join(terms)


def loop_follows(cl, fid, L):
    """Whether CanonLoop `cl` runs over exactly L's tile and indexes fid by its loop variables."""
    return cl.ok and tuple(cl.exts) == L.shape and cl.access.get(fid) == tuple(range(len(L.shape)))


def infer_annotated(frags, cands, loops, reduces, scalar_ok, T, mark, skip=(), pinned=()):
    """({fid: AnnotatedTile}, {fid: why not}) for the annotated fragments `cands`
    ({fid: Fragment}) and the fragments their nests carry along. A user's Fragment that some
    use cannot follow is not honoured: that fragment keeps the compiler's layout (the
    thread tiles run next), and the inference starts again without it. A fragment carried
    along that another nest cannot run in the Fragment's layout goes to shared memory
    (`mark(fids, why)`). `skip`: fragments already placed (shared memory, a gemm's
    registers, a thread range); `pinned`: those in a gemm's register layout."""
    cls = [CanonLoop(lp, frags) for lp in loops]
    red = {id(x.buffer) for r in reduces for x in (r.src, r.dst)}
    tiles = {f: AnnotatedTile.of(u, [E.const_int_value(x) for x in frags[f].shape], T) for f, u in cands.items()}
    refused = {}
    while True:
        out = _attempt(frags, {f: L for f, L in tiles.items() if f not in refused}, cls, red, scalar_ok,
                       skip, pinned)
        if isinstance(out, _Refused):
            refused[out.fid] = out.why
            continue
        lay, shared = out
        for f, why in shared.items():
            mark([f], why)
        return lay, refused


def _attempt(frags, cands, cls, red, scalar_ok, skip, pinned):
    """({fid: AnnotatedTile}, {fid: why it goes to shared memory}), or _Refused(fid, why)
    for a user's Fragment that cannot be honoured. `cands`: {fid: AnnotatedTile or why not}."""
    lay, shared = {}, {}
    for fid, L in cands.items():
        if isinstance(L, str):
            return _Refused(fid, L)
        if fid in red:
            return _Refused(fid, "a reduction over it (reductions run on the compiler's register layouts)")
        lay[fid] = L

    def drop(fids, why):
        """A user's Fragment not honoured, or fragments carried along sent to shared memory."""
        own = [f for f in fids if f in cands]
        if own:
            raise _Refused(own[0], why)
        for f in fids:
            shared[f] = why
            lay.pop(f, None)
    try:
        changed = True
        while changed:
            changed = False
            for cl in cls:
                mine = [f for f in cl.lp.idx if f in lay]
                if not mine:
                    continue
                L = lay[mine[0]]
                off = [f for f in mine if lay[f] != L or not loop_follows(cl, f, lay[f])]
                if off:
                    drop(off, "a T.Parallel loop that does not run over its Fragment's tile")
                    changed = True
                    continue
                held = [f for f in cl.lp.idx if f in pinned]
                if held:
                    drop(mine, f"a T.Parallel loop shared with `{frags[held[0]].name}`, whose layout a gemm fixes")
                    changed = True
                    continue
                if L.replicated and cl.lp.atomic:
                    drop(mine, "an atomic or print in a T.Parallel loop over a replicated Fragment")
                    changed = True
                    continue
                for f in cl.lp.idx:
                    if f in lay or f in shared or f in skip:
                        continue
                    one = not canon_shape(frags[f])
                    if one and f in scalar_ok and f not in cl.lp.written:
                        continue    # a replicated one-element fragment, read by every thread
                    if not one and f not in red and loop_follows(cl, f, L):
                        lay[f] = L
                    else:
                        drop([f], f"shares a T.Parallel loop with the annotated Fragment of "
                                  f"`{frags[mine[0]].name}`, another layout")
                    changed = True
    except _Refused as r:
        return r
    return lay, shared


class _Refused(Exception):
    def __init__(self, fid, why):
        super().__init__(why)
        self.fid, self.why = fid, why
