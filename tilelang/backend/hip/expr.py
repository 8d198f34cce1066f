"""Scalar expressions -> HIP C++: the HIP spellings of the shared C printer
(backend/c/printer.py). Narrow floats are `tl::` types of include/tl_hip.h; math,
min/max, atomics and floor division go through `tl::` functions typed by the operand."""
from __future__ import annotations

import math

from tilelang.ir import expr as E
from tilelang.ir.errors import LoweringError, TargetFeatureError
from tilelang.backend.c.names import C_RESERVED, CNames
from tilelang.backend.c.printer import CExprPrinter

CTYPES = {
    "bool": "bool", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "float16": "tl::half_t", "bfloat16": "tl::bfloat16_t", "float32": "float", "float64": "double",
    "float8_e4m3fnuz": "tl::float8_e4m3fnuz_t", "float8_e5m2fnuz": "tl::float8_e5m2fnuz_t",
    "handle": "void*",
}
MATH = {"exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan",
        "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "floor", "ceil", "round", "trunc", "erf",
        "nearbyint", "rint", "abs", "pow", "fmod", "atan2", "isnan", "isinf", "isfinite"}
FAST = {"fast_exp": "exp", "fast_exp2": "exp2", "fast_log": "log", "fast_tanh": "tanh"}
HIP_RESERVED = C_RESERVED | {"threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "tl", "half", "float4"}


def ctype(dt):
    try:
        return CTYPES[dt.name]
    except KeyError:
        hint = ("the FNUZ fp8 formats (float8_e4m3fnuz, float8_e5m2fnuz) are the ones CDNA3 computes in"
                if dt.name.startswith("float8") else None)
        raise LoweringError(f"dtype {dt} is not supported by the HIP backend", hint=hint) from None


def hip_names():
    return CNames(HIP_RESERVED, escape=lambda base: "v_" + base)


class HipExprPrinter(CExprPrinter):
    target_name = "HIP"
    target_phrase = "AMD GPUs (HIP)"
    error = LoweringError

    def ctype(self, dt):
        return ctype(dt)

    def p_Var(self, v):
        return self.names.name(v, v.name)

    int_literal = CExprPrinter.suffixed_int_literal

    def float_literal(self, v, dt):
        if math.isnan(v):
            lit = "__builtin_nanf(\"\")"
        elif math.isinf(v):
            lit = "__builtin_inff()" if v > 0 else "(-__builtin_inff())"
        else:
            lit = repr(float(v))
            if "e" not in lit and "." not in lit:
                lit += ".0"
            lit = lit if dt.name == "float64" else lit + "f"
        if dt.name in ("float32", "float64"):
            return lit
        return f"{ctype(dt)}({lit})"

    def cast(self, src, dst, v):
        if dst.is_bool:
            return f"((bool)(tl::f32({v}) != 0.0f))" if src.is_float else f"((bool)({v}))"
        if src.is_float and src.bits < 32 and not dst.is_float:
            return f"(({ctype(dst)})tl::f32({v}))"
        if dst.is_float and dst.bits < 32 and not src.is_float:
            return f"{ctype(dst)}((float)({v}))"
        if src.is_float and dst.is_float and src.bits < 32 and dst.bits < 32:
            return f"{ctype(dst)}(tl::f32({v}))"
        return f"(({ctype(dst)})({v}))"

    def min_max(self, op, e, a, b):
        return f"tl::{op}<{ctype(e.dtype)}>({a}, {b})" if e.dtype.name != "float32" else f"tl::{op}({a}, {b})"

    def floor_div_mod(self, op, e, a, b):
        dt = e.a.dtype
        if dt.is_int and _nonneg(e.a) and _pos_const(e.b):
            return f"({a} / {b})" if op == "//" else f"({a} % {b})"
        fn = "floordiv" if op == "//" else "floormod"
        if dt.is_int:
            return f"tl::{fn}<{ctype(dt)}>({a}, {b})"
        return f"{ctype(dt)}(tl::{fn}(tl::f32({a}), tl::f32({b})))"

    def arith(self, op, dt, a, b):
        if dt.is_float and dt.bits < 32 and op in ("+", "-", "*", "/") and dt.name != "float16":
            return f"{ctype(dt)}(tl::f32({a}) {op} tl::f32({b}))"
        return f"({a} {op} {b})"

    def intrinsic(self, e):
        n = e.name
        if n.startswith("atomic_") and n[7:] in ("add", "max", "min"):
            t = ctype(e.args[0].dtype)
            return f"tl::{n}(&{self(e.args[0])}, ({t})({self(e.args[1])}))"
        if n.startswith("tl.tma") or n.startswith("tl.wgmma") or "mbarrier" in n or n.startswith("tl.ptx") \
                or "cluster" in n or n.startswith("ptx_"):
            raise TargetFeatureError(f"`{n}` is an NVIDIA instruction (TMA, wgmma, mbarriers, clusters, PTX); "
                                     f"AMD GPUs have none", getattr(e, "span", None),
                                     hint="write the kernel with T.copy / T.gemm, which the HIP backend lowers")
        args = [self(a) for a in e.args]
        m = FAST.get(n[2:] if n.startswith("__") else n, n[2:] if n.startswith("__") else n)
        if m in MATH:
            return f"tl::{m}({', '.join(args)})"
        if n in ("tl.max_nan", "tl.min_nan"):
            return f"tl::{n[3:]}<{ctype(e.dtype)}>({args[0]}, {args[1]})"
        if n == "reinterpret":
            return f"__builtin_bit_cast({ctype(e.dtype)}, {args[0]})"
        return None


def _nonneg(e):
    from tilelang.transform.lower_tile_ops import _nonneg as nn
    return nn(e)


def _pos_const(e):
    v = E.const_int_value(e)
    return v is not None and v > 0
