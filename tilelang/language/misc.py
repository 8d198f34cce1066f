"""Debugging and hints: `T.print`, `T.device_assert`, `T.annotate_layout`,
`T.sync_threads`, `T.macro`, `T.evaluate`."""
from __future__ import annotations

import functools

from tilelang.ir import builder as B
from tilelang.ir import stmt as S
from tilelang.ir.buffer import Buffer, BufferRegion
from tilelang.ir.expr import convert, as_bool, BufferLoad, PrimExpr, StringImm
from tilelang.ir.errors import TileLangError, located


def print(obj, msg: str = "", warp_group_id=0, warp_id=0):  # noqa: A001 - published name
    b = B.require("T.print")
    if isinstance(obj, Buffer) and obj.is_var():
        obj = obj.load()
    if isinstance(obj, BufferRegion):
        obj = obj.buffer
    if not isinstance(obj, (Buffer, PrimExpr)):
        obj = convert(obj)
    b.emit(S.Print(obj, msg))


def device_assert(cond, msg: str = ""):
    b = B.require("T.device_assert")
    if isinstance(cond, bool):
        if not cond:
            raise TileLangError(f"T.device_assert is always false: {msg}")
        return
    b.emit(S.Assert(as_bool(convert(cond)), msg))


def let(var, value):
    """Bind the scalar variable `var` (e.g. `x = T.int32()`) to `value` for the rest of the
    enclosing block: `T.let(x, ko * block_K)`."""
    from tilelang.ir.expr import Var, cast
    b = B.require("T.let")
    if not isinstance(var, Var):
        raise TileLangError(f"T.let binds a scalar variable (e.g. `x = T.int32()`), got {var!r}")
    if isinstance(value, Buffer) and value.is_var():
        value = value.load()
    value = convert(value)
    if value.dtype is not var.dtype:
        value = cast(value, var.dtype)
    b.emit(S.LetStmt(var, value, None))


def assume(cond):
    """Promise that `cond` holds from here to the end of the enclosing block: bounds checks
    it implies are dropped. A condition on kernel parameters and dynamic dimensions alone
    is checked at each call (a RuntimeError when it does not hold)."""
    b = B.require("T.assume")
    if isinstance(cond, bool):
        if not cond:
            raise TileLangError("T.assume is always false")
        return
    if isinstance(cond, Buffer) and cond.is_var():
        cond = cond.load()
    b.emit(S.Assume(as_bool(convert(cond))))


def func_attr(attrs: dict):
    """TVM's `T.func_attr({...})`: attributes of this kernel (`PrimFunc.attrs`). Ours need
    none of TVM's (`tir.noalias`: parameters never alias here anyway); they are kept."""
    b = B.require("T.func_attr")
    if not isinstance(attrs, dict) or not all(isinstance(k, str) for k in attrs):
        raise located(TypeError, f"T.func_attr takes a dict of str keys, got {attrs!r}")
    b.func_attrs.update(attrs)


def annotate_pass_configs(configs: dict):
    """Pass configs of this kernel (the `tilelang_pass_configs` attribute): compiles use them
    unless their own `pass_configs=` says otherwise."""
    from tilelang.transform.pass_keys import check_pass_configs
    b = B.require("T.annotate_pass_configs")
    check_pass_configs(configs)
    b.func_attrs.setdefault("tilelang_pass_configs", {}).update(
        {getattr(k, "value", k): v for k, v in dict(configs).items()})


def annotate_compile_flags(flags):
    """Extra device-compiler flags of this kernel (the `tilelang_compile_flags` attribute)."""
    b = B.require("T.annotate_compile_flags")
    flags = flags.split() if isinstance(flags, str) else list(flags)
    if not all(isinstance(f, str) for f in flags):
        raise TileLangError(f"T.annotate_compile_flags takes strings, got {flags!r}")
    b.func_attrs.setdefault("tilelang_compile_flags", []).extend(flags)


def annotate_layout(layout_map: dict, allow_reannotation=False, allow_buffer_region=False):
    """Fix the layout of shared/fragment buffers: where each element is stored (the GPU
    backend honours it or says why not; no effect on results)."""
    from tilelang.ir.span import current_span, caller_span
    span = current_span() or caller_span()
    for buf, layout in layout_map.items():
        if isinstance(buf, Buffer):
            buf.layout = layout
            buf.layout_span = span   # where a backend that cannot honour it points its error


def annotate_padding(*a, **k):
    return None


def annotate_restrict_buffers(*buffers):
    """Tell the compiler that these tensor parameters may overlap in memory (slices of
    one tensor): their pointers lose `__restrict__`, so loads are not reordered across
    stores to the others."""
    for b in buffers:
        if not isinstance(b, Buffer) or b.scope != "global":
            raise TileLangError("T.annotate_restrict_buffers takes the kernel's tensor parameters, "
                                f"got {b!r}")
        b.may_alias = True


def annotate_l2_hit_ratio(*a, **k):
    return None


def annotate_safe_value(safe_value_map: dict):
    """The value that loads of a tensor read outside its bounds (0 unless annotated):
    `T.annotate_safe_value({A: pad})` makes the bounds-checked loads of A (T.copy's, and
    element reads) read `pad` in the enclosing block scope: the innermost `T.sblock`, else
    the whole `T.Kernel` body. An inner scope's annotation holds inside it only."""
    from tilelang.ir.expr import const_int_value, IntImm, FloatImm
    from tilelang.ir.safe_values import SAFE_VALUE_MAP
    b = B.require("T.annotate_safe_value")
    if not b.block_scopes:
        raise TileLangError("T.annotate_safe_value can only be used inside `with T.Kernel(...)` or "
                            "`with T.sblock(...)`: it applies to that scope")
    values = {}
    for buf, value in dict(safe_value_map).items():
        if not isinstance(buf, Buffer) or buf.scope != "global":
            raise TileLangError(f"T.annotate_safe_value takes the kernel's tensor parameters as keys, got {buf!r}")
        v = convert(value)
        if not isinstance(v, (IntImm, FloatImm)):
            if const_int_value(v) is None:
                raise TileLangError(f"T.annotate_safe_value: the value for {buf.name} must be a constant, got {v}")
            v = IntImm(const_int_value(v))
        values[buf] = v.value
    scope = b.block_scopes[-1].annotations
    scope[SAFE_VALUE_MAP] = {**scope.get(SAFE_VALUE_MAP, {}), **values}


def sync_threads(barrier_id=None, arrive_count=None):
    """A barrier of the whole block; with `arrive_count`, the named barrier `barrier_id`
    of only that many threads (a multiple of 32: whole warps), for use inside branches
    that only some warps take."""
    b = B.require("T.sync_threads")
    args = []
    for what, v in (("barrier_id", barrier_id), ("arrive_count", arrive_count)):
        if v is None:
            args.append(None)
            continue
        if isinstance(v, Buffer) and v.is_var():
            v = v.load()
        args.append(convert(v))
    bid, cnt = args
    if cnt is not None and bid is None:
        raise TileLangError("T.sync_threads(arrive_count=...) needs a barrier_id too",
                            hint="e.g. T.sync_threads(1, 128); id 0 is the block-wide barrier")
    from tilelang.ir.expr import const_int_value
    c = const_int_value(cnt) if cnt is not None else None
    if c is not None and (c <= 0 or c % 32):
        raise TileLangError(f"T.sync_threads: arrive_count={c} must be a positive multiple of 32 (whole warps)")
    i = const_int_value(bid) if bid is not None else None
    if i is not None and not 0 <= i < 16:
        raise TileLangError(f"T.sync_threads: barrier_id={i} must be in 0..15")
    b.emit(S.Barrier("block", bid, cnt))


def sync_warp(mask=None):
    """`__syncwarp(mask)`: the lanes of `mask` (default: all 32) of the calling warp wait
    for each other, and their shared/global writes before it are visible after it."""
    from tilelang.ir.expr import IntImm
    b = B.require("T.sync_warp")
    if isinstance(mask, Buffer) and mask.is_var():
        mask = mask.load()
    m = convert(mask) if mask is not None else IntImm(0xFFFFFFFF, "uint32")
    b.emit(S.Barrier("warp", mask=m))


def sync_global():
    """A barrier over the whole grid (the published name of T.sync_grid): the kernel is
    launched cooperatively."""
    from tilelang.language.cluster import sync_grid
    return sync_grid()


def no_set_max_nreg(*a, **k):
    return None


def set_max_nreg(reg_count, is_inc):
    """`setmaxnreg` (sm_90a): the warpgroup running it grows (is_inc=1) or shrinks
    (is_inc=0) its registers per thread to `reg_count` (24..256, a multiple of 8), so
    that consumer warpgroups can hold larger accumulators than producer ones. Every
    thread of the warpgroup must run it; elsewhere it is a no-op."""
    from tilelang.ir import mbarrier as M
    from tilelang.ir.expr import const_int_value as _c
    n, inc = _c(convert(reg_count)), _c(convert(is_inc))
    if n is None or inc is None:
        raise TileLangError("T.set_max_nreg: the register count and is_inc must be constants")
    if not (24 <= n <= 256 and n % 8 == 0):
        raise TileLangError(f"T.set_max_nreg: reg_count must be a multiple of 8 in 24..256, got {n}")
    return M.call(M.SET_MAX_NREG, n, 1 if inc else 0)


def inc_max_nreg(reg_count):
    return set_max_nreg(reg_count, 1)


def dec_max_nreg(reg_count):
    return set_max_nreg(reg_count, 0)


def annotate_producer_reg_dealloc(reg_count=24):
    """A hint for automatic warp specialization (which we do not do): accepted, no effect."""
    return None


def annotate_consumer_reg_alloc(reg_count=240):
    """A hint for automatic warp specialization (which we do not do): accepted, no effect."""
    return None


def disable_warp_group_reg_alloc(*a, **k):
    return None


def evaluate(value):
    """`T.evaluate(expr)`: run `expr` for its effects. None (what statement-like calls
    such as `T.tvm_thread_allreduce` return) is a no-op."""
    b = B.require("T.evaluate")
    if value is None:
        return
    b.emit(S.Evaluate(convert(value)))
