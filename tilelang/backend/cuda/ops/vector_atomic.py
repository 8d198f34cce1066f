"""Vector atomic adds: a T.Parallel nest (or a register tile's chunk) whose body adds one
element atomically into global memory, `T.atomic_add(C[i, j], x)`, over consecutive `j`
adds W elements with one instruction (include/tl_cuda/atomic.h `tl::AtomicAddx2/x4`):
float2/float4 on sm_90 (REDG.ADD.F32x4), half2 and bfloat162 pairs. Each element is still
added atomically on its own, so the result is the scalar form's; memory orders keep their
fences around the vector operation."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.tile_ops import atomic_order
from tilelang.backend.cuda.emit.expr import cast_str, order_arg
from tilelang.backend.cuda.target import arch_number


def lanes(dtype, arch) -> int:
    """Elements per vector atomic add of `dtype` on `arch` when a loop is vectorized (0:
    none): float4 is one instruction on sm_90 only; a 16-bit pair is one 32-bit atomic on
    every target (a bf16 pair below sm_90 one 32-bit compare-and-swap loop instead of two)."""
    if dtype.name == "float32":
        return 4 if arch_number(arch) >= 90 else 0
    if dtype.name in ("float16", "bfloat16"):
        return 2
    return 0


def match(body):
    """(guard | None, the atomic_add call) when the body is one unused atomic add into a
    global tensor, or None."""
    guard = None
    if isinstance(body, S.IfThenElse) and body.else_body is None:
        guard, body = body.cond, body.then_body
    if not isinstance(body, S.Evaluate) or not isinstance(body.value, E.Call):
        return None
    call = body.value
    if call.name != "atomic_add" or not call.args or not isinstance(call.args[0], E.BufferLoad):
        return None
    if call.args[0].buffer.scope != "global":
        return None
    return guard, call


def call_line(cg, call, W, dst_ref, values):
    """`AtomicAddx{W}(&dst, v0, ...[, order])` (the call's memory order trailing)."""
    return f"AtomicAddx{W}(&{dst_ref}, {', '.join(values)}{order_arg(atomic_order(call))});"


def element_value(cg, call):
    """The added value of the element the current bindings name, in the tensor's type."""
    dst, v = call.args[0], call.args[1]
    return cast_str(v.dtype, dst.buffer.dtype, cg.expr(v))



# The explicit vector forms: `T.atomic_addx{n}(C[i, j], V[k, l][, return_prev=True])` arrive
# as `for t in T.vectorized(n): [prev[t] =] atomic_add(C[i, j + t], v)` (language/atomic.py;
# at block level the register tile is a shared `prev_once` that thread 0 writes,
# transform/broadcast_block_effects.py). Each becomes one `AtomicAddx{n}(&C[i, j], v0, ...
# [, order])`, or `AtomicAddx{n}Ret(...)` whose result lands in prev[0:n]: float2/float4 as
# they are, a 16-bit pair as its 32-bit word (`tl::to_uint1`), a quad as two (uint2). Each
# lane is still an atomic add of its own, as in the loop.
_LANE_DTYPES = ("float32", "float16", "bfloat16")


def match_lanes(loop):
    """(prev store | None, the atomic_add call) when `loop` is such a lane loop, or None."""
    from tilelang.ir.expr import const_int_value
    if loop.kind != S.VECTORIZED or loop.step is not None or const_int_value(loop.min) != 0 or \
            const_int_value(loop.extent) not in (2, 4):
        return None
    st = loop.body
    if isinstance(st, S.Evaluate):
        store, call = None, st.value
    elif isinstance(st, S.BufferStore) and len(st.indices) == 1 and st.indices[0] is loop.var:
        store, call = st, st.value   # prev[t]: the lanes in order
    else:
        return None
    if not isinstance(call, E.Call) or call.name != "atomic_add" or not call.args:
        return None
    dst = call.args[0]
    if not isinstance(dst, E.BufferLoad) or dst.buffer.scope != "global" or \
            dst.buffer.dtype.name not in _LANE_DTYPES:
        return None
    if store is not None and store.buffer.dtype is not dst.buffer.dtype:
        return None
    return store, call


def lane_width(k, loop) -> int:
    """The lanes of one vector atomic that lane loop `loop` runs as (0: not a lane loop, or
    its first element not provably aligned to the vector: the loop runs element by element).
    `k`: the kernel's strides (the plan's placements). Chosen by plan/copy_forms.py for
    every `T.vectorized` loop (the form `vector atomic xN`)."""
    from tilelang.backend.cuda.ops.vector_access import _vector_access
    m = match_lanes(loop)
    if m is None:
        return 0
    n, dst = E.const_int_value(loop.extent), m[1].args[0]
    return n if _vector_access(k.strides(dst.buffer), dst.indices, loop.var, n) else 0


def emit_lanes(cg, loop, block, n):
    """Print the lane loop as one vector atomic of `n` lanes (its form, `lane_width`)."""
    from tilelang.backend.cuda.ops.vector_access import _require_aligned
    m = match_lanes(loop)
    if m is None or E.const_int_value(loop.extent) != n:
        raise AssertionError(f"CUDA codegen: the loop planned as a vector atomic x{n} is not a lane loop")
    store, call = m
    dst = call.args[0]
    _require_aligned(cg, dst.buffer, n * dst.buffer.dtype.itemsize)
    lane = [_at_lane(call, loop.var, t) for t in range(n)]   # the calls of lanes 0..n-1
    values = [element_value(cg, c) for c in lane]
    call, dst = lane[0], lane[0].args[0]
    if store is None:
        line = call_line(cg, call, n, cg.access(dst), values)
    else:
        ret = f"AtomicAddx{n}Ret(&{cg.access(dst)}, {', '.join(values)}{order_arg(atomic_order(call))})"
        if n == 2 and dst.buffer.dtype.bits == 16:
            ret = f"tl::to_uint1({ret})"
        line = f"tl::store_lanes(&{cg.access(_at_lane(store, loop.var, 0))}, {ret});"
    cg.w(f"if (tl_tid == 0) {{ {line} }}" if cg._guard(block, loop.body) else line)


def _at_lane(node, var, t):
    """`node` with the lane variable set to `t`, its indices simplified."""
    from tilelang.ir.visitor import substitute
    from tilelang.arith.simplify import simplify
    node = substitute(node, {var: E.IntImm(t)})
    if isinstance(node, S.BufferStore):
        return S.BufferStore(node.buffer, node.value, [simplify(i) for i in node.indices])
    dst = node.args[0]
    dst = E.BufferLoad(dst.buffer, [simplify(i) for i in dst.indices])
    return E.Call(node.name, [dst, simplify(node.args[1])] + list(node.args[2:]), node.dtype)
