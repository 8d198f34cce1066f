"""Conversions two lanes at a time: `dst[i] = T.cast(src[i], D)` over consecutive elements
becomes one paired conversion per two elements (`__float22half2_rn`, `__half22float2`,
`__float22bfloat162_rn`, `__bfloat1622float2`, `__nv_cvt_float2_to_fp8x2`, and the fp8 <-> half
and e8m0 helpers of include/tl_cuda/cast.h): half the conversion instructions of the scalar form, with
the same rounding (to nearest even) and the same saturation of fp8 results."""
from __future__ import annotations

_FP8_KIND = {"float8_e4m3fn": "__NV_E4M3", "float8_e5m2": "__NV_E5M2"}


def _pack_fp8(a0, a1):
    return f"(__nv_fp8x2_storage_t)((unsigned)({a0}).__x | ((unsigned)({a1}).__x << 8))"


def _unpack_fp8(p, d0, d1):
    return f"({d0}).__x = (__nv_fp8_storage_t)({p} & 0xff); ({d1}).__x = (__nv_fp8_storage_t)({p} >> 8);"


def can_pair(src_dt, dst_dt) -> bool:
    return pair_cast(src_dt, dst_dt, "a", "b", "c", "d", "p") is not None


def pair_cast(src_dt, dst_dt, a0, a1, d0, d1, p):
    """C statements converting the elements `a0`, `a1` (of `src_dt`) into the lvalues
    `d0`, `d1` (of `dst_dt`) with one paired conversion (`p` names a temporary), or None."""
    s, d = src_dt.name, dst_dt.name
    f2 = f"make_float2({a0}, {a1})"
    if (s, d) == ("float32", "float16"):
        return f"const half2 {p} = __float22half2_rn({f2}); {d0} = __low2half({p}); {d1} = __high2half({p});"
    if (s, d) == ("float16", "float32"):
        return f"const float2 {p} = __half22float2(__halves2half2({a0}, {a1})); {d0} = {p}.x; {d1} = {p}.y;"
    if (s, d) == ("float32", "bfloat16"):
        return (f"const __nv_bfloat162 {p} = __float22bfloat162_rn({f2}); {d0} = __low2bfloat16({p}); "
                f"{d1} = __high2bfloat16({p});")
    if (s, d) == ("bfloat16", "float32"):
        return f"const float2 {p} = __bfloat1622float2(__halves2bfloat162({a0}, {a1})); {d0} = {p}.x; {d1} = {p}.y;"
    if s == "float32" and d in _FP8_KIND:
        return (f"const __nv_fp8x2_storage_t {p} = __nv_cvt_float2_to_fp8x2({f2}, __NV_SATFINITE, {_FP8_KIND[d]}); "
                + _unpack_fp8(p, d0, d1))
    if s == "float16" and d in _FP8_KIND:
        return (f"const __nv_fp8x2_storage_t {p} = __tl_cvt_half2_to_fp8x2(__halves2half2({a0}, {a1}), "
                f"{_FP8_KIND[d]}); " + _unpack_fp8(p, d0, d1))
    if s in _FP8_KIND and d == "float32":
        return (f"const float2 {p} = __tl_cvt_fp8x2_to_float2({_pack_fp8(a0, a1)}, {_FP8_KIND[s]}); "
                f"{d0} = {p}.x; {d1} = {p}.y;")
    if d == "float8_e8m0fnu" and s in ("float32", "float64", "bfloat16"):
        pair = {"float32": f2, "float64": f"make_double2({a0}, {a1})",
                "bfloat16": f"__halves2bfloat162({a0}, {a1})"}[s]
        name = {"float32": "float2", "float64": "double2", "bfloat16": "bfloat162"}[s]
        return f"const __nv_fp8x2_storage_t {p} = __tl_cvt_{name}_to_e8m0x2({pair}); " + _unpack_fp8(p, d0, d1)
    if (s, d) == ("float8_e8m0fnu", "bfloat16"):
        return (f"const __nv_bfloat162 {p} = __tl_cvt_e8m0x2_to_bfloat162({_pack_fp8(a0, a1)}); "
                f"{d0} = __low2bfloat16({p}); {d1} = __high2bfloat16({p});")
    if s in _FP8_KIND and d == "float16":
        return (f"const half2 {p} = __tl_cvt_fp8x2_to_half2({_pack_fp8(a0, a1)}, {_FP8_KIND[s]}); "
                f"{d0} = __low2half({p}); {d1} = __high2half({p});")
    return None
