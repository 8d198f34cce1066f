"""Shared-memory layouts (CUDA): what a `T.annotate_layout` on a shared buffer becomes.

Every layout is a `tilelang.layout.Layout` (logical index -> memory offset); the plan
(plan/kernel.py) reads it in one of three forms:

- `sw128`: the 128-byte swizzle of a 16-bit tile (`make_full_bank_swizzled_layout`), the
  layout TMA and wgmma read (`tl::sw128`, 1024-byte aligned); the compiler's own choice
  for wgmma operands is this same Layout (`sw128_layout`);
- `strided`: offsets that are a linear function of the index (row-major, padded rows,
  a column-major tile): the buffer keeps those element strides, and every path that
  reads strided shared memory (vector copies, cp.async, ldmatrix) applies;
- `custom`: any other injective layout (XOR swizzles of other widths, permutations):
  each access goes through the layout's forward index; vector accesses are limited to
  the runs of consecutive, aligned offsets the layout keeps (`contiguous_run`), which
  the placement's strides encode for the vectorizer (`run_strides`).

A layout that cannot be honoured (another shape, two elements at one offset, a
`Fragment`, an extent only known at run time) is an error at the annotate_layout line."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilelang.ir import expr as E
from tilelang.ir.errors import located
from tilelang.layout import Fragment, Layout, make_full_bank_swizzled_layout
from tilelang.layout.swizzle import SwizzleMode, detect_swizzle_mode


@dataclass(frozen=True, eq=False)
class SharedLayout:
    kind: str                 # "sw128" | "strided" | "custom"
    layout: Layout            # the user's layout
    strides: tuple            # strided: element strides; custom: run_strides(contiguous)
    contiguous: int           # widest aligned run of consecutive offsets along the last dim
    size: int                 # elements of storage (largest offset + 1)
    swizzle: SwizzleMode      # which public swizzle it is (NONE: none of them)

    @property
    def linear(self):
        return self.kind == "strided" and list(self.strides) == _row_major(self.layout.input_shape)

    @property
    def name(self):
        if not self.swizzle.is_none():
            return f"{self.swizzle.value}B swizzle"
        return {"sw128": "128B swizzle"}.get(self.kind, "row-major layout" if self.linear else
                                             "strided layout" if self.kind == "strided" else "layout")

    def describe(self):
        """What the plan report prints for the buffer."""
        if self.kind == "sw128":
            return "annotated 128B swizzle (tl::sw128)"
        if self.kind == "strided":
            return f"annotated {self.name}, strides {list(self.strides)}"
        vec = f"vectors of at most {self.contiguous} elements" if self.contiguous > 1 else "no vector accesses"
        return f"annotated {self.name} {self.layout!r}: accesses through its index, {vec}"


def sw128_layout(buf):
    """The wgmma / TMA operand layout of a 16-bit shared tile, as a public Layout."""
    return make_full_bank_swizzled_layout(buf)


def narrow_swizzle_layout(buf, swizzle_bytes, row_slabs=1):
    """The layout of a 16- or 8-bit wgmma operand tile in tl::sw128 / sw64 / sw32 (async.h:
    W-byte rows, 16-byte chunks XORed with the row's position in the 8-row pattern), its rows
    stored in tl::slab_row<row_slabs> order when a warpgroup computes several 64-row slabs.
    A [stages, R, C] buffer: `stages` such R x C tiles one after another."""
    shape = [int(E.const_int_value(d)) for d in buf.shape]
    rows = shape[-2]
    es = buf.dtype.itemsize
    width = swizzle_bytes // es  # columns of one swizzle strip
    chunks = swizzle_bytes // 16  # 16-byte chunks per row: 8, 4, 2
    ce = 16 // es                 # elements of one chunk
    shift = {8: 0, 4: 1, 2: 2}[chunks]

    def stored_row(r):
        if row_slabs == 1:
            return r
        t = r >> 4
        w, s_ = t // row_slabs, t % row_slabs
        return ((w >> 2) * row_slabs + s_) * 64 + (w & 3) * 16 + (r & 15)

    def offset(*idx):
        r, c = idx[-2:]
        sr = stored_row(r)
        lead, size = 0, rows * shape[-1]
        for k in reversed(range(len(idx) - 2)):
            lead, size = lead + idx[k] * size, size * shape[k]
        return (lead + (c // width) * (rows * width) + sr * width
                + (((c // ce) ^ (sr >> shift)) & (chunks - 1)) * ce + (c % ce))
    return Layout(shape, offset)


def _row_major(shape):
    out, acc = [], 1
    for d in reversed(list(shape)):
        out.append(acc)
        acc *= int(d)
    return list(reversed(out))


def contiguous_run(offsets):
    """The largest power of two V dividing the last extent such that every run of V
    elements along the last dimension starting at a multiple of V sits at V consecutive
    offsets starting at a multiple of V (what a V-wide vector access needs)."""
    n = offsets.shape[-1]
    best, V = 1, 2
    while V <= n and n % V == 0:
        runs = offsets.reshape(offsets.shape[:-1] + (n // V, V))
        first = runs[..., :1]
        if not ((runs == first + np.arange(V)).all() and (first % V == 0).all()):
            break
        best, V = V, V * 2
    return best


def run_strides(ndim, run):
    """Strides that let the vectorizer (ops/vector_access.py) take exactly the vectors a
    layout with runs of `run` keeps: the last dimension steps by one, every other is a
    multiple of `run` only; with runs of one, no dimension steps by one."""
    return tuple([run] * (ndim - 1) + [1]) if run > 1 else tuple([0] * ndim)


def _fail(buf, why, hint=None):
    return located(ValueError, f"T.annotate_layout on the shared buffer `{buf.name}`: {why}",
                   span=getattr(buf, "layout_span", None) or buf.span,
                   hint=hint or "layouts that work: any Layout over the buffer's shape that gives every "
                                "element its own offset (tilelang.layout.make_swizzled_layout, "
                                "make_linear_layout, make_padded_layout, T.Layout(shape, fn))")


def annotated_shared_layout(buf):
    """The SharedLayout of a shared buffer's T.annotate_layout, None without one."""
    lay = getattr(buf, "layout", None)
    if lay is None or not buf.scope.startswith("shared") or buf.scope == "shared.barrier":
        return None
    if isinstance(lay, Fragment) or not isinstance(lay, Layout):
        raise _fail(buf, f"got a {type(lay).__name__}; a shared buffer takes a Layout (a Fragment places "
                         f"the elements of a local.fragment in registers)")
    shape = [E.const_int_value(d) for d in buf.shape]
    if None in shape:
        raise _fail(buf, f"the buffer has the symbolic shape {list(buf.shape)}")
    try:
        lshape = [E.const_int_value(E.convert(d)) for d in lay.input_shape]
        offs = np.asarray(lay.offsets(), dtype=np.int64)
    except (ValueError, TypeError, NotImplementedError) as err:
        raise _fail(buf, f"its layout cannot be evaluated ({err})") from None
    if lshape != shape:
        raise _fail(buf, f"the layout is over the shape {lshape}, the buffer has the shape {shape}")
    if offs.size and offs.min() < 0:
        raise _fail(buf, "the layout maps some element to a negative offset")
    if np.unique(offs).size != offs.size:
        raise _fail(buf, "the layout puts two elements at one offset")
    size = int(offs.max()) + 1 if offs.size else 0
    mode = detect_swizzle_mode(lay, buf) if buf.ndim >= 2 else SwizzleMode.NONE
    run = contiguous_run(offs)
    if buf.ndim == 2 and buf.dtype.bits == 16 and shape[0] % 8 == 0 and shape[1] % 64 == 0 and \
            np.array_equal(offs, sw128_layout(buf).offsets()):
        return SharedLayout("sw128", lay, (), run, size, mode)
    strides = tuple(int(offs[tuple(1 if k == d else 0 for k in range(buf.ndim))]) if shape[d] > 1 else 0
                    for d in range(buf.ndim))
    idx = np.indices(offs.shape)
    if offs.flat[0] == 0 and np.array_equal(offs, sum(i * s for i, s in zip(idx, strides))):
        strides = tuple(s if n > 1 else r for s, n, r in zip(strides, shape, _row_major(shape)))
        return SharedLayout("strided", lay, strides, run, size, mode)
    return SharedLayout("custom", lay, run_strides(buf.ndim, run), run, size, mode)


def placed_layout(buf, placement):
    """The `tilelang.layout.Layout` of a shared buffer as the plan placed it (one model
    for every shared placement): the sw128 swizzle, the user's layout read through its
    index, or the element strides (row-major, padded rows)."""
    if placement.swizzle:
        if placement.swizzle == 128 and getattr(placement, "row_slabs", 1) == 1 and buf.dtype.itemsize == 2 and \
                buf.ndim == 2:
            return sw128_layout(buf)
        return narrow_swizzle_layout(buf, placement.swizzle, getattr(placement, "row_slabs", 1))
    if placement.layout is not None:
        return placement.layout
    strides = [E.const_int_value(E.convert(s)) for s in placement.strides]
    shape = [E.const_int_value(d) for d in buf.shape]
    return Layout(shape, lambda *idx: sum((i * s for i, s in zip(idx[1:], strides[1:])), idx[0] * strides[0]))
