"""Per-dtype numerics of the reference: numpy dtypes, rounding, and error bounds.

Every reference value is an `Approx`: the exact result in float64 (inputs are the values
as stored in their dtypes) and a bound on how far a correct kernel may be from it. Each
operation in dtype d adds the standard forward-error terms: `u_d * |result| + eta_d`
(unit roundoff u, and eta for results that underflow into subnormals), on top of the
propagated errors of its operands. A kernel that computes an operation in a wider type
than the program says stays inside the bound; one that computes in a narrower type, drops
a cast, rounds wrongly or reads the wrong element does not. Integers are exact.

The bound scales with the work done: a sum of n terms gets n roundings of the running
magnitude (sum of |terms|), a float16-accumulator GEMM one float16 rounding per 16
products (as the tensor cores' mma.sync f16 form, and the CPU backend's `tl::gemm`)."""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

NUMPY = {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16),
         "bfloat16": np.dtype(ml_dtypes.bfloat16), "int32": np.dtype(np.int32)}
# unit roundoff (half an ulp at 1.0) and the largest rounding error of a result that
# underflows (half the smallest subnormal)
UNIT = {"float32": 2.0 ** -24, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "int32": 0.0}
ETA = {"float32": 2.0 ** -150, "float16": 2.0 ** -25, "bfloat16": 2.0 ** -134, "int32": 0.0}
# approximate intrinsics (exp with fast math: __expf is within a few float32 ulps for
# the small arguments the generator allows)
APPROX_ULPS = 16
# bounds are rigorous to first order; this margin absorbs what the model leaves out
SAFETY = 2.0


# the smallest magnitude that rounds to infinity (the largest finite value plus half an ulp)
OVERFLOW = {"float32": float(np.finfo(np.float32).max) + 2.0 ** 103, "float16": 65520.0,
            "bfloat16": float(ml_dtypes.finfo(ml_dtypes.bfloat16).max) + 2.0 ** 119}


def is_float(dtype: str) -> bool:
    return dtype != "int32"


def np_dtype(dtype: str):
    return NUMPY[dtype]


def stored(x, dtype: str) -> np.ndarray:
    """`x` rounded into `dtype` (as a kernel's tensor holds it)."""
    return np.asarray(x, np.float64).astype(NUMPY[dtype])


def exact(x) -> np.ndarray:
    """A stored array's values as float64 (exact for every dtype here)."""
    return np.asarray(x).astype(np.float64)


@dataclass
class Approx:
    """An exact float64 value and a bound on a correct kernel's distance from it."""
    value: np.ndarray
    err: np.ndarray

    @staticmethod
    def exact(v):
        v = np.asarray(v, np.float64)
        return Approx(v, np.zeros_like(v))


def rounding(v, err, dtype):
    """The error of rounding a value known to within `err` into `dtype`."""
    return UNIT[dtype] * (np.abs(v) + err) + ETA[dtype]


def add(a: Approx, b: Approx, dtype: str, sign: float = 1.0) -> Approx:
    v = a.value + sign * b.value
    e = a.err + b.err
    return Approx(v, e + rounding(v, e, dtype))


def mul(a: Approx, b: Approx, dtype: str) -> Approx:
    v = a.value * b.value
    e = np.abs(a.value) * b.err + np.abs(b.value) * a.err + a.err * b.err
    return Approx(v, e + rounding(v, e, dtype))


def maximum(a: Approx, b: Approx) -> Approx:
    return Approx(np.maximum(a.value, b.value), np.maximum(a.err, b.err))


def minimum(a: Approx, b: Approx) -> Approx:
    return Approx(np.minimum(a.value, b.value), np.maximum(a.err, b.err))


def exp(a: Approx, dtype: str) -> Approx:
    v = np.exp(a.value)
    e = v * np.expm1(a.err)
    hi = v + e
    return Approx(v, e + UNIT[dtype] * hi + APPROX_ULPS * UNIT["float32"] * hi + ETA[dtype])


def cast(a: Approx, dtype: str, src: str) -> Approx:
    if dtype == "int32":
        if is_float(src):   # truncation of an exact value (the generator guarantees one)
            return Approx.exact(np.trunc(a.value))
        return a
    if src == dtype or (dtype == "float32" and src in ("float16", "bfloat16")):
        return a     # widening is exact
    out = Approx(a.value, a.err + rounding(a.value, a.err, dtype))
    # past the dtype's range the rounding gives +-inf (an int32 cube stored as float16);
    # a value whose bound straddles the threshold may round either way: any result
    with np.errstate(invalid="ignore"):
        mag = np.abs(out.value)
        over = mag - out.err >= OVERFLOW[dtype]
        either = ~over & (mag + out.err >= OVERFLOW[dtype])
    if over.any() or either.any():
        out = Approx(np.where(over, np.copysign(np.inf, out.value), out.value),
                     np.where(over, 0.0, np.where(either, np.inf, out.err)))
    return out


def select(cond, a: Approx, b: Approx) -> Approx:
    return Approx(np.where(cond, a.value, b.value), np.where(cond, a.err, b.err))


def sum_bound(mag, n, dtype: str, accum: str = None):
    """Bound for a sum of n terms whose absolute values add up to `mag`, computed in
    `accum` (default: dtype) in any order and stored into dtype."""
    accum = accum or dtype
    return (n + 1) * UNIT[accum] * mag + UNIT[dtype] * mag + (n + 1) * ETA[accum]


@dataclass
class Mismatch:
    name: str
    bad: int
    total: int
    index: tuple
    got: float
    want: float
    bound: float

    def __str__(self):
        return (f"{self.name}: {self.bad} of {self.total} elements off; first at {self.index}: "
                f"got {self.got!r}, want {self.want!r} (allowed error {self.bound:.3g})")


def compare(name: str, got, want: Approx, dtype: str):
    """None when every element of `got` is within the bound of `want`, else a Mismatch."""
    g = exact(got)
    if g.shape != want.value.shape:
        return Mismatch(name, g.size, g.size, (), float("nan"), float("nan"), 0.0)
    if is_float(dtype):
        bound = SAFETY * want.err + 1e-30
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(g) & (np.abs(g - want.value) <= bound)
            ok |= np.isinf(want.value) & (g == want.value)      # an overflow, as the reference says
            ok |= np.isinf(want.err) & ~np.isnan(g)             # a value at the edge of the range
    else:
        bound = np.zeros_like(want.value)
        ok = g == want.value
    if ok.all():
        return None
    idx = tuple(int(i) for i in np.argwhere(~ok)[0])
    return Mismatch(name, int((~ok).sum()), int(ok.size), idx, float(g[idx]), float(want.value[idx]),
                    float(bound[idx]))


def reduce(a: Approx, axis: int, kind: str, dtype: str) -> Approx:
    """A reduction (sum, max, min, abssum, absmax) of approximate values along `axis`,
    computed and stored in `dtype`."""
    v, e = a.value, a.err
    if kind in ("abssum", "absmax"):
        v = np.abs(v)
    if kind in ("sum", "abssum"):
        return Approx(v.sum(axis), e.sum(axis) + sum_bound((np.abs(v) + e).sum(axis), v.shape[axis], dtype))
    red = v.max(axis) if kind in ("max", "absmax") else v.min(axis)
    return Approx(red, e.max(axis))
