"""Scalar expressions -> CUDA C++. Low-precision floats (fp16, bf16, fp8) compute
math functions in float; integer // and % follow Python (floor) semantics, with
shifts and masks for power-of-two divisors."""
from __future__ import annotations

import math

from tilelang.ir import expr as E
from tilelang.ir.async_copy import PTX_CP_ASYNC
from tilelang.ir.tma_ring import SLOT_RELEASE_LAST
from tilelang.ir.mbarrier import TEST_PARITY
from tilelang.ir.dtypes import DataType
from tilelang.backend.c.printer import CExprPrinter
from tilelang.backend.cuda.emit.intrinsics import MEMORY_OPS, RANDOM_OPS, device_call

_CTYPES = {
    "bool": "bool", "int8": "signed char", "int16": "short", "int32": "int", "int64": "long long",
    "uint8": "unsigned char", "uint16": "unsigned short", "uint32": "unsigned int",
    "uint64": "unsigned long long", "float16": "half", "bfloat16": "__nv_bfloat16", "float32": "float",
    "tfloat32": "float", "float64": "double", "float8_e4m3fn": "__nv_fp8_e4m3",
    "float8_e5m2": "__nv_fp8_e5m2", "float8_e8m0fnu": "__nv_fp8_e8m0", "handle": "void*",
    # 4-bit values (one per byte in registers and shared memory; tensors pack two: subbyte.h)
    "int4": "signed char", "uint4": "unsigned char", "float4_e2m1fn": "__nv_fp4_e2m1",
}

# float32 spelling of each math intrinsic; fp64 drops the `f`
_MATH = {
    "exp": "expf", "exp2": "exp2f", "exp10": "exp10f", "log": "logf", "log2": "log2f", "log10": "log10f",
    "log1p": "log1pf", "expm1": "expm1f", "sqrt": "sqrtf", "rsqrt": "rsqrtf", "sin": "sinf", "cos": "cosf",
    "tan": "tanf", "asin": "asinf", "acos": "acosf", "atan": "atanf", "sinh": "sinhf", "cosh": "coshf",
    "tanh": "tanhf", "floor": "floorf", "ceil": "ceilf", "round": "roundf", "trunc": "truncf", "erf": "erff",
    "nearbyint": "nearbyintf", "rint": "rintf", "pow": "powf", "fmod": "fmodf", "atan2": "atan2f",
    "sigmoid": "tl::sigmoid", "fast_exp": "__expf", "fast_exp2": "exp2f", "fast_log": "__logf",
    "fast_tanh": "tanhf", "__exp": "__expf", "__exp2": "exp2f", "__exp10": "__exp10f", "__log": "__logf",
    "__log2": "__log2f", "__log10": "__log10f", "__sin": "__sinf", "__cos": "__cosf", "__tan": "__tanf",
    "__tanh": "tanhf",
}


# cuda::memory_order ids (include/tl_cuda/atomic.h)
MEMORY_ORDER_IDS = {None: 0, "relaxed": 0, "consume": 2, "acquire": 2, "release": 3, "acq_rel": 4, "seq_cst": 5}


def order_arg(order) -> str:
    """The trailing memory-order argument of an atomic helper ('' for relaxed, the default)."""
    oid = MEMORY_ORDER_IDS[order]
    return f", {oid}" if oid else ""


def atomic_helper(kind, ret) -> str:
    """`add` -> AtomicAdd (the value unused) or AtomicAddRet (the previous value)."""
    return "Atomic" + kind.capitalize() + ("Ret" if ret else "")


def ctype(dt) -> str:
    name = dt.name if isinstance(dt, DataType) else str(dt)
    if isinstance(dt, DataType) and dt.is_vector and dt.element.name in _CTYPES:
        from tilelang.backend.c.lanes import vector_ctype
        return vector_ctype(dt, _CTYPES[dt.element.name])
    if name not in _CTYPES:
        raise NotImplementedError(f"the CUDA backend has no C type for {name}")
    return _CTYPES[name]


def is_lowp(dt) -> bool:
    """Floats that C++ arithmetic cannot use directly in every context."""
    return dt.is_float and dt.bits < 32


def float_literal(v: float, dt) -> str:
    if math.isinf(v) and dt.name == "float8_e5m2":   # a literal infinity, not a saturating conversion
        return f"tl::fp8_e5m2_from_bits({0x7C if v > 0 else 0xFC})"
    if math.isnan(v):
        s = "tl::nan_f32()"
    elif math.isinf(v):
        s = "tl::inf_f32()" if v > 0 else "(-tl::inf_f32())"
    elif dt.name == "float64":
        return repr(float(v))
    else:
        s = repr(float(v)) + "f"
        if "e" in s or "inf" in s:
            s = f"{float(v):.9e}f"
    if dt.name in ("float32", "tfloat32"):
        return s
    if dt.name == "float64":
        return f"((double){s})"
    return f"(({ctype(dt)})({s}))"


def cast_str(src_dt, dst_dt, s: str) -> str:
    if src_dt is dst_dt:
        return s
    if dst_dt.is_bool:
        return f"(({s}) != ({ctype(src_dt)})0)" if not is_lowp(src_dt) else f"((float)({s}) != 0.0f)"
    if is_lowp(src_dt) or is_lowp(dst_dt):
        # go through float: there is no direct bf16 <-> half or int <-> fp8 constructor
        inner = s if src_dt.name == "float32" else f"(float)({s})"
        if dst_dt.name == "float32":
            return f"({inner})"
        return f"(({ctype(dst_dt)})({inner}))"
    return f"(({ctype(dst_dt)})({s}))"


def _pow2(v):
    return v is not None and v > 0 and (v & (v - 1)) == 0


class ExprPrinter(CExprPrinter):
    """CUDA C++ spellings of the shared C printer (backend/c/printer.py). `names` maps
    id(Var) -> C name; `buffer_access(load)` returns the C lvalue of a buffer element
    (set by the statement emitter)."""

    target_name = target_phrase = "CUDA"

    def ctype(self, dt):
        return ctype(dt)

    def int_literal(self, value, dt):
        n = dt.name
        if n == "int64":
            return f"{value}LL"
        if n == "uint64":
            return f"{value}ULL"
        if n == "uint32":
            return f"{value}u"
        return f"(({ctype(dt)}){value})"

    def float_literal(self, value, dt):
        return float_literal(value, dt)

    def cast(self, src_dt, dst_dt, s):
        return cast_str(src_dt, dst_dt, s)

    def lane_ctype(self, dt):
        return _LANE_CTOR.get(dt.name) or ctype(dt)

    def floor_div_mod(self, op, e, a, b):
        dt = e.a.dtype
        if dt.is_int:
            cb = E.const_int_value(e.b)
            if _pow2(cb):
                # arithmetic shift and mask are exactly floor division / modulo
                k = cb.bit_length() - 1
                return f"(({a}) >> {k})" if op == "//" else f"(({a}) & {cb - 1})"
            return f"tl::{'floordiv' if op == '//' else 'floormod'}({a}, {b})"
        if is_lowp(dt):
            a, b = f"(float)({a})", f"(float)({b})"
        out = f"tl::{'floordiv' if op == '//' else 'floormod'}({a}, {b})"
        return cast_str(DataType("float32"), dt, out) if is_lowp(dt) else out

    def arith(self, op, dt, a, b):
        if dt.is_float and dt.bits <= 8:
            # fp8 / fp4 types have no C++ operators: compute in float, round once
            out = f"((float)({a}) {op} (float)({b}))"
            return out if op in ("<", "<=", ">", ">=", "==", "!=") else cast_str(DataType("float32"), dt, out)
        return f"({a} {op} {b})"

    def intrinsic(self, e):
        name, args, dt = e.name, e.args, e.dtype
        if name == "abs":
            a = args[0]
            if a.dtype.is_float:
                return self._math("fabsf", args, dt)
            if a.dtype.kind == "uint":
                return self(a)
            return f"(({self(a)}) < 0 ? -({self(a)}) : ({self(a)}))"
        if name in ("isnan", "isinf", "isfinite"):
            return f"{name}((float)({self(args[0])}))" if args[0].dtype.bits <= 32 else \
                f"{name}({self(args[0])})"
        if name == "reinterpret":
            # From spelled out: C promotes narrow ints to int, the source dtype says the width
            return f"tl::bitcast<{ctype(dt)}, {ctype(args[0].dtype)}>({self(args[0])})"
        if name.startswith("atomic_") and args and isinstance(args[0], E.BufferLoad):
            # return_prev=True: the call's value is the previous content
            return self.atomic(e)
        if name in ("tl.atomic_load", "tl.atomic_store"):
            order = order_arg(args[-1].value)
            if name == "tl.atomic_load":
                return f"AtomicLoad(&{self.buffer_access(args[0])}{order})"
            t = ctype(args[0].dtype)
            return f"AtomicStore(&{self.buffer_access(args[0])}, ({t})({self(args[1])}){order})"
        if name == PTX_CP_ASYNC:
            from tilelang.backend.cuda.ops.cp_async import cp_async_now
            return cp_async_now(args[2].value, self(args[0]), self(args[1]), self(args[3]))
        if name in _WARP_CALLS:
            return _WARP_CALLS[name](*[self(a) for a in args])
        if name in MEMORY_OPS or name in RANDOM_OPS:
            return device_call(name, args, dt, self)
        if name in ("tl.max_nan", "tl.min_nan"):
            return f"tl::{name[3:]}({self(args[0])}, {self(args[1])})"
        if name == "tl.ffs":
            a = args[0]
            return f"__ffsll((long long)({self(a)}))" if a.dtype.bits == 64 else f"__ffs((int)({self(a)}))"
        if name == "tl.fns":
            return f"__fns((unsigned)({self(args[0])}), (unsigned)({self(args[1])}), (int)({self(args[2])}))"
        if name == TEST_PARITY:   # include/tl_cuda/tma.h
            return f"tl::mbar_test(&{self(args[0])}, {self(args[1])})"
        if name == SLOT_RELEASE_LAST:   # lane 0 of each warp counts it out (include/tl_cuda/tma.h)
            return f"((tl_tid & 31) == 0 && tl::slot_release_last(&{self(args[0])}, {self(args[1])}))"
        if name == "truncmod":
            return f"(({self(args[0])}) % ({self(args[1])}))"
        if name == "truncdiv":   # C's division (towards zero)
            return f"(({self(args[0])}) / ({self(args[1])}))"
        if name in ("if_then_else",):
            return f"({self(args[0])} ? {self(args[1])} : {self(args[2])})"
        if name in _MATH:
            fn = _MATH[name]
            if dt.name == "float64" and fn.startswith("__"):
                # the fast-math units are single precision: a double keeps the exact function
                fn = _MATH[name.lstrip("_").replace("fast_", "")]
            if dt.name == "float64" and not fn.startswith(("__", "tl::")):
                fn = fn[:-1]
            return self._math(fn, args, dt)
        return None

    def atomic(self, call, ret=True):
        """`atomic_<kind>(dst, value[, order])` on one element: `AtomicAddRet(&dst, v[, order])`,
        its previous value, or (`ret=False`, a statement) `AtomicAdd(...)` (include/tl_cuda/atomic.h)."""
        from tilelang.ir.tile_ops import atomic_order
        dst, val = call.args[0], call.args[1]
        t = ctype(dst.buffer.dtype)
        fn = atomic_helper(call.name[len("atomic_"):], ret)
        return f"{fn}(&{self.buffer_access(dst)}, ({t})({self(val)}){order_arg(atomic_order(call))})"

    def _math(self, fn, args, dt):
        if dt.name == "float64":
            return f"{fn}({', '.join(self(a) for a in args)})"
        strs = [f"(float)({self(a)})" if a.dtype.name != "float32" else self(a) for a in args]
        out = f"{fn}({', '.join(strs)})"
        return out if dt.name == "float32" else cast_str(DataType("float32"), dt, out)


# language/warp.py's intrinsics: the CUDA built-ins (reduce.h has the butterfly reduction)
# one lane of a 16-bit float vector, spelled as the published package's kernels do
_LANE_CTOR = {"float16": "half_t", "bfloat16": "bfloat16_t"}

_WARP_CALLS = {
    "tl.shfl_xor_sync": lambda m, v, d, w: f"__shfl_xor_sync({m}, {v}, {d}, {w})",
    "tl.shfl_down_sync": lambda m, v, d, w: f"__shfl_down_sync({m}, {v}, {d}, {w})",
    "tl.shfl_up_sync": lambda m, v, d, w: f"__shfl_up_sync({m}, {v}, {d}, {w})",
    "tl.shfl_sync": lambda m, v, d, w: f"__shfl_sync({m}, {v}, {d}, {w})",
    "tl.warp_reduce_sum": lambda v: f"tl::warp_reduce({v}, tl::SumOp())",
    "tl.warp_reduce_max": lambda v: f"tl::warp_reduce({v}, tl::MaxOp())",
    "tl.warp_reduce_min": lambda v: f"tl::warp_reduce({v}, tl::MinOp())",
    "tl.warp_reduce_bitand": lambda v: f"tl::warp_reduce({v}, tl::BitAndOp())",
    "tl.warp_reduce_bitor": lambda v: f"tl::warp_reduce({v}, tl::BitOrOp())",
    "tl.any_sync": lambda m, p: f"__any_sync({m}, {p})",
    "tl.all_sync": lambda m, p: f"__all_sync({m}, {p})",
    "tl.ballot_sync": lambda m, p: f"((unsigned long long)__ballot_sync({m}, {p}))",
    "tl.activemask": lambda: "((unsigned long long)__activemask())",
    "tl.syncthreads_count": lambda p: f"__syncthreads_count({p})",
    "tl.syncthreads_and": lambda p: f"__syncthreads_and({p})",
    "tl.syncthreads_or": lambda p: f"__syncthreads_or({p})",
    "tl.match_any_sync": lambda m, v: f"__match_any_sync({m}, {v})",
    "tl.match_all_sync": lambda m, v: f"tl::match_all({m}, {v})",
}
