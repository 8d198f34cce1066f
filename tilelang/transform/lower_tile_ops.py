"""Tile ops -> scalar loops: the reference semantics of `copy`, `fill`, `reduce`,
`cumsum` and `atomic` (and `gemm`'s `clear_accum`). `Gemm` itself stays a tile op;
each backend lowers it (the CPU calls a C++ template, the GPU tensor cores).

Global accesses that cannot be proven in bounds are predicated: loads outside
read 0, stores outside are skipped."""
from __future__ import annotations

import math

from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir import expr as E
from tilelang.ir.buffer import Buffer, BufferRegion
from tilelang.ir.safe_values import SafeValueScopes
from tilelang.ir.dtypes import DataType
from tilelang.ir.visitor import Mutator, walk
from tilelang.arith.simplify import simplify
from tilelang.transform.pass_manager import function_pass
from tilelang.transform.mark_per_thread import mark as mark_per_thread_stmt


def _spanned(stmt, span):
    def setspan(s):
        if isinstance(s, S.Stmt) and getattr(s, "span", None) is None:
            s.span = span
    from tilelang.ir.visitor import walk
    walk(stmt, setspan)
    return stmt


def _nonunit(r: BufferRegion):
    return [d for d, e in enumerate(r.extents) if E.const_int_value(e) != 1]


def _indices(r: BufferRegion, loop_vars, dims):
    """Indices into r's buffer: start + loop var on the `dims` dimensions, start elsewhere."""
    idx = [s for s in r.starts]
    for v, d in zip(loop_vars, dims):
        idx[d] = simplify(idx[d] + v)
    return idx


def in_bounds(buf, indices, region=None):
    """Condition that `indices` lie inside `buf`, or None when provably always true."""
    conds = []
    for d, (i, n) in enumerate(zip(indices, buf.shape)):
        ci, cn = E.const_int_value(i), E.const_int_value(n)
        if ci is not None and cn is not None:
            if 0 <= ci < cn:
                continue
        if region is not None and _region_dim_fits(region, d, buf.shape[d]):
            continue
        conds.append(E.binop("<", i, n))
        if not _nonneg(i):
            conds.append(E.binop(">=", i, 0))
    if not conds:
        return None
    out = conds[0]
    for c in conds[1:]:
        out = E.binop("&&", out, c)
    return out


def _nonneg(i):
    from tilelang.arith.simplify import linear_form
    lin = linear_form(i) if isinstance(i, E.PrimExpr) else None
    if lin is None:
        return False
    terms, const = lin
    return const >= 0 and all(c >= 0 and isinstance(a, E.Var) for a, c in terms.values())


def _region_dim_fits(region, d, dim):
    """start + extent <= dim for constant start/extent/dim."""
    s, e, n = (E.const_int_value(region.starts[d]), E.const_int_value(region.extents[d]),
               E.const_int_value(dim))
    return s is not None and e is not None and n is not None and 0 <= s and s + e <= n


def _loops(vars_, exts, body, kind=S.PARALLEL):
    for v, e in reversed(list(zip(vars_, exts))):
        body = S.For(v, E.IntImm(0), e, kind, body)
    return body


def _new_vars(n, prefix="i"):
    return [E.Var(f"{prefix}{k}") for k in range(n)]


def is_fp4_unpack_load(op: TO.Copy) -> bool:
    """`T.tma_copy(packed global float4_e2m1fn, float4_e2m1_unpacked shared)`."""
    src, dst = op.src.buffer, op.dst.buffer
    return bool(op.annotations.get(TO.IS_TMA_COPY)) and src.scope == "global" and \
        src.dtype.name == "float4_e2m1fn" and dst.scope.startswith("shared") and \
        dst.dtype.name == "float4_e2m1_unpacked"


def reject_fp4_unpacked_copy(op: TO.Copy):
    """`float4_e2m1_unpacked` shared memory (one fp4 value per byte slot) is filled only by
    sm_100's TMA unpack load (CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B) for tcgen05 MMA operands;
    any other copy of it is an error, with the published package's messages."""
    from tilelang.ir.errors import LoweringError
    src, dst = op.src.buffer, op.dst.buffer
    if "float4_e2m1_unpacked" not in (src.dtype.name, dst.dtype.name) or is_fp4_unpack_load(op):
        return
    span = getattr(op, "span", None)
    if op.annotations.get(TO.IS_TMA_COPY):
        raise LoweringError(
            "T.tma_copy() only supports float4_e2m1_unpacked as an FP4 unpack load from packed global "
            "float4_e2m1fn to unpacked shared memory. The reverse unpacked shared -> packed global TMA store "
            f"is not supported. Got src={src.name} (scope={src.scope}, dtype={src.dtype}), dst={dst.name} "
            f"(scope={dst.scope}, dtype={dst.dtype}).", span=span)
    if src.scope == "global" and src.dtype.name == "float4_e2m1fn":
        raise LoweringError(
            "SIMT copy from packed global float4_e2m1fn to unpacked shared float4_e2m1_unpacked is not "
            f"supported; use T.tma_copy() for FP4 unpack loads (src={src.name}, dst={dst.name}).", span=span)
    raise LoweringError(f"T.copy({src.name} -> {dst.name}): float4_e2m1_unpacked is a shared-memory storage "
                        "tag filled only by a TMA FP4 unpack load; it has no element values to copy", span=span)


def reject_fp4_unpacked_use(node):
    """Copies (reject_fp4_unpacked_copy) and element accesses of float4_e2m1_unpacked buffers:
    a storage tag has no element values (the published package has no register type for it)."""
    from tilelang.ir.errors import LoweringError
    if isinstance(node, TO.Copy):
        reject_fp4_unpacked_copy(node)
    elif isinstance(node, (E.BufferLoad, S.BufferStore)) and node.buffer.dtype.name == "float4_e2m1_unpacked":
        raise LoweringError(f"`{node.buffer.name}` is float4_e2m1_unpacked shared memory, a storage tag filled by a "
                            "TMA FP4 unpack load for tcgen05 MMA: its elements cannot be read or written",
                            span=getattr(node, "span", None))


def reject_fp4_unpack_load(op: TO.Copy):
    """The FP4 unpack load itself: no backend here issues sm_100's TMA unpack."""
    from tilelang.ir.errors import TargetFeatureError
    raise TargetFeatureError(
        f"T.tma_copy({op.src.buffer.name} -> {op.dst.buffer.name}): an FP4 unpack load into float4_e2m1_unpacked "
        "shared memory needs sm_100's TMA unpack data type (CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B, which the CUDA "
        "driver accepts on compute capability 10.0 and newer only: Hopper's TMA has no such type) for tcgen05 MMA; "
        "this package issues sm_80 / sm_90a code only", span=getattr(op, "span", None),
        hint="keep the tile packed: allocate the shared tile as T.float4_e2m1fn")


def lower_copy(op: TO.Copy, safe_values: SafeValueScopes | None = None):
    """`safe_values`: the T.annotate_safe_value scopes around the copy (out-of-bounds
    source elements read 0 without them)."""
    src, dst = op.src, op.dst
    if op.annotations.get("async_copy") and (src.buffer.scope != "global" or
                                             not dst.buffer.scope.startswith("shared")):
        from tilelang.ir.errors import LoweringError
        raise LoweringError(f"T.async_copy only supports global->shared/shared.dyn copies; this one copies "
                            f"`{src.buffer.name}` ({src.buffer.scope}) to `{dst.buffer.name}` ({dst.buffer.scope})",
                            span=getattr(op, "span", None), hint="use T.copy for other scopes")
    sd, dd = _nonunit(src), _nonunit(dst)
    exts = [dst.extents[d] for d in dd]
    vars_ = _new_vars(len(dd))
    sidx = _indices(src, vars_, sd)
    didx = _indices(dst, vars_, dd)
    val = E.BufferLoad(src.buffer, sidx)
    if getattr(src, "name_hint", None):   # `v = A[0, 0:4]` (frontend/control.py)
        val.name_hint = src.name_hint
    if src.buffer.scope == "global":
        c = in_bounds(src.buffer, sidx, src)
        if c is not None:
            val = E.Select(c, val, (safe_values or SafeValueScopes()).out_of_bounds_value(src.buffer))
    val = E.cast(val, dst.buffer.dtype)
    store = S.BufferStore(dst.buffer, val, didx)
    if dst.buffer.scope == "global":
        c = in_bounds(dst.buffer, didx, dst)
        if c is not None:
            store = S.IfThenElse(c, store)
    out = _loops(vars_, exts, store)
    prefer = op.annotations.get("prefer_instruction")
    args = {k: op.annotations[k] for k in COPY_ARG_NAMES if op.annotations.get(k) is not None}
    if isinstance(out, S.For) and args:
        out.annotations[COPY_ARGS] = args   # read by a backend's copy planning (cuda: plan/copy_forms.py)
    if isinstance(out, S.For) and (prefer is not None or op.annotations.get("disable_tma")):
        # True: a backend may copy the tile with TMA; False: it must not (e.g. "sync")
        out.annotations[PREFER_TMA] = prefer == "tma" and not op.annotations.get("disable_tma")
    return out


def lower_fill(op: TO.Fill):
    dst = op.dst
    dd = _nonunit(dst)
    vars_ = _new_vars(len(dd))
    didx = _indices(dst, vars_, dd)
    store = S.BufferStore(dst.buffer, E.cast(op.value, dst.buffer.dtype), didx)
    if dst.buffer.scope == "global":
        c = in_bounds(dst.buffer, didx, dst)
        if c is not None:
            store = S.IfThenElse(c, store)
    return _loops(vars_, [dst.extents[d] for d in dd], store)


def _reduce_init(kind, dtype):
    if kind in ("sum", "abssum", "bitor", "bitxor", "absmax"):  # |x| >= 0: absmax starts at 0
        return E.literal(0, dtype)
    if kind == "bitand":
        return E.const(-1, dtype)
    if kind == "max":
        if dtype.is_float:
            return E.FloatImm(-math.inf, dtype)
        return E.IntImm(-(2 ** (dtype.bits - 1)) if dtype.kind == "int" else 0, dtype)
    if kind == "min":
        if dtype.is_float:
            return E.FloatImm(math.inf, dtype)
        return E.IntImm(2 ** (dtype.bits - 1) - 1 if dtype.kind == "int" else 2 ** dtype.bits - 1, dtype)
    raise ValueError(kind)


def accumulator_dtype(kind, dtype):
    """The dtype a reduction accumulates in: float32 for sums of 16- and 8-bit floats
    (rounding each partial sum to bfloat16 loses the result's low bits), else the
    destination's own."""
    if kind in ("sum", "abssum") and dtype.is_float and dtype.bits < 32:
        return DataType("float32")
    return dtype


def nan_aware(op, a, b, nan_propagate):
    """max/min of two values; with `nan_propagate` a NaN operand wins (`tl.max_nan`), else
    the other operand does (the `max`/`min` BinOps, as CUDA's fmaxf/__hmax)."""
    if nan_propagate and a.dtype.is_float:
        return E.call(f"tl.{op}_nan", [a, b])
    return E.binop(op, a, b)


def _combine(kind, acc, x, nan_propagate=False):
    if kind in ("sum",):
        return E.binop("+", acc, x)
    if kind == "abssum":
        return E.binop("+", acc, E.call("abs", [x]))
    if kind == "max":
        return nan_aware("max", acc, x, nan_propagate)
    if kind == "min":
        return nan_aware("min", acc, x, nan_propagate)
    if kind == "absmax":
        return nan_aware("max", acc, E.call("abs", [x]), nan_propagate)
    if kind == "bitand":
        return E.binop("&", acc, x)
    if kind == "bitor":
        return E.binop("|", acc, x)
    if kind == "bitxor":
        return E.binop("^", acc, x)
    raise ValueError(kind)


def reduce_indices(op: TO.Reduce, ovars, r):
    """(src indices, dst indices, outer extents) of a reduction for outer loop vars
    `ovars` and reduced index `r`: the source's kept dims map onto the destination's
    dims (keepdim form, or its non-unit dims in order)."""
    src, dst = op.src, op.dst
    nd = len(src.extents)
    outer = [d for d in range(nd) if d != op.dim]
    sidx = list(src.starts)
    for v, d in zip(ovars, outer):
        sidx[d] = simplify(sidx[d] + v)
    sidx[op.dim] = simplify(sidx[op.dim] + r)
    dnd = len(dst.extents)
    didx = list(dst.starts)
    if dnd == nd:  # keepdim form
        for v, d in zip(ovars, outer):
            didx[d] = simplify(didx[d] + v)
    else:
        dnon = _nonunit(dst)
        onon = [(v, d) for v, d in zip(ovars, outer) if E.const_int_value(src.extents[d]) != 1]
        if len(dnon) == len(onon):
            for (v, _), dd in zip(onon, dnon):
                didx[dd] = simplify(didx[dd] + v)
        else:
            for k, v in enumerate(ovars):
                if k < dnd:
                    didx[k] = simplify(didx[k] + v)
    return sidx, didx, [src.extents[d] for d in outer]


def lower_reduce(op: TO.Reduce):
    src, dst = op.src, op.dst
    ovars = _new_vars(len(src.extents) - 1)
    r = E.Var("r")
    sidx, didx, outer_exts = reduce_indices(op, ovars, r)
    dt = dst.buffer.dtype
    adt = accumulator_dtype(op.kind, dt)
    clear = op.clear if isinstance(op.clear, bool) else bool(E.const_int_value(op.clear))
    if adt is dt:
        acc = E.BufferLoad(dst.buffer, didx)
        x = E.cast(E.BufferLoad(src.buffer, sidx), dt)
        update = S.BufferStore(dst.buffer, _combine(op.kind, acc, x, op.nan_propagate), didx)
        body = S.For(r, E.IntImm(0), src.extents[op.dim], S.SERIAL, update)
        if clear:
            body = S.seq([S.BufferStore(dst.buffer, _reduce_init(op.kind, dt), didx), body])
        return _loops(ovars, outer_exts, body)
    # a wider accumulator: a per-element local, stored (rounded) once at the end
    acc_buf = Buffer("racc", (1,), adt, "local")
    zero = [E.IntImm(0)]
    acc = E.BufferLoad(acc_buf, zero)
    x = E.cast(E.BufferLoad(src.buffer, sidx), adt)
    start = _reduce_init(op.kind, adt) if clear else E.cast(E.BufferLoad(dst.buffer, didx), adt)
    body = S.seq([
        S.DeclBuffer(acc_buf),
        S.BufferStore(acc_buf, start, zero),
        S.For(r, E.IntImm(0), src.extents[op.dim], S.SERIAL,
              S.BufferStore(acc_buf, _combine(op.kind, acc, x, op.nan_propagate), zero)),
        S.BufferStore(dst.buffer, E.cast(acc, dt), didx),
    ])
    return _loops(ovars, outer_exts, body)


def lower_cumsum(op: TO.CumSum):
    src, dst = op.src, op.dst
    nd = len(src.extents)
    outer = [d for d in range(nd) if d != op.dim]
    ovars = _new_vars(len(outer))
    r = E.Var("r")
    n = src.extents[op.dim]

    def idx(region, pos):
        out = list(region.starts)
        for v, d in zip(ovars, outer):
            out[d] = simplify(out[d] + v)
        out[op.dim] = simplify(out[op.dim] + pos)
        return out
    dt = dst.buffer.dtype
    if op.reverse:
        first = simplify(n - 1)
        pos = simplify(n - 2 - r)   # r = 0 .. n-2 walks n-2 down to 0
        prev = simplify(n - 1 - r)
    else:
        first = E.IntImm(0)
        pos = simplify(r + 1)
        prev = r
    init = S.BufferStore(dst.buffer, E.cast(E.BufferLoad(src.buffer, idx(src, first)), dt), idx(dst, first))
    a, x = E.BufferLoad(dst.buffer, idx(dst, prev)), E.cast(E.BufferLoad(src.buffer, idx(src, pos)), dt)
    combined = E.binop("+", a, x) if op.kind == "sum" else E.maximum(a, x)
    step = S.BufferStore(dst.buffer, combined, idx(dst, pos))
    scan = S.seq([init, S.For(r, E.IntImm(0), simplify(n - 1), S.SERIAL, step)])
    return _loops(ovars, [src.extents[d] for d in outer], scan)


def lower_atomic(op: TO.Atomic):
    dst = op.dst
    dd = _nonunit(dst)
    vars_ = _new_vars(len(dd))
    didx = _indices(dst, vars_, dd)
    if isinstance(op.value, BufferRegion):
        val = E.BufferLoad(op.value.buffer, _indices(op.value, vars_, _nonunit(op.value)))
    else:
        val = op.value
    val = E.cast(val, dst.buffer.dtype)
    stmt = S.Evaluate(TO.atomic_call(op.kind, E.BufferLoad(dst.buffer, didx), val, op.memory_order))
    if dst.buffer.scope == "global":
        c = in_bounds(dst.buffer, didx, dst)
        if c is not None:
            stmt = S.IfThenElse(c, stmt)
    return _loops(vars_, [dst.extents[d] for d in dd], stmt)


def lower_gemm_clear(op: TO.Gemm):
    """`clear_accum` becomes a fill of C (guarded when the flag is a runtime value)."""
    ca = op.clear_accum
    if ca is False or ca is None or (isinstance(ca, E.IntImm) and not ca.value):
        return op
    g = TO.Gemm(op.A, op.B, op.C, op.trans_A, op.trans_B, op.policy, False, op.k_pack, op.wg_wait,
                op.annotations)
    g.span = op.span
    fill = lower_fill(TO.Fill(op.C, E.literal(0, op.C.buffer.dtype)))
    if ca is True or (isinstance(ca, E.IntImm) and ca.value):
        return S.seq([fill, g])
    return S.seq([S.IfThenElse(E.as_bool(ca), fill), g])


LOWERINGS = {TO.Copy: lower_copy, TO.Fill: lower_fill, TO.Reduce: lower_reduce, TO.CumSum: lower_cumsum,
             TO.Atomic: lower_atomic}


# in `_keep_tile_ops`: keep the T.tma_copy copies (a backend that issues them itself)
TMA_COPY = "tma_copy"
# ... and the `use_tma=True` atomics (bulk tensor reductions)
TMA_ATOMIC = "tma_atomic"
# on the copy nest of `T.copy(..., prefer_instruction="tma")`
PREFER_TMA = "prefer_tma"
# on the copy nest of a T.copy given any of these arguments: {name: value} (printed with the nest)
COPY_ARGS = "copy_args"
COPY_ARG_NAMES = ("disable_tma", "coalesced_width", "eviction_policy", "loop_layout")


class _Lower(Mutator):
    def __init__(self, keep=()):
        self.keep = tuple(k for k in keep if isinstance(k, type))
        self.keep_tma = TMA_COPY in keep
        self.keep_tma_atomic = TMA_ATOMIC in keep

        self.safe_values = SafeValueScopes()

    def visit_KernelLaunch(self, n):
        with self.safe_values.enter(n):
            return self.generic_visit(n)

    visit_SBlock = visit_KernelLaunch

    def _lower(self, n):
        if isinstance(n, TO.Copy) and is_fp4_unpack_load(n):
            reject_fp4_unpack_load(n)
        if isinstance(n, self.keep):
            return n
        if isinstance(n, TO.Copy) and n.annotations.get("tma_barrier") is not None and self.keep_tma:
            return n   # T.tma_copy: the CUDA codegen issues it as bulk copies where it can
        if isinstance(n, TO.Atomic) and n.use_tma and self.keep_tma_atomic:
            return n
        if isinstance(n, TO.Copy):
            out = lower_copy(n, self.safe_values)
        else:
            fn = LOWERINGS.get(type(n))
            out = fn(n) if fn else n
        out = simplify_stmt(out)
        if n.annotations.get(TO.PER_THREAD):   # every thread runs it, whatever its indices became
            walk(out, lambda x: mark_per_thread_stmt(x) if isinstance(x, (S.Evaluate, S.BufferStore)) else None)
        return _spanned(out, n.span)

    visit_Copy = visit_Fill = visit_Reduce = visit_CumSum = visit_Atomic = _lower

    def visit_Gemm(self, n):
        return _spanned(lower_gemm_clear(n), n.span)

    def visit_FinalizeReducer(self, n):
        # one thread per block (the reference) leaves a reducer final already
        return n if isinstance(n, self.keep) else None


def simplify_stmt(s):
    from tilelang.arith.simplify import Simplifier
    return Simplifier().visit(s)


@function_pass("lower_tile_ops")
def lower_tile_ops(func, ctx=None):
    keep = ctx.get("_keep_tile_ops", ()) if ctx is not None else ()
    # the program's misuses first (errors on any target), then what no backend here issues
    walk(func.body, reject_fp4_unpacked_use)
    return func.with_body(_Lower(keep).visit(func.body))
