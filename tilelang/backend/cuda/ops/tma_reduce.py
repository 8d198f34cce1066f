"""`T.atomic_add(dst, shared_tile, use_tma=True)` as one bulk tensor reduction (sm_90+):
`cp.reduce.async.bulk.tensor.Nd.global.shared::cta.add.tile.bulk_group` adds the whole
shared tile into the global tensor (include/tl_cuda/tma.h `tl::tma_store_add`).

Decided in the pass `plan_tma_atomics` (before the tile ops are lowered): the target and
dtype are checked (the hardware adds f16, bf16, f32, s32, u32 and u64 only; the published
package rejects the others, and so do we), and an op the tensor map cannot describe (a
region of the shared tile, a strided or unaligned tensor, a box over 256 elements, a
memory order) becomes the threads' atomics. What is kept is issued by the kernel codegen
(`emit_tma_reduce`): thread 0 issues the reduction and waits for its bulk group, so the
op is done when the next statement runs, as the threads' atomics would be. The shared
tile's writers are ordered before it by the barrier the barrier planner puts there
(plan/sync.py: the op reads the tile); in a kernel with such reductions every barrier
is preceded by each thread's proxy fence (codegen_kernel.sync), which makes the
generic-proxy writes visible to the bulk copy. The shared tile is
row-major (a box without swizzle, the tensor map's element type that of the tensor: the
type the reduction adds in)."""
from __future__ import annotations

from dataclasses import dataclass

from tilelang.ir import expr as E
from tilelang.ir import tile_ops as TO
from tilelang.ir.errors import LoweringError
from tilelang.ir.visitor import Mutator
from tilelang.transform.pass_manager import function_pass
from tilelang.backend.cuda.options import OPTIONS, CudaOptions

# element type -> CUtensorMapDataType (the type the reduction adds in)
TENSOR_MAP_TYPES = {"float16": 6, "bfloat16": 9, "float32": 7, "int32": 3, "uint32": 2, "uint64": 4}
SUPPORTED = tuple(TENSOR_MAP_TYPES)
MAX_BOX = 256   # elements per box dimension


def _check(op, arch):
    from tilelang.backend.cuda.target import arch_number
    if arch_number(arch) < 90:
        raise LoweringError(f"TMA atomic add requires a CUDA target with TMA support (SM90+); the target is {arch}",
                            span=op.span, hint="drop use_tma=True (the threads then add), or compile for sm_90a")
    dt = op.dst.buffer.dtype
    if dt.name not in TENSOR_MAP_TYPES:
        raise LoweringError(f"TMA atomic add does not support dtype {dt.name}; supported scalar dtypes: "
                            f"{', '.join(SUPPORTED)}", span=op.span,
                            hint="drop use_tma=True for this dtype (the threads then add)")


def _const(xs):
    out = [E.const_int_value(x) for x in xs]
    return None if None in out else out


def fits_tensor_map(op, params) -> bool:
    """Whether one box of a tensor map describes the op: the whole row-major shared tile
    added into a region of a dense kernel-parameter tensor whose strides are multiples of
    16 bytes, every box extent at most 256, its innermost a multiple of 16 bytes and its
    first element's innermost coordinate too."""
    dst, val = op.dst, op.value
    g, s = dst.buffer, val.buffer
    if op.kind != "add" or op.memory_order is not None or g.dtype != s.dtype:
        return False
    if id(g) not in params or getattr(g, "strides", None) is not None or not 1 <= g.ndim <= 5:
        return False
    if getattr(s, "alias_of", None) is not None:
        return False
    shape, ext = _const(s.shape), _const(dst.extents)
    inner = _const(g.shape[1:])
    if shape is None or ext is None or inner is None or _const(val.extents) != shape:
        return False
    if any(E.const_int_value(x) != 0 for x in val.starts):
        return False
    if [e for e in ext if e != 1] != [e for e in shape if e != 1]:
        return False
    es = g.dtype.itemsize
    stride = es
    for d in reversed(inner):
        stride *= d
        if stride % 16:
            return False
    from tilelang.backend.cuda.ops.vector_access import offset_aligned16
    return max(ext) <= MAX_BOX and (ext[-1] * es) % 16 == 0 and offset_aligned16(dst.starts[-1], es)


def _check_layout(op):
    """A layout the user gave the shared tile must be one a TensorMap can describe
    (linear, or a 32/64/128-byte swizzle; the published package rejects the others)."""
    buf = op.value.buffer
    lay = getattr(buf, "layout", None)
    if lay is None or not buf.scope.startswith("shared"):
        return
    from tilelang.layout.swizzle import is_tma_wgmma_compatible
    try:
        ok = is_tma_wgmma_compatible(lay, buf)
    except (ValueError, NotImplementedError, TypeError):
        ok = False
    if not ok:
        raise LoweringError(f"TMA atomic add cannot encode the shared layout of `{buf.name}`: it is neither "
                            f"linear nor a 32/64/128-byte swizzle, so it is not representable by a TensorMap "
                            f"descriptor", span=op.span,
                            hint="drop the T.annotate_layout of this tile (the compiler picks one a tensor map "
                                 "can describe), or drop use_tma=True")


class _Plan(Mutator):
    def __init__(self, arch, params, enabled):
        self.arch, self.params, self.enabled = arch, params, enabled

    def visit_Atomic(self, n):
        if not n.use_tma:
            return n
        _check(n, self.arch)
        _check_layout(n)
        if self.enabled and fits_tensor_map(n, self.params):
            return n
        out = TO.Atomic(n.kind, n.dst, n.value, n.return_prev, n.memory_order, use_tma=False)
        out.span = n.span
        return out


@function_pass("plan_tma_atomics")
def plan_tma_atomics(func, ctx=None):
    """Check the `use_tma=True` atomics for the target; keep those a tensor map describes."""
    target = getattr(ctx, "target", None)
    if target is None or getattr(target, "kind", "cuda") != "cuda":
        return func
    options = ctx.get(OPTIONS) or CudaOptions.from_config(ctx.config, target.arch)
    enabled = options.tma_atomics
    params = {id(p) for p in func.params}
    return func.with_body(_Plan(target.arch, params, enabled).visit(func.body))


@dataclass
class TmaReduce:
    """A tensor map for `T.atomic_add(..., use_tma=True)` (a trailing kernel parameter)."""
    dst: object          # the global Buffer (a kernel parameter)
    box: list            # box extent per dimension of dst (outermost first)
    param_name: str      # the kernel parameter's C name
    swizzle: int = 0     # CU_TENSOR_MAP_SWIZZLE_* of the shared tile (0: none, 1/2/3: 32/64/128B)

    def spec(self, bufs, env):
        """What the launcher needs to encode the map (runtime.TensorMap): extents, byte
        strides and box innermost first, the element type, the shared tile's swizzle."""
        from tilelang.backend.c.launch import py_expr
        g = self.dst
        shape, es = g.shape, g.dtype.itemsize
        strides, acc = [], es
        for d in range(g.ndim - 1, 0, -1):
            acc *= E.const_int_value(shape[d])
            strides.append(acc)
        return {"buffer": bufs.index(g), "dims": [py_expr(E.convert(shape[d]), env) for d in range(g.ndim - 1, -1, -1)],
                "strides": strides, "box": self.box[::-1], "elem_bytes": es,
                "data_type": TENSOR_MAP_TYPES[g.dtype.name], "swizzle": self.swizzle}


def has_tma_reduce(body) -> bool:
    """Whether the kernel body keeps a `use_tma` atomic for the codegen."""
    from tilelang.ir.visitor import walk
    found = []
    walk(body, lambda n: found.append(n) if isinstance(n, TO.Atomic) and n.use_tma else None)
    return bool(found)


def _tensor_map_swizzle(cg, buf):
    """The tensor map's swizzle field for the shared tile (0: row-major), or None where
    no tensor map describes its layout: padded or strided rows, several stages, a layout
    that is not one of the public swizzles or whose rows are wider than one swizzle atom
    (one box would need one strip)."""
    p = cg.placement(buf)
    if p is None or p.kind != "smem" or p.swizzle or p.stages != 1:
        return None
    if p.layout is not None:
        from tilelang.layout.swizzle import detect_swizzle_mode, is_tma_wgmma_compatible
        mode = detect_swizzle_mode(p.layout, buf)
        row_bytes = (_const(buf.shape)[-1] or 0) * buf.dtype.itemsize
        if mode.is_none() or row_bytes != mode.value or not is_tma_wgmma_compatible(p.layout, buf):
            return None
        return {32: 1, 64: 2, 128: 3}[mode.value]
    shape = _const(buf.shape)
    want, acc = [], 1
    for d in reversed(shape):
        want.append(acc)
        acc *= d
    return 0 if list(p.strides) == want[::-1] else None


def emit_tma_reduce(cg, op, block) -> bool:
    """The bulk tensor reduction of a kept `use_tma` atomic; False where the shared tile
    is not a plain row-major tile (the caller lowers it to the threads' atomics)."""
    sw = _tensor_map_swizzle(cg, op.value.buffer) if block else None
    if sw is None:
        return False
    g, box = op.dst.buffer, _const(op.dst.extents)
    same = [t for t in cg.tmaps if isinstance(t, TmaReduce) and t.dst is g and t.box == box and t.swizzle == sw]
    if same:   # one map per tensor, box and swizzle
        name = same[0].param_name
    else:
        name = cg.names.fresh(f"{g.name}_desc")
        cg.tmaps.append(TmaReduce(g, box, name, sw))
        cg.aligned[g.name] = max(cg.aligned.get(g.name, 1), 16)
    coords = ", ".join(cg.expr(s) for s in reversed(op.dst.starts))
    cg.w("if (tl_tid == 0) {")
    cg.w(f"  tl::tma_store_add(&{name}, {cg.buf_name(op.value.buffer)}, {coords});")
    cg.w("  tl::tma_store_arrive();")
    cg.w("  tl::tma_store_wait<0, false>();   // the tile is added (and read) before what follows")
    cg.w("  tl::fence_proxy_async_global();   // visible to the block's loads after the next barrier")
    cg.w("}")
    return True
