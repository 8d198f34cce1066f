"""Buffers (a typed, shaped tile in one memory scope) and regions of them."""
from __future__ import annotations

import itertools

from tilelang.ir.dtypes import as_dtype, int32
from tilelang.ir.expr import PrimExpr, BufferLoad, IntImm, convert, const_int_value, binop, Var
from tilelang.ir.span import current_span

# user-facing scope names and the canonical one we store
SCOPES = {
    "global": "global",
    "shared": "shared", "shared.dyn": "shared",
    "fragment": "local.fragment", "local.fragment": "local.fragment",
    "local": "local",
    "var": "local.var", "local.var": "local.var",
}

_store_handler = None


def set_store_handler(fn):
    """How `buf[i] = v` in a kernel body is recorded (language/store.py installs it)."""
    global _store_handler
    _store_handler = fn


def _norm_dim(d):
    if isinstance(d, bool):
        raise TypeError("a shape dimension cannot be a bool")
    if isinstance(d, int):
        return d
    v = const_int_value(d) if isinstance(d, PrimExpr) else None
    if v is not None:
        return v
    if isinstance(d, PrimExpr):
        return d
    try:
        return int(d)
    except Exception:
        raise TypeError(f"a shape dimension must be an int or an expression, got {d!r}") from None


class Buffer:
    _ids = itertools.count()

    def __init__(self, name, shape, dtype, scope="global", strides=None, init=None):
        if isinstance(shape, (int, PrimExpr)):
            shape = (shape,)
        self.name = name
        self.shape = tuple(_norm_dim(d) for d in shape)
        self.dtype = as_dtype(dtype)
        self.scope = SCOPES.get(scope, scope)
        self.strides = tuple(_norm_dim(s) for s in strides) if strides else None
        self.init = init
        self.span = current_span()
        self.uid = next(Buffer._ids)
        self.layout = None  # set by T.annotate_layout / layout inference

    @property
    def ndim(self):
        return len(self.shape)

    def __len__(self):
        n = const_int_value(self.shape[0]) if self.shape else None
        if n is None:
            raise TypeError(f"buffer {self.name} has a dynamic first dimension")
        return n

    def numel(self):
        n = 1
        for d in self.shape:
            n = n * d
        return n

    def is_var(self):
        return self.scope == "local.var"

    def get_strides(self):
        """Row-major strides unless given."""
        if self.strides:
            return list(self.strides)
        out, acc = [], 1
        for d in reversed(self.shape):
            out.append(acc)
            acc = acc * d if not (isinstance(acc, int) and acc == 1) else d
        return list(reversed(out))

    # indexing -----------------------------------------------------------
    def _indices(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        key = tuple(k.as_slice() if isinstance(k, Ramp) else k for k in key)
        if any(k is Ellipsis for k in key):
            i = key.index(Ellipsis)
            fill = self.ndim - (len(key) - 1)
            key = key[:i] + (slice(None),) * fill + key[i + 1:]
        for k in key:
            for part in ((k.start, k.stop) if isinstance(k, slice) else (k,)):
                if isinstance(part, float) or (isinstance(part, PrimExpr) and part.dtype.is_float):
                    from tilelang.ir.errors import IndexTypeError
                    raise IndexTypeError(self, part)
        return key

    def __getitem__(self, key):
        key = self._indices(key)
        if self.is_var() and key == (0,) or (self.is_var() and len(key) == 1 and const_int_value(key[0]) == 0):
            return BufferLoad(self, [IntImm(0)])
        if len(key) > self.ndim:
            from tilelang.ir.errors import IndexArityError
            raise IndexArityError(self, len(key))
        if all(not isinstance(k, slice) for k in key) and len(key) == self.ndim:
            return BufferLoad(self, [convert(k) for k in key])
        ranges = []
        for d, dim in enumerate(self.shape):
            k = key[d] if d < len(key) else slice(None)
            if isinstance(k, slice):
                if k.step not in (None, 1):
                    from tilelang.ir.errors import StridedSliceError
                    raise StridedSliceError(self, k)
                start = 0 if k.start is None else k.start
                stop = dim if k.stop is None else k.stop
                ranges.append((convert(start), _extent(start, stop)))
            else:
                ranges.append((convert(k), IntImm(1)))
        return BufferRegion(self, ranges)

    def __setitem__(self, key, value):
        key = self._indices(key)
        if _store_handler is None:
            raise RuntimeError("buffer stores are only valid inside a kernel body")
        if any(isinstance(k, slice) for k in key) and len(key) <= self.ndim:
            # `A[0, 4:8] = B[0, 0:4]` copies a region, `A[0, 4:8] = x` fills one
            _store_handler(self, value, self[key])
            return
        if len(key) != self.ndim:
            if self.is_var() and len(key) == 1:
                key = (0,)
            else:
                from tilelang.ir.errors import IndexArityError
                raise IndexArityError(self, len(key))
        _store_handler(self, value, [convert(k) for k in key])

    def load(self):
        return BufferLoad(self, [IntImm(0)] * max(1, self.ndim))

    @property
    def data(self):
        """The buffer's storage, as the published `buf.data`: `T.Tensor(shape, dtype,
        buf.data)` inside a kernel is another view of the same elements."""
        return BufferData(self)

    def access_ptr(self, access_mask="r", ptr_type="handle", content_lanes=1, offset=0, extent=None):
        """TVM's `buffer.access_ptr(mask)`: a pointer to the first element (plus `offset`
        elements), as `T.access_ptr(buf, mask, offset=offset)`."""
        from tilelang.ir.expr import access_ptr
        load = BufferLoad(self, [IntImm(0)] * self.ndim)
        if not (isinstance(offset, int) and offset == 0):
            load = element_offset(load, offset)
        return access_ptr(load, access_mask_value(access_mask))

    def __repr__(self):
        return f"Buffer({self.name}, {list(self.shape)}, {self.dtype}, {self.scope})"

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        if self.is_var():
            return binop("==", self.load(), other)
        return self is other

    def __ne__(self, other):
        if self.is_var():
            return binop("!=", self.load(), other)
        return self is not other

    def __bool__(self):
        return True

    # A `T.alloc_var` buffer reads as its value in arithmetic.
    def _v(self):
        if not self.is_var():
            raise TypeError(f"buffer `{self.name}` ({self.scope}) is a tile, not a scalar: index it, "
                            f"e.g. {self.name}[i]")
        return self.load()

    def __add__(self, o): return self._v() + o
    def __radd__(self, o): return o + self._v()
    def __sub__(self, o): return self._v() - o
    def __rsub__(self, o): return o - self._v()
    def __mul__(self, o): return self._v() * o
    def __rmul__(self, o): return o * self._v()
    def __truediv__(self, o): return self._v() / o
    def __rtruediv__(self, o): return o / self._v()
    def __floordiv__(self, o): return self._v() // o
    def __rfloordiv__(self, o): return o // self._v()
    def __mod__(self, o): return self._v() % o
    def __rmod__(self, o): return o % self._v()
    def __lt__(self, o): return self._v() < o
    def __le__(self, o): return self._v() <= o
    def __gt__(self, o): return self._v() > o
    def __ge__(self, o): return self._v() >= o
    def __neg__(self): return -self._v()
    def __and__(self, o): return self._v() & o
    def __or__(self, o): return self._v() | o
    def __lshift__(self, o): return self._v() << o
    def __rshift__(self, o): return self._v() >> o


def storage_root(buf):
    """The buffer whose storage `buf` is: a T.view / T.reshape of a tile names its `alias_of`."""
    while getattr(buf, "alias_of", None) is not None:
        buf = buf.alias_of
    return buf


def is_packed(buf) -> bool:
    """A tensor of 4-bit elements (int4, uint4, float4_e2m1fn), stored two per byte: element
    i is the low (i even) or high (i odd) nibble of byte i // 2. Only tensors (global
    buffers) pack; a block's own buffers hold one 4-bit value per byte."""
    return buf.scope == "global" and buf.dtype.bits < 8 and buf.dtype.lanes == 1


def _extent(start, stop):
    s, e = const_int_value(start), const_int_value(stop)
    if s is not None and e is not None:
        return IntImm(e - s)
    from tilelang.ir.simplify import simplify
    return simplify(convert(stop) - convert(start))


class BufferData:
    """`buf.data`: a handle to a buffer's storage (see Buffer.data)."""

    def __init__(self, buffer):
        self.buffer = buffer

    def __repr__(self):
        return f"{self.buffer.name}.data"


class Ramp:
    """TVM's `T.Ramp(base, stride, lanes)` as an index: the `lanes` elements base,
    base + stride, ...; as a buffer index, the region `base:base + lanes` (stride 1)."""

    def __init__(self, base, stride, lanes):
        if const_int_value(convert(stride)) != 1:
            from tilelang.ir.errors import TileLangError
            raise TileLangError(f"T.Ramp(base, {stride}, {lanes}): only stride 1 indexes a buffer here",
                                hint="index a region instead, e.g. A[i:i + n]")
        if const_int_value(convert(lanes)) is None:
            from tilelang.ir.errors import TileLangError
            raise TileLangError(f"T.Ramp: lanes must be a constant, got {lanes!r}")
        self.base, self.stride, self.lanes = convert(base), convert(stride), const_int_value(convert(lanes))

    def as_slice(self):
        return slice(self.base, self.base + self.lanes)


class BufferRegion:
    """A box inside a buffer: one `(start, extent)` per dimension."""

    def __init__(self, buffer: Buffer, ranges):
        self.buffer = buffer
        self.ranges = [(convert(s), convert(e)) for s, e in ranges]
        self.span = current_span()

    @property
    def extents(self):
        return [e for _, e in self.ranges]

    @property
    def starts(self):
        return [s for s, _ in self.ranges]

    @property
    def dtype(self):
        return self.buffer.dtype

    @property
    def shape(self):
        return tuple(const_int_value(e) if const_int_value(e) is not None else e for e in self.extents)

    def __repr__(self):
        from tilelang.ir.printer import region_str
        return region_str(self)


def full_region(buf: Buffer) -> BufferRegion:
    return BufferRegion(buf, [(IntImm(0), convert(d)) for d in buf.shape])


def to_region(x, like_extents=None) -> BufferRegion:
    """A buffer, region or element (start point) as a region. A start point takes
    its extents from `like_extents` (the other side of a copy), aligned to the
    trailing dimensions."""
    if isinstance(x, BufferRegion):
        return x
    if isinstance(x, Buffer):
        return full_region(x)
    if isinstance(x, BufferLoad):
        buf = x.buffer
        exts = [IntImm(1)] * buf.ndim
        if like_extents is not None:
            like = [e for e in like_extents]
            # align the other side's non-unit extents to our trailing dimensions
            nz = [e for e in like if const_int_value(e) != 1]
            if len(like) <= buf.ndim:
                exts = [IntImm(1)] * (buf.ndim - len(like)) + list(like)
            elif len(nz) <= buf.ndim:
                exts = [IntImm(1)] * (buf.ndim - len(nz)) + nz
            else:
                raise ValueError("region rank mismatch")
        return BufferRegion(buf, list(zip(x.indices, exts)))
    raise TypeError(f"expected a buffer, a region or an element, got {type(x).__name__}")


def access_mask_value(access_type) -> int:
    """How a callee uses the memory behind a pointer, as the IR's mask: "r" 1, "w" 2,
    "rw" 3 (or the number itself)."""
    from tilelang.ir.errors import TileLangError
    from tilelang.ir.expr import ACCESS_MASKS
    if isinstance(access_type, int) and not isinstance(access_type, bool) and access_type in (1, 2, 3):
        return access_type
    m = ACCESS_MASKS.get(access_type) if isinstance(access_type, str) else None
    if m is None:
        raise TileLangError(f"access type {access_type!r} must be \"r\", \"w\", \"rw\" or 1, 2, 3")
    return m


def element_offset(load, offset):
    """`load` moved `offset` elements further in row-major order."""
    buf = load.buffer
    if buf.ndim == 1:
        return BufferLoad(buf, [load.indices[0] + offset])
    strides = buf.get_strides()
    flat = load.indices[0] * strides[0]
    for i, s in zip(load.indices[1:], strides[1:]):
        flat = flat + i * s
    flat = flat + offset
    out = []
    for s in strides:
        out.append(flat // s)
        flat = flat % s
    return BufferLoad(buf, out)
