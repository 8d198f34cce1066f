"""Scalar expressions -> host C++: the CPU spellings of the shared C printer
(backend/c/printer.py). Low-precision floats are `tl::` classes (include/tl_cpu.h);
math, casts, min/max and floor division go through `tl::` templates typed by the
operand's C type, so every dtype computes as the GPU does."""
from __future__ import annotations

import math

from tilelang.ir import expr as E
from tilelang.ir.errors import LoweringError
from tilelang.ir.async_copy import PTX_CP_ASYNC
from tilelang.ir.cluster import BLOCK_RANK_IN_CLUSTER, CLUSTER_DEVICE_CALLS, ST_CLUSTER
from tilelang.backend.c.names import C_RESERVED, CNames
from tilelang.backend.c.random import RNG_CALLS, RNG_NAMESPACES
from tilelang.backend.c.printer import CExprPrinter

CTYPES = {
    "bool": "bool", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "float16": "tl::half_t", "bfloat16": "tl::bfloat16_t", "float32": "float", "float64": "double",
    "tfloat32": "float", "float8_e4m3fn": "tl::float8_e4m3_t", "float8_e5m2": "tl::float8_e5m2_t",
    "float8_e8m0fnu": "tl::float8_e8m0_t", "float4_e2m1fn": "tl::float4_e2m1_t",
    "int4": "int8_t", "uint4": "uint8_t", "handle": "void*",
}
MATH = {"exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan",
        "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "floor", "ceil", "round", "trunc", "erf",
        "nearbyint", "rint", "abs", "pow", "fmod", "atan2", "isnan", "isinf", "isfinite", "truncmod"}
DEVICE_CALLS = {"tl.ldg_value", "tl.ldg32", "tl.stg32", "tl.lds32", "tl.sts32", "tl.ldg", "tl.stg", "tl.lds", "tl.sts",
                "tl.rng_init", "tl.rng_rand", "tl.rng_rand_float", "tl.rng_lane", "tl.pdl_trigger", "tl.pdl_sync"}
FAST = {"fast_exp": "exp", "fast_exp2": "exp2", "fast_log": "log", "fast_tanh": "tanh"}


def ctype(dt):
    if dt.is_vector and dt.element.name in CTYPES:
        from tilelang.backend.c.lanes import vector_ctype
        return vector_ctype(dt, CTYPES[dt.element.name])
    try:
        return CTYPES[dt.name]
    except KeyError:
        raise LoweringError(f"dtype {dt} is not supported by the CPU backend") from None


def cpu_names():
    """The CPU code's identifiers: a reserved or digit-led user name gets a suffix `_`
    (or a `v` prefix), as the generated C++ has always spelled them."""
    return CNames(C_RESERVED, escape=lambda base: "v" + base if base[0].isdigit() else base + "_")


def _cluster_call(n, args):
    """language/cluster.py's device calls with clusters of one block (the only ones
    the CPU backend runs): rank 0, stores into the block's own memory."""
    if n == BLOCK_RANK_IN_CLUSTER:
        return "0"
    assert n == ST_CLUSTER, n   # (dst ptr, rank, value)
    return f"(*({args[0]}) = ({args[2]}), 0)"


def _nonneg(e):
    from tilelang.transform.lower_tile_ops import _nonneg as nn
    return nn(e)


def _pos_const(e):
    v = E.const_int_value(e)
    return v is not None and v > 0


class CpuExprPrinter(CExprPrinter):
    """`names`: a `cpu_names()` allocator (a variable gets its name where it is first
    printed); `buffer_access(load)`: a buffer element's lvalue; `lane()`: the C
    expression of the thread index the code runs as (T.rng_lane)."""

    target_name = "CPU"
    target_phrase = "the CPU"
    error = LoweringError
    narrow_wrap_ops = ("+", "-", "*", "/", "<<")

    def __init__(self, names, buffer_access, lane=lambda: "0"):
        super().__init__(names, buffer_access)
        self.lane = lane

    def ctype(self, dt):
        return ctype(dt)

    def p_Var(self, v):
        return self.names.name(v, v.name)

    int_literal = CExprPrinter.suffixed_int_literal

    def float_literal(self, v, dt):
        if math.isinf(v) and dt.name == "float8_e5m2":   # a literal infinity, not a saturating conversion
            return f"tl::float8_e5m2_t::from_bits({0x7C if v > 0 else 0xFC})"
        if math.isnan(v):
            lit = "NAN"
        elif math.isinf(v):
            lit = "INFINITY" if v > 0 else "(-INFINITY)"
        else:
            lit = repr(float(v))
            if "e" not in lit and "." not in lit:
                lit += ".0"
        if dt.name == "float64":
            return lit
        if dt.name in ("float32", "tfloat32"):
            return f"{lit}f" if lit[0].isdigit() or lit[0] == "-" else f"(float){lit}"
        return f"{ctype(dt)}({lit}f)" if (lit[0].isdigit() or lit[0] == "-") else f"{ctype(dt)}((float){lit})"

    def cast(self, src, dst, v):
        if dst.is_bool:
            return f"((bool)(tl::to_double({v}) != 0.0))" if src.is_float else f"((bool)({v}))"
        return f"tl::cast<{ctype(dst)}, {ctype(src)}>({v})"

    def min_max(self, op, e, a, b):
        return f"tl::{op}<{ctype(e.dtype)}>({a}, {b})"

    def floor_div_mod(self, op, e, a, b):
        dt = e.a.dtype
        if dt.is_int and _nonneg(e.a) and _pos_const(e.b):
            return f"({a} / {b})" if op == "//" else f"({a} % {b})"
        if op == "//":
            return f"tl::floordiv<{ctype(dt)}>({a}, {b})" if dt.is_int else \
                f"{ctype(dt)}(tl::floordiv((float)({a}), (float)({b})))" if dt.name != "float64" else \
                f"tl::floordiv({a}, {b})"
        if dt.is_int:
            return f"tl::floormod<{ctype(dt)}>({a}, {b})"
        return f"{ctype(dt)}(tl::floormod((double)({a}), (double)({b})))"

    def intrinsic(self, e):
        n = e.name
        if n in ("tl.atomic_load", "tl.atomic_store"):   # (element, [value,] order)
            t = ctype(e.args[0].dtype)
            if n == "tl.atomic_load":
                return f"tl::atomic_load<{t}>(&{self(e.args[0])})"
            return f"tl::atomic_store<{t}>(&{self(e.args[0])}, ({t})({self(e.args[1])}))"
        if n.startswith("atomic_"):   # (element, value[, order]): the CPU's are sequentially consistent
            return f"tl::{n}<{ctype(e.dtype)}>(&{self(e.args[0])}, {self(e.args[1])})"
        args = [self(a) for a in e.args]
        # CUDA's fast-math spellings (__expf's `__exp`, fast_exp) are the exact functions here
        m = FAST.get(n[2:] if n.startswith("__") else n, n[2:] if n.startswith("__") else n)
        if m in MATH:
            return f"tl::{m}<{ctype(e.args[0].dtype)}>({', '.join(args)})"
        if n == "reinterpret":
            return f"tl::reinterpret<{ctype(e.dtype)}, {ctype(e.args[0].dtype)}>({args[0]})"
        if n in CLUSTER_DEVICE_CALLS:
            return _cluster_call(n, args)
        if n in ("tl.max_nan", "tl.min_nan"):
            return f"tl::{n[3:]}<{ctype(e.dtype)}>({args[0]}, {args[1]})"
        if n == "tl.ffs":
            return f"tl::ffs((int64_t)({args[0]}), {e.args[0].dtype.bits})"
        if n == "tl.fns":
            return f"tl::fns((uint32_t)({args[0]}), (uint32_t)({args[1]}), (int32_t)({args[2]}))"
        if n == PTX_CP_ASYNC:
            return f"tl::cp_async_now<{e.args[2].value}>({args[0]}, {args[1]}, {args[3]})"
        if n in DEVICE_CALLS:
            return self._device_call(e, args)
        if m != n:   # an extern spelled with CUDA's `__` prefix: the host function of that name
            return f"{m}({', '.join(args)})"
        return None

    def _device_call(self, e, args):
        """tl_cpu_ldst.h / tl_cpu_random.h: the memory-access and random intrinsics."""
        n = e.name
        if n in ("tl.ldg", "tl.stg", "tl.lds", "tl.sts"):   # (dst, src, bytes[, pred])
            return f"tl::{n[3:]}<{e.args[2].value}>({', '.join(args[:2] + args[3:])})"
        if n in RNG_CALLS:   # the generator's functions (backend/c/random.py); the last argument names it
            ns = RNG_NAMESPACES[e.args[-1].value]
            if n == "tl.rng_rand_float":   # (state, distribution)
                suffix = "_double" if e.dtype.name == "float64" else ""
                return f"{ns}rng_{e.args[1].value}{suffix}({args[0]})"
            return f"{ns}{n[3:]}({', '.join(args[:-1])})"
        if n == "tl.rng_lane":
            return self.lane()
        if n == "tl.ldg_value":   # one memory: a plain load
            return f"({args[0]})"
        if n in ("tl.pdl_trigger", "tl.pdl_sync"):
            return "0"   # one launch at a time: nothing to overlap
        return f"tl::{n[3:]}({', '.join(args)})"
