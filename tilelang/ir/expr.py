"""Scalar expressions. Python operators on `PrimExpr` build new expressions, so the
kernel body reads like ordinary arithmetic."""
from __future__ import annotations

import math

from tilelang.ir.dtypes import DataType, as_dtype, promote, int32, float32, bool_
from tilelang.ir.span import current_span


class PrimExpr:
    __slots__ = ("dtype", "span")

    def _init(self, dtype):
        self.dtype = dtype
        self.span = current_span()

    # arithmetic -----------------------------------------------------------
    def __add__(self, o): return binop("+", self, o)
    def __radd__(self, o): return binop("+", o, self)
    def __sub__(self, o): return binop("-", self, o)
    def __rsub__(self, o): return binop("-", o, self)
    def __mul__(self, o): return binop("*", self, o)
    def __rmul__(self, o): return binop("*", o, self)
    def __truediv__(self, o): return binop("/", self, o)
    def __rtruediv__(self, o): return binop("/", o, self)
    def __floordiv__(self, o): return binop("//", self, o)
    def __rfloordiv__(self, o): return binop("//", o, self)
    def __mod__(self, o): return binop("%", self, o)
    def __rmod__(self, o): return binop("%", o, self)
    def __pow__(self, o): return call("pow", [self, o])
    def __neg__(self): return binop("-", const(0, self.dtype), self)
    def __pos__(self): return self
    def __abs__(self): return call("abs", [self])
    def __and__(self, o): return binop("&", self, o)
    def __rand__(self, o): return binop("&", o, self)
    def __or__(self, o): return binop("|", self, o)
    def __ror__(self, o): return binop("|", o, self)
    def __xor__(self, o): return binop("^", self, o)
    def __rxor__(self, o): return binop("^", o, self)
    def __lshift__(self, o): return binop("<<", self, o)
    def __rlshift__(self, o): return binop("<<", o, self)
    def __rshift__(self, o): return binop(">>", self, o)
    def __rrshift__(self, o): return binop(">>", o, self)
    def __invert__(self):
        if self.dtype.is_bool:
            return Not(self)
        return binop("^", self, const(-1, self.dtype))

    # comparisons build expressions; `==` too (use `same_as` for identity)
    def __lt__(self, o): return binop("<", self, o)
    def __le__(self, o): return binop("<=", self, o)
    def __gt__(self, o): return binop(">", self, o)
    def __ge__(self, o): return binop(">=", self, o)
    def __eq__(self, o): return binop("==", self, o)
    def __ne__(self, o): return binop("!=", self, o)
    __hash__ = object.__hash__

    def __bool__(self):
        from tilelang.ir.simplify import simplify
        v = simplify(self)
        if isinstance(v, (IntImm, FloatImm)):
            return bool(v.value)
        from tilelang.ir.errors import RuntimeValueAsPythonBool
        raise RuntimeValueAsPythonBool(self)

    def __index__(self):
        from tilelang.ir.simplify import simplify
        v = simplify(self)
        if isinstance(v, IntImm):
            return v.value
        raise TypeError(f"expression `{self}` is not a compile-time integer")

    def __int__(self):
        return self.__index__()

    def __float__(self):
        from tilelang.ir.simplify import simplify
        v = simplify(self)
        if isinstance(v, (IntImm, FloatImm)):
            return float(v.value)
        raise TypeError(f"expression `{self}` is not a compile-time number")

    def same_as(self, other):
        return self is other

    def astype(self, dtype):
        return cast(self, dtype)

    def __repr__(self):
        from tilelang.ir.printer import expr_str
        return expr_str(self)

    __str__ = __repr__

    def __iter__(self):  # stop Python from iterating with __getitem__
        raise TypeError(f"cannot iterate over the scalar expression `{self}`")


class Var(PrimExpr):
    __slots__ = ("name",)

    def __init__(self, name: str, dtype=int32):
        self._init(as_dtype(dtype))
        self.name = name


class IntImm(PrimExpr):
    __slots__ = ("value",)

    def __init__(self, value: int, dtype=int32):
        self._init(as_dtype(dtype))
        self.value = bool(value) if self.dtype.is_bool else int(value)


class FloatImm(PrimExpr):
    __slots__ = ("value",)

    def __init__(self, value: float, dtype=float32):
        self._init(as_dtype(dtype))
        self.value = float(value)


class StringImm(PrimExpr):
    __slots__ = ("value",)

    def __init__(self, value: str):
        self._init(DataType("handle"))
        self.value = value


BINOPS = ("+", "-", "*", "/", "//", "%", "min", "max", "<", "<=", ">", ">=", "==", "!=",
          "&&", "||", "&", "|", "^", "<<", ">>")
COMPARISONS = ("<", "<=", ">", ">=", "==", "!=", "&&", "||")


class BinOp(PrimExpr):
    __slots__ = ("op", "a", "b")

    def __init__(self, op: str, a: PrimExpr, b: PrimExpr, dtype=None):
        assert op in BINOPS, op
        if dtype is None:
            dtype = bool_ if op in COMPARISONS else a.dtype
        self._init(dtype)
        self.op, self.a, self.b = op, a, b


class Not(PrimExpr):
    __slots__ = ("a",)

    def __init__(self, a):
        self._init(bool_)
        self.a = a


class Cast(PrimExpr):
    __slots__ = ("value",)

    def __init__(self, dtype, value: PrimExpr):
        self._init(as_dtype(dtype))
        self.value = value


class Select(PrimExpr):
    """`cond ? t : f`; both sides may be evaluated (use for cheap, safe values)."""
    __slots__ = ("cond", "t", "f")

    def __init__(self, cond, t, f):
        self._init(t.dtype)
        self.cond, self.t, self.f = cond, t, f


class Call(PrimExpr):
    """An intrinsic (math function, bit cast, extern) identified by name."""
    __slots__ = ("name", "args")

    def __init__(self, name: str, args, dtype):
        self._init(as_dtype(dtype))
        self.name = name
        self.args = list(args)


class BufferLoad(PrimExpr):
    # name_hint (optional): the user's name for this element (`value = S[i, j]` in
    # T.Parallel), which a vector of such elements is declared under
    __slots__ = ("buffer", "indices", "name_hint")

    def __init__(self, buffer, indices):
        self._init(buffer.dtype)
        self.buffer = buffer
        self.indices = list(indices)

    # `x[0] += 1` on a var reads then writes through the buffer
    def __setitem__(self, k, v):
        raise TypeError("cannot assign into a single element")


# constructors ---------------------------------------------------------------

def const(value, dtype=None) -> PrimExpr:
    if isinstance(value, PrimExpr):
        return value if dtype is None else cast(value, dtype)
    if dtype is None:
        if isinstance(value, bool):
            dtype = bool_
        elif isinstance(value, int):
            dtype = int32 if -2**31 <= value < 2**31 else DataType("int64")
        else:
            dtype = float32
    dtype = as_dtype(dtype)
    if dtype.is_float:
        return FloatImm(float(value), dtype)
    if isinstance(value, float) and not value.is_integer():
        raise TypeError(f"cannot make a {dtype} constant from {value}")
    return IntImm(int(value), dtype)


def literal(value, dtype) -> PrimExpr:
    """A Python number as a constant of `dtype` (a float going into an integer type is
    cast, i.e. truncated, as C does)."""
    dtype = as_dtype(dtype)
    if dtype.is_float:
        return FloatImm(float(value), dtype)
    if dtype.is_bool:
        return IntImm(bool(value), dtype)
    if isinstance(value, float):
        return cast(const(value), dtype)
    return const(int(value), dtype)


def convert(x) -> PrimExpr:
    """A Python number or expression as a `PrimExpr`."""
    if isinstance(x, PrimExpr):
        return x
    if isinstance(x, (bool, int, float)):
        return const(x)
    try:
        import numpy as np
        if isinstance(x, np.generic):
            return const(x.item(), as_dtype(x.dtype))
    except ImportError:  # pragma: no cover
        pass
    from tilelang.ir.buffer import Buffer
    if isinstance(x, Buffer) and x.scope in ("local.var", "var"):
        return x.load()
    raise TypeError(f"cannot use {type(x).__name__} value {x!r} as an expression")


def _literal_like(x, other: PrimExpr) -> PrimExpr:
    """A Python literal next to a typed operand takes that operand's type
    (an int literal beside a float16 value is a float16 literal)."""
    if isinstance(x, bool):
        return const(x, bool_) if other.dtype.is_bool else const(int(x), other.dtype)
    if isinstance(x, int):
        if other.dtype.is_bool:
            return const(x, int32)
        return const(x, other.dtype)
    if isinstance(x, float):
        if other.dtype.is_float:
            return const(x, other.dtype)
        return const(x, float32)
    return convert(x)


def binop(op: str, a, b) -> PrimExpr:
    if not isinstance(a, PrimExpr) and not isinstance(b, PrimExpr):
        a, b = convert(a), convert(b)
    elif not isinstance(a, PrimExpr):
        a = _literal_like(a, convert(b))
    elif not isinstance(b, PrimExpr):
        b = _literal_like(b, a)
    if not isinstance(b, PrimExpr):
        b = convert(b)
    if not isinstance(a, PrimExpr):
        a = convert(a)
    if op in ("&&", "||"):
        a, b = as_bool(a), as_bool(b)
        return BinOp(op, a, b, bool_)
    if op in ("<<", ">>", "&", "|", "^") and a.dtype.is_bool and b.dtype.is_bool and op in ("&", "|"):
        return BinOp("&&" if op == "&" else "||", a, b, bool_)
    dt = promote(a.dtype, b.dtype)
    if a.dtype is not dt:
        a = cast(a, dt)
    if b.dtype is not dt:
        b = cast(b, dt)
    if op in COMPARISONS:
        return BinOp(op, a, b, bool_)
    if dt.is_bool and op in ("+", "-", "*", "/", "//", "%"):
        a, b = cast(a, int32), cast(b, int32)
        dt = int32
    return BinOp(op, a, b, dt)


def as_bool(x) -> PrimExpr:
    x = convert(x)
    if x.dtype.is_bool:
        return x
    return BinOp("!=", x, const(0, x.dtype), bool_)


def cast(x, dtype) -> PrimExpr:
    dtype = as_dtype(dtype)
    if not isinstance(x, PrimExpr):
        return const(x, dtype)
    if x.dtype is dtype:
        return x
    if isinstance(x, IntImm) and dtype.is_int:
        return IntImm(x.value, dtype)
    if isinstance(x, (IntImm, FloatImm)) and dtype.kind in ("float",) and dtype.bits >= 32:
        return FloatImm(float(x.value), dtype)
    return Cast(dtype, x)


def call(name: str, args, dtype=None) -> Call:
    args = [convert(a) if not isinstance(a, PrimExpr) else a for a in args]
    if dtype is None:
        dtype = args[0].dtype if args else int32
    return Call(name, args, dtype)


def minimum(a, b):
    return binop("min", a, b)


def maximum(a, b):
    return binop("max", a, b)


def select(cond, t, f) -> PrimExpr:
    cond = as_bool(cond)
    if not isinstance(t, PrimExpr) and isinstance(f, PrimExpr):
        t = _literal_like(t, f)
    elif not isinstance(f, PrimExpr) and isinstance(t, PrimExpr):
        f = _literal_like(f, t)
    t, f = convert(t), convert(f)
    dt = promote(t.dtype, f.dtype)
    return Select(cond, cast(t, dt), cast(f, dt))


def is_const_int(x, value=None) -> bool:
    if isinstance(x, bool):
        return False
    if isinstance(x, int):
        return value is None or x == value
    return isinstance(x, IntImm) and (value is None or x.value == value)


def conjuncts(c):
    """The terms of `a && b && ...` (c itself when it is no conjunction)."""
    if isinstance(c, BinOp) and c.op == "&&":
        return conjuncts(c.a) + conjuncts(c.b)
    return [c]


def const_int_value(x):
    """The int value of a Python int or an `IntImm`, else None."""
    if isinstance(x, int) and not isinstance(x, bool):
        return x
    if isinstance(x, IntImm):
        return x.value
    if isinstance(x, PrimExpr):
        from tilelang.ir.simplify import simplify
        s = simplify(x)
        if isinstance(s, IntImm):
            return s.value
    return None


def infinity(dtype) -> FloatImm:
    return FloatImm(math.inf, as_dtype(dtype))


# pointers to elements (`T.access_ptr`) -------------------------------------------------

ACCESS_PTR = "tl.access_ptr"
ACCESS_MASKS = {"r": 1, "w": 2, "rw": 3, "wr": 3}


def access_ptr(load: BufferLoad, mask: int) -> Call:
    """The address of one buffer element, passed to extern functions. `mask` says how
    the callee uses the memory behind it: 1 read, 2 write, 3 both."""
    return Call(ACCESS_PTR, [load, IntImm(int(mask))], DataType("handle"))


def addressed_load(e):
    """The element whose address `e` takes (an access pointer), else None."""
    if isinstance(e, Call) and e.name == ACCESS_PTR and e.args and isinstance(e.args[0], BufferLoad):
        return e.args[0]
    return None


def access_mask(e) -> int:
    """The read/write mask of an access pointer (1 read, 2 write, 3 both)."""
    return e.args[1].value if len(e.args) > 1 and isinstance(e.args[1], IntImm) else 3


# vector values (lanes) -----------------------------------------------------------------

SHUFFLE = "tl.shuffle"


class Shuffle(Call):
    """Lanes picked from the concatenation of `vectors` (scalars count as one lane):
    `T.extract_lane(v, i)` is Shuffle([v], [i]); `T.float16x2(a, b)` is Shuffle([a, b],
    [0, 1]). Stored as a call, args = vectors + indices (`n_vectors` of them vectors), so
    passes that rebuild calls keep it; `shuffle_parts` reads any such call back."""
    __slots__ = ()

    def __init__(self, vectors, indices, dtype=None):
        vectors = [convert(v) for v in vectors]
        indices = [i if isinstance(i, IntImm) else IntImm(int(i)) for i in indices]
        if dtype is None:
            dtype = vectors[0].dtype.element.with_lanes(len(indices))
        super().__init__(SHUFFLE, vectors + indices + [IntImm(len(vectors))], dtype)

    @property
    def vectors(self):
        return shuffle_parts(self)[0]

    @property
    def indices(self):
        return shuffle_parts(self)[1]


def shuffle_parts(call):
    """(vectors, indices) of a SHUFFLE call."""
    n = call.args[-1].value
    return call.args[:n], call.args[n:-1]


def make_vector(dtype, values):
    """`dtype(v0, v1, ...)` for a vector dtype: one value per lane, each cast to the
    element type."""
    if len(values) != dtype.lanes:
        raise ValueError(f"{dtype}(...) takes {dtype.lanes} values (one per lane), got {len(values)}")
    lanes = [cast(convert(v), dtype.element) if not isinstance(v, (int, float, bool))
             else const(v, dtype.element) for v in values]
    return Shuffle(lanes, list(range(dtype.lanes)), dtype)
