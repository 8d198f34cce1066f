"""CUDA for hand-written tensor-core calls (ir/tensor_core_calls.py): wgmma.mma_async
with descriptors and the warpgroup fence / commit / wait (sm_90a), ldmatrix (sm_75+)
and mma.sync (sm_80+). wgmma and mma are inline asm written here, one statement per
call, because their register lists follow the shape; each register is an element
of the thread's own array, so the arrays stay in registers
(include/tl_cuda/tensor_core_ptx.h has the rest)."""
from __future__ import annotations

from tilelang.arith.simplify import simplify
from tilelang.ir import expr as E
from tilelang.ir import tensor_core_calls as TC
from tilelang.ir.errors import LoweringError
from tilelang.backend.cuda.target import arch_number

_BITS = {"f16": 16, "bf16": 16, "f32": 32, "tf32": 32, "f64": 64, "s8": 8, "u8": 8, "s32": 32,
         "e4m3": 8, "e5m2": 8}


def _element(load, k):
    """The element k places after `load` (row-major over its buffer)."""
    buf = load.buffer
    flat = None
    for i, s in zip(load.indices, buf.get_strides()):
        t = E.convert(i) * s
        flat = t if flat is None else flat + t
    flat = simplify(flat + k)
    if buf.ndim <= 1:
        return E.BufferLoad(buf, [flat])
    return E.BufferLoad(buf, [simplify((flat // s) % d) for s, d in zip(buf.get_strides(), buf.shape)])


def _check_arch(cg, v):
    arch = cg.target.arch
    n = arch_number(arch)
    if v.name in TC.WGMMA_CALLS and not (n == 90 and arch.endswith("a")):
        raise LoweringError(f"{v.name.replace('tl.', 'T.')} needs wgmma, which only sm_90a has; the target is "
                            f"{arch}", span=v.span, hint="compile with target 'cuda -arch=sm_90a'")
    if v.name == TC.LDMATRIX and n < 75:
        raise LoweringError(f"T.ptx_ldmatrix needs sm_75 or newer; the target is {arch}", span=v.span)
    if v.name == TC.MMA:
        need = 89 if v.args[1].value in ("e4m3", "e5m2") else 80
        if n < need:
            raise LoweringError(f"T.ptx_mma {v.args[0].value} on {v.args[1].value} needs sm_{need} or newer; "
                                f"the target is {arch}", span=v.span)


def _whole_register_array(cg, p):
    """(C name, whether fp32) when pointer `p` is the first element of a register
    accumulator the kernel plan placed (its elements have no per-element address), else None."""
    load = E.addressed_load(p)
    pl = cg.placement(load.buffer) if load is not None else None
    if pl is None or pl.kind != "acc" or any(E.const_int_value(i) != 0 for i in load.indices):
        return None
    return cg.buf_name(load.buffer), load.buffer.dtype.name == "float32"


def tensor_core_call(cg, v) -> str:
    """One line of C for the call `v` in the context of KernelCodegen `cg`."""
    _check_arch(cg, v)
    a = v.args

    def ptr(e):
        return f"&{cg.access(E.addressed_load(e))}"

    if v.name == TC.WARPGROUP_ARRIVE:
        # shared memory written by ordinary stores is read by the async proxy next
        return "tl::fence_proxy_async(); tl::wgmma_fence();"
    if v.name == TC.WARPGROUP_COMMIT:
        return "tl::wgmma_commit();"
    if v.name == TC.WARPGROUP_WAIT:
        return f"tl::wgmma_wait<{E.const_int_value(a[0])}>();"
    if v.name == TC.WARPGROUP_FENCE_OPERAND:
        whole = _whole_register_array(cg, a[0])
        if whole is not None:   # a gemm's accumulator in registers (an fp32 one: fence_regs)
            fn = "fence_regs" if whole[1] else "warpgroup_fence_operand"
            return f"tl::{fn}<{E.const_int_value(a[1])}>({whole[0]});"
        return f"tl::warpgroup_fence_operand<{E.const_int_value(a[1])}>({ptr(a[0])});"
    if v.name == TC.PIN_BEFORE_WGMMA_WAIT:   # a register array (a row statistic): its C name
        return f"tl::pin_before_wgmma_wait<{E.const_int_value(a[1])}>({cg.buf_name(E.addressed_load(a[0]).buffer)});"
    if v.name == TC.INIT_WGMMA_DESC:
        return (f"tl::wgmma_desc_init({cg.access(E.addressed_load(a[0]))}, {ptr(a[1])}, {cg.expr(a[2])}, "
                f"(int)({cg.expr(a[3])}), (int)({cg.expr(a[4])}));")
    if v.name == TC.INCREASE_DESC_OFFSET:
        return f"tl::wgmma_desc_advance({cg.access(E.addressed_load(a[0]))}, (int)({cg.expr(a[1])}));"
    if v.name == TC.LDMATRIX:
        trans = "true" if E.const_int_value(a[0]) else "false"
        return f"tl::ldmatrix_to<{E.const_int_value(a[1])}, {trans}>({ptr(a[3])}, {ptr(a[2])});"
    if v.name == TC.MMA:
        return _mma(cg, v)
    if v.name in (TC.WGMMA_SS, TC.WGMMA_RS):
        return _wgmma(cg, v)
    raise NotImplementedError(v.name)


def _acc_operands(cg, load, c_type, n_values):
    """Output constraints of `n_values` accumulator values from `load` on."""
    if c_type == "f16":   # two halves per register
        return [f'"+r"(*reinterpret_cast<unsigned*>(&{cg.access(_element(load, 2 * k))}))'
                for k in range(n_values // 2)]
    c = {"f32": "f", "s32": "r", "f64": "d"}[c_type]
    return [f'"+{c}"({cg.access(_element(load, k))})' for k in range(n_values)]


def _in_operands(cg, load, t, n_elems):
    """Input constraints of an operand fragment of `n_elems` elements of type t."""
    if t == "f64":
        return [f'"d"({cg.access(_element(load, k))})' for k in range(n_elems)]
    per = 32 // _BITS[t]
    return [f'"r"(tl::reg32(&{cg.access(_element(load, per * k))}))' for k in range(n_elems // per)]


def _regs(first, n):
    return "{" + ", ".join(f"%{first + i}" for i in range(n)) + "}"


def _asm(text, outs, ins):
    body = text.replace("\n", "\\n")
    return f'asm volatile("{body}" : {", ".join(outs)} : {", ".join(ins)});'


def _mma(cg, v):
    shape, a, b, c, A, B, C, sat = v.args
    shape, a, b, c = shape.value, a.value, b.value, c.value
    m, rest = shape[1:].split("n")
    n, k = rest.split("k")
    M, N, K = int(m), int(n), int(k)
    outs = _acc_operands(cg, E.addressed_load(C), c, M * N // 32)
    a_ins = _in_operands(cg, E.addressed_load(A), a, M * K // 32)
    b_ins = _in_operands(cg, E.addressed_load(B), b, K * N // 32)
    nc, na, nb = len(outs), len(a_ins), len(b_ins)
    satf = ".satfinite" if E.const_int_value(sat) else ""
    text = (f"mma.sync.aligned.{shape}.row.col{satf}.{c}.{a}.{b}.{c} {_regs(0, nc)}, {_regs(nc, na)}, "
            f"{_regs(nc + na, nb)}, {_regs(0, nc)};\n")
    return _asm(text, outs, a_ins + b_ins)


def _wgmma(cg, v):
    ss = v.name == TC.WGMMA_SS
    if ss:
        shape, ak, bk, a, b, c, da, aoff, db, boff, C, scale_out, sa, sb = v.args[:14]
    else:
        shape, bk, a, b, c, A, db, boff, C, scale_out, sa, sb = v.args[:12]
        ak = E.IntImm(1)
    shape, a, b, c = shape.value, a.value, b.value, c.value
    N = int(shape.split("n")[1].split("k")[0])
    outs = _acc_operands(cg, E.addressed_load(C), c, N // 2)
    nd = len(outs)
    desc_b = f'"l"(tl::wgmma_desc_add({cg.expr(db)}, (unsigned)({cg.expr(boff)})))'
    if ss:
        ins = [f'"l"(tl::wgmma_desc_add({cg.expr(da)}, (unsigned)({cg.expr(aoff)})))', desc_b]
        a_op, nb = f"%{nd}", nd + 1
    else:
        ins = _in_operands(cg, E.addressed_load(A), a, 4 * 32 // _BITS[a]) + [desc_b]
        a_op, nb = _regs(nd, 4), nd + 4
    ins.append(f'"r"((int)({cg.expr(scale_out)}))')
    tail = ""
    if a in ("f16", "bf16"):
        trans = f", {1 - E.const_int_value(ak)}, {1 - E.const_int_value(bk)}" if ss else \
            f", {1 - E.const_int_value(bk)}"
        tail = f", {sa.value}, {sb.value}{trans}"
    elif a not in ("s8", "u8"):
        tail = f", {sa.value}, {sb.value}"
    text = ("{\n.reg .pred p;\n"
            f"setp.ne.b32 p, %{nb + 1}, 0;\n"
            f"wgmma.mma_async.sync.aligned.{shape}.{c}.{a}.{b} {_regs(0, nd)}, {a_op}, %{nb}, p{tail};\n"
            "}\n")
    return _asm(text, outs, ins)
