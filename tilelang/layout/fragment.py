"""`Fragment`: where each element of a register tile lives, as
(thread, register slot). With replication `r`, every element is held by `r`
threads at the same slot; the replica number is the extra variable `rep` that
the thread expression may use (a reduction result broadcast to a warp, an A
operand shared by the warps of one row).

The slot index is the fragment's `Layout` part (`forward_index`); the thread is
`forward_thread`. Both are IR expressions so codegen can substitute the loop
indices of a `T.Parallel` over the fragment; numpy tables of them back the
checks."""
from __future__ import annotations

import numpy as np

from tilelang.ir import expr as E
from tilelang.ir.visitor import substitute, collect_vars
from tilelang.layout.evaluate import evaluate, grid, const_shape, tidy
from tilelang.layout.layout import Layout, _as_expr_list, _norm_extent, _fmt_shape


class Fragment(Layout):
    """`Fragment(shape, forward_thread_fn=..., forward_index_fn=..., replicate=1)`
    or `Fragment(shape, forward_fn=lambda *idx: (thread, index))`, as in the
    published API. With `replicate > 1` the thread function takes one extra
    argument, the replica number. Without an index function each thread's
    elements get slots 0, 1, ... in row-major order of the logical index."""

    def __init__(self, shape, forward_fn=None, forward_thread_fn=None, replicate=1, forward_index_fn=None):
        shape = [_norm_extent(d) for d in (shape if isinstance(shape, (list, tuple)) else [shape])]
        fvars = [E.Var(f"i{k}") for k in range(len(shape))]
        rep = E.Var("rep")
        rargs = [rep] if replicate > 1 else []
        if forward_fn is not None:
            thread, index = forward_fn(*fvars, *rargs)
        else:
            if forward_thread_fn is None:
                raise TypeError("Fragment needs forward_fn or forward_thread_fn")
            index = forward_index_fn(*fvars) if forward_index_fn is not None else None
            thread = forward_thread_fn(*fvars, *rargs)
        self._setup_fragment(shape, fvars, index, E.convert(thread), rep, replicate)

    def _setup_fragment(self, shape, fvars, index, thread, rep, replicate):
        self.forward_thread = thread
        self.rep_var = rep
        self.replicate_size = int(replicate)
        if index is None:
            self._setup(shape, fvars, [E.const(0)])
            index = _infer_index(self)
        self._setup(shape, fvars, _as_expr_list(index))
        if any(v is rep for v in collect_vars(self.forward_index)):
            raise ValueError("a fragment's register index may not depend on the replica number")

    @classmethod
    def from_exprs(cls, shape, fvars, index, thread=None, rep=None, replicate=1):
        obj = object.__new__(cls)
        obj._setup_fragment([_norm_extent(d) for d in shape], fvars, index, E.convert(thread),
                            rep if rep is not None else E.Var("rep"), replicate)
        return obj

    # published accessors ------------------------------------------------------
    @property
    def thread(self):
        return self.forward_thread

    def get_thread_size(self):
        return self.thread_extent

    @property
    def thread_extent(self):
        """Number of threads the fragment spans (max thread + 1)."""
        if "thread_extent" not in self._cache:
            self._cache["thread_extent"] = int(self.thread_table().max()) + 1
        return self._cache["thread_extent"]

    @property
    def num_slots(self):
        """Registers (elements) each thread holds."""
        return self.size()

    def map_forward_thread(self, indices, rep=0):
        mapping = {v: E.convert(x) for v, x in zip(self.forward_vars, indices)}
        mapping[self.rep_var] = E.convert(rep)
        return tidy(substitute(self.forward_thread, mapping))

    # numeric use --------------------------------------------------------------
    def thread_table(self):
        """int64 array (replicate, *shape): the thread holding each element, per replica."""
        if "threads" not in self._cache:
            shp = const_shape(self.input_shape, "fragment")
            g = grid((self.replicate_size,) + shp)
            env = self._env(g[1:])
            env[id(self.rep_var)] = g[0]
            self._cache["threads"] = np.broadcast_to(evaluate(self.forward_thread, env),
                                                     (self.replicate_size,) + shp).astype(np.int64)
        return self._cache["threads"]

    def slot_table(self):
        """int64 array of the input shape: each element's register slot."""
        return self.offsets()

    def map(self, *idx, rep=0):
        """(thread, slot) of an integer index; replica `rep` of it."""
        if any(isinstance(i, E.PrimExpr) for i in idx):
            return self.map_forward_thread(idx, rep), self.offset_expr(*idx)
        self._check_point(idx)
        if not 0 <= rep < self.replicate_size:
            raise IndexError(f"replica {rep} outside [0, {self.replicate_size})")
        env = self._env([np.int64(i) for i in idx])
        env[id(self.rep_var)] = np.int64(rep)
        return int(evaluate(self.forward_thread, env)), Layout.map(self, *idx)

    def is_bijective_up_to_replication(self):
        """(replica, logical index) -> (thread, slot) is one-to-one and onto
        [0, thread_extent) x [0, num_slots): no two elements share a register
        and no register of any thread is left unused."""
        thr = self.thread_table()
        slots = np.broadcast_to(self.slot_table(), thr.shape)
        key = (thr * self.num_slots + slots).ravel()
        total = self.thread_extent * self.num_slots
        return key.size == total and np.array_equal(np.sort(key), np.arange(total))

    def owner_table(self):
        """(thread_extent, num_slots, ndim) int64: the logical index each
        register of each thread holds (-1 where unused)."""
        thr = self.thread_table()
        out = -np.ones((self.thread_extent, self.num_slots, self.ndim), np.int64)
        slots = np.broadcast_to(self.slot_table(), thr.shape)
        idx = np.broadcast_to(np.stack(grid(const_shape(self.input_shape)), axis=-1), thr.shape + (self.ndim,))
        out[thr.ravel(), slots.ravel()] = idx.reshape(-1, self.ndim)
        return out

    def is_equal(self, other):
        return (isinstance(other, Fragment) and Layout.is_equal(self, other)
                and self.replicate_size == other.replicate_size
                and np.array_equal(self.thread_table(), other.thread_table()))

    # derived fragments --------------------------------------------------------
    def repeat(self, repeats, repeat_on_thread=False, lower_dim_first=True):
        """Tile the fragment `repeats[d]` times along each dimension. The tile
        number goes to the threads (`repeat_on_thread`: more threads, each the
        same registers, e.g. warps of a block) or to the registers (the same
        threads hold more elements, e.g. several MMA atoms per warp). With
        `lower_dim_first` the last dimension's tile number varies fastest."""
        if isinstance(repeats, int):
            repeats = [repeats] + [1] * (self.ndim - 1)
        repeats = list(repeats)
        if len(repeats) != self.ndim:
            raise ValueError(f"repeat needs {self.ndim} factors, got {repeats}")
        nv = [E.Var(f"i{k}") for k in range(self.ndim)]
        inner = {v: nv[k] % self.input_shape[k] for k, v in enumerate(self.forward_vars)}
        tile = [nv[k] // self.input_shape[k] for k in range(self.ndim)]
        order = range(self.ndim - 1, -1, -1) if lower_dim_first else range(self.ndim)
        tile_no, stride = E.const(0), 1
        for k in order:
            if repeats[k] != 1:
                tile_no = tile_no + tile[k] * stride if stride != 1 else tile_no + tile[k]
            stride *= repeats[k]
        shape = [ext * r for ext, r in zip(self.input_shape, repeats)]
        thread = substitute(self.forward_thread, inner)
        index = [substitute(e, inner) for e in self.forward_index]
        if repeat_on_thread:
            thread = thread + tile_no * self.thread_extent
        else:
            if len(index) != 1:
                raise ValueError("repeat on registers needs a 1-D register index")
            index = [index[0] + tile_no * self.num_slots]
        return Fragment.from_exprs(shape, nv, _simplified(index), _simplified([thread])[0],
                                   self.rep_var, self.replicate_size)

    def replicate(self, n):
        """The same elements held by `n` times as many threads: the copies are
        further blocks of `thread_extent` threads (e.g. the other warps of a
        row that all need the same A operand)."""
        if n < 1:
            raise ValueError(f"replicate factor must be >= 1, got {n}")
        rep = E.Var("rep")
        r = self.replicate_size
        old = substitute(self.forward_thread, {self.rep_var: rep % r if r > 1 else E.const(0)})
        thread = old + (rep // r) * self.thread_extent if r > 1 else old + rep * self.thread_extent
        return Fragment.from_exprs(self.input_shape, self.forward_vars, self.forward_index,
                                   _simplified([thread])[0], rep, r * n)

    def __repr__(self):
        try:
            out, te = _fmt_shape(self.get_output_shape()), self.thread_extent
        except ValueError:
            out, te = "?", "?"
        fv = ", ".join(v.name for v in self.forward_vars)
        return (f"Fragment({_fmt_shape(self.input_shape)} -> {out}, replicate: {self.replicate_size}, "
                f"thread: {te}, ({fv}) -> thread {self.forward_thread}, "
                f"index [{', '.join(str(e) for e in self.forward_index)}])")


def _simplified(exprs):
    from tilelang.layout.evaluate import tidy
    return [tidy(e) for e in exprs]


def _infer_index(frag):
    """Slots for a fragment given only its thread map: when the thread uses a
    subset of the dimensions, the slot is the row-major position over the
    others; otherwise the row-major rank among the thread's own elements,
    which must then be expressible as that same flattening (checked)."""
    used = {id(v) for v in collect_vars(frag.forward_thread)}
    free = [(v, ext) for v, ext in zip(frag.forward_vars, frag.input_shape) if id(v) not in used]
    acc = None
    for v, ext in free:
        acc = v if acc is None else acc * ext + v
    cand = E.const(0) if acc is None else acc
    # check: one (thread, slot) per element of replica 0
    trial = Fragment.from_exprs(frag.input_shape, frag.forward_vars, [cand], frag.forward_thread,
                                frag.rep_var, frag.replicate_size)
    thr = trial.thread_table()[0].ravel()
    key = thr * (trial.num_slots or 1) + trial.slot_table().ravel()
    if np.unique(key).size != key.size:
        raise ValueError(f"cannot infer register slots for a fragment whose thread map is "
                         f"`{frag.forward_thread}`; pass forward_index_fn")
    return [cand]


def make_fully_replicated_layout_fragment(buffer, threads):
    """Every one of `threads` threads holds the whole buffer (index buffers,
    masks read uniformly)."""
    from tilelang.layout.buffer_info import buffer_shape_dtype
    shape, _ = buffer_shape_dtype(buffer)
    if threads == 1:
        return Fragment(shape, forward_thread_fn=lambda *a: 0)
    return Fragment(shape, forward_thread_fn=lambda *a: a[-1], replicate=threads)
