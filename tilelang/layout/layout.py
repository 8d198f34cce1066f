"""`Layout`: a map from an n-D logical index to a (possibly multi-dimensional)
memory index, written as IR expressions over placeholder variables.

The expressions are what codegen substitutes loop indices into; the same
expressions evaluated with numpy (`evaluate.py`) give the concrete tables the
checks and tests use. The memory offset is the row-major linearization of the
output index over the output shape (so a swizzle may return `(tile, row, col)`
and still name one offset)."""
from __future__ import annotations

import numpy as np

from tilelang.ir import expr as E
from tilelang.ir.visitor import substitute
from tilelang.layout.evaluate import evaluate, grid, const_shape, tidy


def _norm_extent(d):
    if isinstance(d, bool):
        raise TypeError("a layout extent cannot be a bool")
    if isinstance(d, (int, np.integer)):
        return int(d)
    if isinstance(d, E.PrimExpr):
        v = E.const_int_value(d)
        return d if v is None else v
    raise TypeError(f"a layout extent must be an int or an expression, got {d!r}")


def _as_expr_list(out):
    if isinstance(out, (list, tuple)):
        return [E.convert(x) for x in out]
    return [E.convert(out)]


def _fmt_shape(shape):
    return "[" + ", ".join(str(d) for d in shape) + "]"


class Layout:
    """`Layout(shape, lambda i, j: ...)`: the function receives one variable per
    dimension and returns the memory index (an expression or a list of them)."""

    def __init__(self, shape, forward_fn):
        shape = [_norm_extent(d) for d in (shape if isinstance(shape, (list, tuple)) else [shape])]
        fvars = [E.Var(f"i{k}") for k in range(len(shape))]
        self._setup(shape, fvars, _as_expr_list(forward_fn(*fvars)))

    # construction from expressions (used by every derived layout) -------------
    def _setup(self, shape, fvars, index):
        self.input_shape = list(shape)
        self.forward_vars = list(fvars)
        self.forward_index = list(index)
        self._cache = {}
        self._inverse_fn = None  # a closed-form inverse, when a factory knows one

    @classmethod
    def from_exprs(cls, shape, fvars, index):
        obj = object.__new__(cls)
        obj._setup([_norm_extent(d) for d in shape], fvars, _as_expr_list(index))
        return obj

    # published accessors ------------------------------------------------------
    @property
    def index(self):
        return list(self.forward_index)

    def get_input_shape(self):
        return list(self.input_shape)

    def get_forward_vars(self):
        return list(self.forward_vars)

    def get_forward_index(self):
        return self.index

    def get_output_shape(self):
        """Extent of each output dimension: max value + 1 over the input domain."""
        if "out_shape" not in self._cache:
            coords = self.coords()
            flat = coords.reshape(-1, coords.shape[-1])
            if flat.size and flat.min() < 0:
                raise ValueError(f"{self!r} maps some index to a negative offset")
            self._cache["out_shape"] = [int(flat[:, k].max()) + 1 if flat.shape[0] else 0
                                        for k in range(flat.shape[1])]
        return list(self._cache["out_shape"])

    @property
    def ndim(self):
        return len(self.input_shape)

    def size(self):
        """Number of memory slots the layout spans (product of the output shape)."""
        return int(np.prod(self.get_output_shape(), dtype=np.int64))

    def input_size(self):
        return int(np.prod(const_shape(self.input_shape), dtype=np.int64))

    # symbolic use -------------------------------------------------------------
    def map_forward_index(self, indices):
        """The output index expressions with the given indices substituted."""
        indices = list(indices)
        if len(indices) < self.ndim:
            raise ValueError(f"layout over {self.ndim} dims given {len(indices)} indices")
        lead, tail = indices[:len(indices) - self.ndim], indices[len(indices) - self.ndim:]
        mapping = {v: E.convert(x) for v, x in zip(self.forward_vars, tail)}
        return [E.convert(x) for x in lead] + [tidy(substitute(e, mapping)) for e in self.forward_index]

    def __call__(self, *indices):
        return self.map_forward_index(indices)

    def get_linearized_forward_index(self):
        """The memory offset as one expression of the forward variables."""
        out_shape = self.get_output_shape()
        acc = E.const(0)
        for e, ext in zip(self.forward_index, out_shape):
            acc = acc * ext + e
        from tilelang.arith.simplify import simplify
        return simplify(acc)

    def offset_expr(self, *indices):
        """The memory offset of `indices` (expressions or ints) as an expression."""
        mapping = {v: E.convert(x) for v, x in zip(self.forward_vars, indices)}
        return tidy(substitute(self.get_linearized_forward_index(), mapping))

    # numeric use --------------------------------------------------------------
    def _env(self, idx):
        return {id(v): x for v, x in zip(self.forward_vars, idx)}

    def coords(self):
        """int64 array of shape (*input_shape, output_ndim): every output index."""
        if "coords" not in self._cache:
            g = grid(const_shape(self.input_shape))
            env = self._env(g)
            shp = tuple(const_shape(self.input_shape))
            cols = [np.broadcast_to(evaluate(e, env), shp).astype(np.int64) for e in self.forward_index]
            self._cache["coords"] = np.stack(cols, axis=-1) if cols else np.zeros(shp + (0,), np.int64)
        return self._cache["coords"]

    def offsets(self):
        """int64 array of the input shape holding each element's memory offset."""
        if "offsets" not in self._cache:
            c = self.coords()
            out = np.zeros(c.shape[:-1], np.int64)
            for k, ext in enumerate(self.get_output_shape()):
                out = out * ext + c[..., k]
            self._cache["offsets"] = out
        return self._cache["offsets"]

    def forward(self, *idx):
        """The output index of integer indices, as a tuple of ints."""
        self._check_point(idx)
        env = self._env([np.int64(i) for i in idx])
        return tuple(int(evaluate(e, env)) for e in self.forward_index)

    def map(self, *idx):
        """The memory offset of integer indices (an int); with expression
        arguments, the offset expression."""
        if any(isinstance(i, E.PrimExpr) for i in idx):
            return self.offset_expr(*idx)
        out = 0
        for c, ext in zip(self.forward(*idx), self.get_output_shape()):
            out = out * ext + c
        return out

    def _check_point(self, idx):
        if len(idx) != self.ndim:
            raise ValueError(f"layout over {self.ndim} dims given {len(idx)} indices")
        for i, ext in zip(idx, self.input_shape):
            if isinstance(ext, int) and not 0 <= i < ext:
                raise IndexError(f"index {tuple(idx)} is outside the layout shape {self.input_shape}")

    # properties of the map ----------------------------------------------------
    def is_injective(self):
        offs = self.offsets().ravel()
        return np.unique(offs).size == offs.size

    def is_bijective(self):
        """Every input index has its own offset and every offset in
        [0, size) is used: the layout is a permutation of memory."""
        offs = self.offsets().ravel()
        return offs.size == self.size() and np.array_equal(np.sort(offs), np.arange(offs.size))

    def is_equal(self, other):
        return (isinstance(other, Layout) and const_shape(self.input_shape) == const_shape(other.input_shape)
                and self.get_output_shape() == other.get_output_shape()
                and np.array_equal(self.coords(), other.coords()))

    # derived layouts ----------------------------------------------------------
    def inverse(self):
        """The layout from memory index back to logical index. Closed form when
        the factory supplied one (swizzles); otherwise a table-backed layout
        (numeric use only) built from the forward map."""
        if not self.is_bijective():
            raise ValueError(f"{self!r} is not bijective; it has no inverse")
        if self._inverse_fn is not None:
            return Layout(self.get_output_shape(), self._inverse_fn)
        return TableLayout(self.get_output_shape(), _inverse_table(self))

    def repeat(self, dim, factor):
        """Tile the layout `factor` times along input `dim`; the tile number
        becomes a new leading output dimension."""
        if not isinstance(factor, int) or factor < 1:
            raise ValueError(f"factor must be a positive int, got {factor!r}")
        if factor == 1:
            return self
        dim = dim + self.ndim if dim < 0 else dim
        if not 0 <= dim < self.ndim:
            raise ValueError(f"dim out of range for a {self.ndim}-D layout")
        ext = self.input_shape[dim]
        nv = [E.Var(f"i{k}") for k in range(self.ndim)]
        mapping = {v: (nv[k] % ext if k == dim else nv[k]) for k, v in enumerate(self.forward_vars)}
        shape = list(self.input_shape)
        shape[dim] = ext * factor
        return Layout.from_exprs(shape, nv, [nv[dim] // ext] + [substitute(e, mapping) for e in self.forward_index])

    def expand(self, leading_shape):
        """Prepend dimensions that pass through unchanged: [*lead, *idx] ->
        [*lead, *L(idx)]."""
        lead = [leading_shape] if isinstance(leading_shape, int) else list(leading_shape)
        if not lead:
            return self
        nv = [E.Var(f"i{k}") for k in range(len(lead) + self.ndim)]
        mapping = dict(zip(self.forward_vars, nv[len(lead):]))
        return Layout.from_exprs(lead + self.input_shape, nv,
                                 nv[:len(lead)] + [substitute(e, mapping) for e in self.forward_index])

    def reshape(self, shape):
        """The same memory map seen through another logical shape of equal size
        (row-major re-indexing)."""
        shape = [_norm_extent(d) for d in shape]
        if int(np.prod(const_shape(shape))) != self.input_size():
            raise ValueError(f"cannot reshape {self.input_shape} to {shape}")
        nv = [E.Var(f"i{k}") for k in range(len(shape))]
        flat = E.const(0)
        for v, ext in zip(nv, shape):
            flat = flat * ext + v
        old, rem = [], flat
        for ext in reversed(self.input_shape):
            old.append(rem % ext)
            rem = rem // ext
        mapping = dict(zip(self.forward_vars, reversed(old)))
        return Layout.from_exprs(shape, nv, [substitute(e, mapping) for e in self.forward_index])

    def __repr__(self):
        try:
            out = _fmt_shape(self.get_output_shape())
        except ValueError:
            out = "?"
        fv = ", ".join(v.name for v in self.forward_vars)
        return (f"Layout({_fmt_shape(self.input_shape)} -> {out}, "
                f"({fv}) -> [{', '.join(str(e) for e in self.forward_index)}])")


def _inverse_table(layout):
    """For each memory index (in the output shape), the logical index."""
    out_shape = layout.get_output_shape()
    table = np.zeros(tuple(out_shape) + (layout.ndim,), np.int64)
    coords = layout.coords().reshape(-1, len(out_shape))
    logical = np.stack([g.ravel() for g in grid(const_shape(layout.input_shape))], axis=-1)
    table[tuple(coords.T)] = logical
    return table


class TableLayout(Layout):
    """A layout known only as a table (from `inverse()` of a layout without a
    closed-form inverse). It evaluates numerically; it has no expressions."""

    def __init__(self, shape, table):
        self._setup(list(shape), [E.Var(f"i{k}") for k in range(len(shape))], [])
        self._table = np.asarray(table, np.int64)

    @property
    def index(self):
        raise NotImplementedError("a table-backed layout (from inverse()) has no expression form")

    def get_forward_index(self):
        return self.index

    def map_forward_index(self, indices):
        return self.index

    def coords(self):
        return self._table

    def forward(self, *idx):
        self._check_point(idx)
        return tuple(int(x) for x in self._table[tuple(idx)])

    def __repr__(self):
        return f"TableLayout({_fmt_shape(self.input_shape)} -> {_fmt_shape(self.get_output_shape())})"


def make_linear_layout(buffer_or_shape):
    """Row-major layout over the buffer's (or the given) shape."""
    from tilelang.layout.buffer_info import buffer_shape_dtype
    shape, _ = buffer_shape_dtype(buffer_or_shape)

    def fn(*idx):
        acc = None
        for v, ext in zip(idx, shape):
            acc = v if acc is None else acc * ext + v
        return E.const(0) if acc is None else acc
    return Layout(shape, fn)
