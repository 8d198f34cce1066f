"""Within-thread reduction steps that combine two elements per instruction
(include/tl_cuda/reduce_pair.h): a thread's elements of one output go in pairs
(a0 a1) (a2 a3) ... into a pair of partials, folded into one value at the end.

- max/min/absmax of float16/bfloat16: `tl::max2`/`tl::min2` on half2/bfloat162
  (HMNMX2, `_nan` forms with nan_propagate): exact, the order does not matter;
- sum/abssum of float16/bfloat16: the accumulator stays float32 (accumulator_dtype),
  so a pair is widened (`tl::to_float2`) and added with `tl::add2` on float2: two
  independent addition chains instead of one (the fold adds them; the float32
  rounding of the result may differ from the sequential CPU order by an ulp of float32).
The fold of 16-bit pairs uses the CUDA intrinsic itself (`__hmax`, `__hmax_nan`, ...).
"""
from __future__ import annotations

from types import SimpleNamespace

_KINDS = ("sum", "abssum", "max", "min", "absmax")


def pair_parts(op, P, count):
    """How to combine `count` elements of `op`'s source two at a time (None: one at a
    time). P: reduce_lowering.reduce_parts."""
    sdt, ddt = op.src.buffer.dtype, op.dst.buffer.dtype
    if op.kind not in _KINDS or sdt is not ddt or sdt.name not in ("float16", "bfloat16"):
        return None
    if count is None or count < 2 or count % 2:
        return None
    nan = "_nan" if P.nan else ""
    if op.kind in ("sum", "abssum"):
        x = "tl::to_float2(tl::pack2({a}, {b}))"
        if op.kind == "abssum":
            x = f"tl::abs2({x})"
        step = f"tl::add2({{acc}}, {x})"
        return SimpleNamespace(ptype="float2", init=f"tl::pack2({P.init}, {P.init})", step=step,
                               fold="({p}.x + {p}.y)")
    x = "tl::pack2({a}, {b})"
    if op.kind == "absmax":
        x = f"tl::abs2({x})"
    fn = "min" if op.kind == "min" else "max"
    ptype = "half2" if sdt.name == "float16" else "__nv_bfloat162"
    return SimpleNamespace(ptype=ptype, init=f"tl::pack2({P.init}, {P.init})",
                           step=f"tl::{fn}2{nan}({{acc}}, {x})", fold=f"__h{fn}{nan}({{p}}.x, {{p}}.y)")


def pair_lines(pp, acc, pair_var, count, elem):
    """C++ lines reducing `count` elements into the (declared) `acc`: `elem(j)` is the C
    expression of element 2 * tl_q + j (j = 0, 1)."""
    return [f"{pp.ptype} {pair_var} = {pp.init};",
            "#pragma unroll",
            f"for (int tl_q = 0; tl_q < {count // 2}; ++tl_q) "
            f"{pair_var} = {pp.step.format(acc=pair_var, a=elem(0), b=elem(1))};",
            f"{acc} = {pp.fold.format(p=pair_var)};"]
