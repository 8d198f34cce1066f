"""Vector atomic adds: a T.Parallel nest (or a register tile's chunk) whose body adds one
element atomically into global memory, `T.atomic_add(C[i, j], x)`, over consecutive `j`
adds W elements with one instruction (include/tl_cuda/atomic.h `tl::AtomicAddx2/x4`):
float2/float4 on sm_90 (REDG.ADD.F32x4), half2 and bfloat162 pairs. Each element is still
added atomically on its own, so the result is the scalar form's; memory orders keep their
fences around the vector operation."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.backend.cuda.codegen_expr import MEMORY_ORDER_IDS, cast_str
from tilelang.backend.cuda.target import arch_number


def lanes(dtype, arch) -> int:
    """Elements per vector atomic add of `dtype` on `arch` (0: none)."""
    n = arch_number(arch)
    if dtype.name == "float32":
        return 4 if n >= 90 else 0
    if dtype.name == "float16":
        return 2 if n >= 70 else 0
    if dtype.name == "bfloat16":
        return 2 if n >= 80 else 0
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
    """`tl::AtomicAddx{W}(&dst, v0, ...)` (with the call's memory order)."""
    order = call.args[2].value if len(call.args) > 2 else None
    oid = MEMORY_ORDER_IDS[order]
    fn = f"tl::AtomicAddx{W}" + (f"_ordered<{oid}>" if oid else "")
    return f"{fn}(&{dst_ref}, {', '.join(values)});"


def element_value(cg, call):
    """The added value of the element the current bindings name, in the tensor's type."""
    dst, v = call.args[0], call.args[1]
    return cast_str(v.dtype, dst.buffer.dtype, cg.expr(v))
