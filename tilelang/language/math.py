"""Scalar math: intrinsics (`T.exp`, `T.sqrt`, ...), `T.max/min`, `T.if_then_else`,
casts, `T.ceildiv` and friends. Integer-only arguments fold in Python."""
from __future__ import annotations

import math as _m

from tilelang.ir.expr import (PrimExpr, convert, call, cast as _cast, select, minimum, maximum, binop,
                              FloatImm, IntImm, const, Call, as_bool, const_int_value)
from tilelang.ir.dtypes import as_dtype, DataType, float32
from tilelang.ir.buffer import Buffer, BufferRegion
from tilelang.ir.errors import TileLangError


def _e(x):
    if isinstance(x, Buffer) and x.is_var():
        return x.load()
    return convert(x)


def _float_arg(x):
    x = _e(x)
    if not x.dtype.is_float:
        x = _cast(x, float32)
    return x


def _unary(name):
    def f(x):
        return call(name, [_float_arg(x)])
    f.__name__ = name
    f.__doc__ = f"`{name}(x)` elementwise."
    return f


for _n in ("exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "sin",
           "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "floor", "ceil",
           "round", "trunc", "erf", "nearbyint", "rint", "fast_exp", "fast_exp2", "fast_log", "fast_tanh"):
    globals()[_n] = _unary(_n)

_FAST_MATH_DTYPES = ("float16", "bfloat16", "float32", "float64")


def _fast_unary(name):
    """A fast-math variant (`T.__exp`): same results on the CPU, approximate units on the
    GPU; like the published package, only for 16- to 64-bit floating-point inputs."""
    def f(x):
        x = _e(x)
        if x.dtype.name not in _FAST_MATH_DTYPES:
            raise TypeError(f"T.{name} only supports floating-point inputs, but got {x.dtype} "
                            f"(cast the value first, e.g. T.{name}(T.cast(x, 'float32')))")
        return call(name, [x])
    f.__name__ = name
    f.__doc__ = f"`{name}(x)` elementwise, fast-math approximation."
    return f


for _n in ("exp", "exp2", "exp10", "log", "log2", "log10", "sin", "cos", "tan", "tanh"):
    globals()["__" + _n] = _fast_unary("__" + _n)


def _int_arg(x, what):
    x = _e(x)
    if not (x.dtype.is_int or x.dtype.is_bool):
        raise TypeError(f"{what} takes an integer, got {x.dtype}")
    return x


def __ffs(value):  # noqa: N807 - published name (CUDA's __ffs)
    """1-based position of the lowest set bit of an integer (0 when it is 0), as an int32;
    64-bit inputs scan all 64 bits (CUDA __ffsll)."""
    return call("tl.ffs", [_int_arg(value, "T.__ffs")], "int32")


def __fns(mask, base, offset):  # noqa: N807 - published name (CUDA's __fns)
    """Position (0-31) of the `offset`-th set bit of the 32-bit `mask`, counted from bit
    `base` upward (offset > 0) or downward (offset < 0); 0xFFFFFFFF when there is none."""
    return call("tl.fns", [_int_arg(mask, "T.__fns"), _e(base), _e(offset)], "uint32")


def abs(x):  # noqa: A001 - published name
    x = _e(x)
    return call("abs", [x])


def pow(x, y):  # noqa: A001
    x = _float_arg(x)
    return call("pow", [x, _cast(_e(y), x.dtype)])


def fmod(x, y):
    x = _float_arg(x)
    return call("fmod", [x, _cast(_e(y), x.dtype)])


def atan2(y, x):
    y = _float_arg(y)
    return call("atan2", [y, _cast(_e(x), y.dtype)])


def isnan(x):
    return call("isnan", [_e(x)], "bool")


def isinf(x):
    return call("isinf", [_e(x)], "bool")


def isfinite(x):
    return call("isfinite", [_e(x)], "bool")


def max(a, b, *rest):  # noqa: A001
    if not isinstance(a, (PrimExpr, Buffer)) and not isinstance(b, (PrimExpr, Buffer)):
        out = a if a >= b else b
    else:
        out = maximum(_e(a) if isinstance(a, Buffer) else a, _e(b) if isinstance(b, Buffer) else b)
    for r in rest:
        out = max(out, r)
    return out


def min(a, b, *rest):  # noqa: A001
    if not isinstance(a, (PrimExpr, Buffer)) and not isinstance(b, (PrimExpr, Buffer)):
        out = a if a <= b else b
    else:
        out = minimum(_e(a) if isinstance(a, Buffer) else a, _e(b) if isinstance(b, Buffer) else b)
    for r in rest:
        out = min(out, r)
    return out


def clamp(dst, min_val, max_val):
    """`dst` limited to [min_val, max_val]."""
    return min(max(dst, min_val), max_val)


def align_up(x, alignment):
    """`x` rounded up to a multiple of `alignment` (ceildiv(x, alignment) * alignment)."""
    return ceildiv(x, alignment) * alignment


def if_then_else(cond, t, f):
    if not isinstance(cond, (PrimExpr, Buffer)):
        return t if cond else f
    return select(_e(cond), t if not isinstance(t, Buffer) else _e(t), f if not isinstance(f, Buffer) else _e(f))


Select = if_then_else


def cast(value, dtype, round: str = "", sat: bool = True, rbits=None):  # noqa: A002 - published names
    """`value` converted to `dtype`. `round` is a PTX rounding modifier ("" / "rn": to
    nearest even, the default; "rz", "rp", "rm"; "rs": stochastic, with random bits
    `rbits`), `sat=False` asks for no saturation; backends reject what they cannot lower
    (ir/rounded_cast.py)."""
    from tilelang.ir.rounded_cast import ROUNDING_MODES, rounded_cast
    if round not in ROUNDING_MODES:
        raise ValueError(f"Invalid round {round!r} for T.cast: must be one of {sorted(ROUNDING_MODES)}")
    if not isinstance(sat, bool):
        raise ValueError(f"Invalid sat {sat!r} for T.cast: must be a bool (True: saturate to finite values)")
    if round == "rs" and rbits is None:
        raise ValueError("T.cast: rbits is required when round='rs' (stochastic rounding takes random bits)")
    if round != "rs" and rbits is not None:
        raise ValueError("T.cast: rbits is only valid with round='rs' (stochastic rounding)")
    value = _e(value) if not isinstance(value, (int, float, bool)) else value
    dtype = as_dtype(dtype)
    saturating = dtype.is_float and dtype.bits <= 8   # our fp8/fp4 conversions saturate, wider ones do not
    if round in ("", "rn") and (sat or not saturating):
        return _cast(value, dtype)
    return rounded_cast(convert(value), dtype, round, sat, _e(rbits) if rbits is not None else None)


def Cast(dtype, value):  # noqa: N802 - published name
    return cast(value, dtype)


def reinterpret(value_or_dtype, dtype_or_value=None, dtype=None):
    """Bit cast. Accepts (dtype, value), (value, dtype) and (value, dtype=...)."""
    if dtype is not None:
        value_or_dtype, dtype_or_value = value_or_dtype, dtype
    if isinstance(value_or_dtype, (str, DataType)):
        dtype, value = value_or_dtype, dtype_or_value
    else:
        value, dtype = value_or_dtype, dtype_or_value
    dt = as_dtype(dtype)
    if isinstance(value, (Buffer, BufferRegion)) and not (isinstance(value, Buffer) and value.is_var()):
        return _reinterpret_tile(value, dt)
    return call("reinterpret", [_e(value)], dt)


def _reinterpret_tile(value, dt):
    """`T.reinterpret(T.ldg64(X[i:i+2]), T.float32x2)`: the bits of a small tile (what the
    wide loads return) read as `lanes` elements of the vector type's element type -- a
    view of the same registers, to store into a region: `Y[i:i+2] = ...`."""
    from tilelang.language.alloc import view
    buf = value if isinstance(value, Buffer) else value.buffer
    if isinstance(value, BufferRegion) and any(const_int_value(s) != 0 for s in value.starts):
        raise TileLangError("T.reinterpret of a region needs the whole tile", hint=f"pass `{buf.name}` itself")
    sizes = [const_int_value(d) for d in buf.shape]
    if None in sizes:
        raise TileLangError(f"T.reinterpret: `{buf.name}` needs a constant shape")
    nbits = buf.dtype.bits
    for n in sizes:
        nbits *= n
    elem, lanes = dt.element, dt.lanes
    if nbits != lanes * elem.bits:
        raise TileLangError(f"T.reinterpret: `{buf.name}` holds {nbits} bits, {dt} has {lanes * elem.bits}")
    v = view(buf, (lanes,), elem)
    return v[0:lanes]


def infinity(dtype="float32"):
    return FloatImm(_m.inf, as_dtype(dtype))


def ninf(dtype="float32"):
    return FloatImm(-_m.inf, as_dtype(dtype))


def max_value(dtype):
    dt = as_dtype(dtype)
    if dt.is_float:
        import numpy as np
        from tilelang.ir.dtypes import numpy_dtype
        return FloatImm(float(np.finfo(numpy_dtype(dt)).max), dt)
    if dt.kind == "uint":
        return IntImm(2 ** dt.bits - 1, dt)
    return IntImm(2 ** (dt.bits - 1) - 1, dt)


def min_value(dtype):
    dt = as_dtype(dtype)
    if dt.is_float:
        import numpy as np
        from tilelang.ir.dtypes import numpy_dtype
        return FloatImm(float(np.finfo(numpy_dtype(dt)).min), dt)
    if dt.kind == "uint":
        return IntImm(0, dt)
    return IntImm(-2 ** (dt.bits - 1), dt)


def _int_or_expr(a, b, op):
    if isinstance(a, int) and isinstance(b, int):
        return None
    return binop(op, a, b)


def ceildiv(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    return (convert(a) + b - 1) // b if not isinstance(a, int) else (a + convert(b) - 1) // b


def floordiv(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    return binop("//", a, b)


def floormod(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a % b
    return binop("%", a, b)


def truncdiv(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return int(a / b)
    return binop("/", a, b) if convert(a).dtype.is_int else call("trunc", [binop("/", a, b)])


def truncmod(a, b):
    return call("truncmod", [_e(a), _e(b)])


def shift_left(a, b):
    return binop("<<", a, b)


def shift_right(a, b):
    return binop(">>", a, b)


def bitwise_and(a, b):
    return binop("&", a, b)


def bitwise_or(a, b):
    return binop("|", a, b)


def bitwise_xor(a, b):
    return binop("^", a, b)


def bitwise_not(a):
    return ~_e(a)


def And(a, b):  # noqa: N802
    return binop("&&", a, b)


def Or(a, b):  # noqa: N802
    return binop("||", a, b)


def Not(a):  # noqa: N802
    from tilelang.ir.expr import Not as _Not
    return _Not(as_bool(_e(a)))


def _region_elements(x, name):
    """The element loads of a buffer or region of constant extent, in row-major order
    (the published T.any_of / T.all_of take a buffer or a region and combine its elements)."""
    import itertools
    from tilelang.ir.buffer import Buffer, BufferRegion, full_region
    from tilelang.ir.expr import BufferLoad, const_int_value
    if isinstance(x, Buffer) and not x.is_var():
        x = full_region(x)
    if not isinstance(x, BufferRegion):
        return None
    exts = [const_int_value(e) for e in x.extents]
    if any(e is None for e in exts):
        raise TypeError(f"T.{name} needs a region of constant extent, got {x}; "
                        f"write the loop over its elements explicitly")
    loads = []
    for idx in itertools.product(*(range(e) for e in exts)):
        loads.append(BufferLoad(x.buffer, [s + i if i else s for s, i in zip(x.starts, idx)]))
    return loads


def _combine(op, unit, conds, name):
    terms = []
    for c in conds:
        loads = _region_elements(c, name)
        terms.extend(loads if loads is not None else [c])
    out = unit
    for c in terms:
        out = c if out is unit else binop(op, out, c)
    from tilelang.ir.expr import const
    return const(unit) if out is unit else out


def all_of(*conds):
    """True when every condition holds; a buffer or region counts each of its elements."""
    return _combine("&&", True, conds, "all_of")


def any_of(*conds):
    """True when some condition holds; a buffer or region counts each of its elements."""
    return _combine("||", False, conds, "any_of")
