"""`T.cast(x, dtype, round=, sat=, rbits=)`: a conversion with an explicit PTX rounding
modifier. A plain conversion (round "" or "rn", saturation as the backend's default) is
an ordinary Cast; anything else is a `tl.cast_rounded` call, which backends lower only
where they have the instruction and otherwise reject at the user's line."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir.errors import TargetFeatureError

CAST_ROUNDED = "tl.cast_rounded"
ROUNDING_MODES = {"", "rn", "rz", "rp", "rm", "rs"}


def rounded_cast(value, dtype, round, sat, rbits):
    args = [value, E.StringImm(round), E.IntImm(int(sat), "bool"), rbits if rbits is not None else E.IntImm(0)]
    return E.Call(CAST_ROUNDED, args, dtype)


def _short(dt):
    return {"float16": "FP16", "bfloat16": "BF16", "float4_e2m1fn": "FP4"}.get(
        dt.name, "FP8" if dt.name.startswith("float8") else dt.name)


def reject(call, target):
    """The located error for a rounded cast on `target` (nothing we compile for has these)."""
    value, rnd, sat = call.args[0], call.args[1].value, bool(call.args[2].value)
    dst = call.dtype
    if rnd == "rs":
        if not sat:
            msg = f"T.cast(round='rs', sat=False) to {dst}: sat=false is not supported (stochastic rounding saturates)"
        else:
            msg = (f"Stochastic rounding f32-to-{_short(dst)} requires sm_100a (cvt.rs); this backend does not "
                   f"lower it for {target}")
        hint = "use round='' (round to nearest even), or draw the random bits and round in code"
    elif rnd in ("rz", "rp", "rm"):
        msg = f"T.cast(round='{rnd}') from {value.dtype} to {dst}: the rounding modifier is not lowered for {target}"
        hint = "use round='' or 'rn' (round to nearest even)"
    else:
        msg = f"T.cast(sat=False) to {dst}: conversions to {dst} saturate to finite values on {target}"
        hint = "drop sat=False"
    return TargetFeatureError(msg, getattr(call, "span", None), hint=hint)
