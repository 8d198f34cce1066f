"""Accumulator tiles stored several columns per instruction (sm_90+): when plan/copy_forms.py
gives a nest over an mma/wgmma accumulator the form `registers xW` (W columns per store),
emit/kernel.py `fragment_loop` prints it as W-column stores instead of one per register.

An accumulator tile stored to a 16-bit global tensor or shared tile,
`G[.., j + c] = f(acc[i, j])`, or added atomically to a global tensor (optionally under a
bound check): registers r and r + 1 hold columns j and j + 1 of one row, so each pair goes
out as one 32-bit store (`tl::store_pair`) or one vector atomic (float2 on sm_90, half2 /
bfloat162: half the atomics of dQ in attention backward). An fp8 global tensor takes four
columns per 32-bit store (`tl::fp8_quad_word`: registers r .. r + 3 hold columns c, c + 1 of
rows R and R + 8; one shuffle gives each lane of a pair its row's four bytes).

It needs the run's address aligned (even row stride and column offset; the pointer is
checked at launch) and the bound check to hold or fail for the whole run alike
(`j + c < n`, n and c multiples of W). A shared tile qualifies in wgmma's sw128 layout
(P of MLA decode: columns j, j + 1, j even, stay neighbours within their 16-byte chunk) or
row-major with an even row stride (dS of attention backward, copied for an mma.sync gemm).
Not on sm_80, where ptxas then trades a small spill for occupancy in some GEMMs."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.visitor import collect_vars, walk
from tilelang.arith.simplify import simplify, linear_form
from tilelang.backend.cuda.layout.fragment import AccLayout, TILE_2D, window_of, index_shift
from tilelang.backend.cuda.target import arch_number

FP8 = ("float8_e4m3fn", "float8_e5m2")   # tl::fp8_pair_bits' types


def split_store(body):
    """(guard, store, atomic) of a nest body `[if g1: [if g2: ...]] G[...] = v` or
    `T.atomic_add(G[...], v)`: the conjunction of its guards (None), the store (for an
    atomic, the store of its value at its address), and vector_atomic.match's (guard,
    call) of an atomic (None). (None, None, None) for any other body."""
    from tilelang.backend.cuda.ops import vector_atomic
    guard, st = None, body
    while isinstance(st, S.IfThenElse) and st.else_body is None:   # nested guards: their conjunction
        guard, st = st.cond if guard is None else E.binop("&&", guard, st.cond), st.then_body
    atomic = vector_atomic.match(st)
    if atomic is not None:
        dst = atomic[1].args[0]
        st = S.BufferStore(dst.buffer, atomic[1].args[1], dst.indices)
    if not isinstance(st, S.BufferStore):
        return None, None, None
    return guard, st, atomic


def accumulator_window(vars_, exts, body, regs, placement):
    """(L, window, shift) of a nest over register fragments `regs` as fragment_loop runs it:
    the layout it follows (the first accumulator's, else the first fragment's), the
    leading window of the accumulator it covers (layout/fragment.py window_of; None: all
    of it) and the shift of a window `acc[i + c0, j + c1]` (None: no shift)."""
    lays = [placement(b).acc for b in regs]
    acc = [L for L in lays if isinstance(L, TILE_2D)]
    L = acc[0] if acc else lays[0]
    window = None
    if acc and exts is not None and len(vars_) == 2:
        window = window_of([E.const_int_value(e) for e in exts], L)
        if window is not None and not any(window):
            window = None
    shift = None
    if acc:
        found = []
        walk(body, lambda n: found.append(index_shift(n.indices, vars_))
             if isinstance(n, (E.BufferLoad, S.BufferStore)) and any(n.buffer is b for b in regs) else None)
        if found and found[0] is not None and any(E.const_int_value(c) != 0 for c in found[0]):
            shift = found[0]
    return L, window, shift


def store_width(k, vars_, exts, body, regs):
    """Columns per store (2, or 4 for fp8) of a nest over accumulator fragments `regs`,
    or 0 where each register goes out on its own (module docstring). `k` gives the
    kernel's placements (`k.placement`), parameters (`k.param_bufs`) and target."""
    L, window, shift = accumulator_window(vars_, exts, body, regs, k.placement)
    if not isinstance(L, AccLayout) or shift is not None or window is not None or len(vars_) != 2 or \
            arch_number(k.target.arch) < 90:
        return 0
    guard, st, atomic = split_store(body)
    if st is None:
        return 0
    if atomic is not None and st.buffer.dtype.name not in ("float32", "float16", "bfloat16"):
        return 0
    in_param = id(st.buffer) in k.param_bufs
    p = k.placement(st.buffer)
    smem_ok = p is not None and p.kind == "smem" and st.buffer.ndim == 2 and p.row_slabs == 1 and (
        p.swizzle or p.layout is None and p.strides is not None and E.const_int_value(p.strides[-1]) == 1 and
        (E.const_int_value(p.strides[-2]) or 1) % 2 == 0)
    if not in_param and (atomic is not None or not smem_ok):
        return 0
    G, jv = st.buffer, vars_[1]
    fp8 = G.dtype.name in FP8 and in_param and atomic is None
    width = 4 if fp8 else 2   # columns per 32-bit store
    bits = 32 if atomic is not None and G.dtype.name == "float32" else 16   # float2 atomics, else 16-bit pairs
    if not (G.dtype.bits == bits or fp8) or getattr(G, "strides", None) is not None or L.regs % width:
        return 0

    def has(e, v):
        return any(x is v for x in collect_vars(e))

    def aligned_offset(e):
        """e = j + (a multiple of width): the run starts on a column that is one."""
        lin = linear_form(simplify(E.binop("-", e, jv)))
        if lin is None or has(simplify(E.binop("-", e, jv)), jv):
            return False
        terms, const = lin
        return const % width == 0 and all(c % width == 0 for _, c in terms.values())
    if any(has(i, jv) for i in st.indices[:-1]) or not aligned_offset(st.indices[-1]):
        return 0
    row = E.const_int_value(G.shape[-1])
    if row is None or row % width:
        return 0
    if guard is not None:
        for c in E.conjuncts(guard):
            if not has(c, jv):
                continue
            # `j + c < n` (n a multiple of width) or `j + c >= 0`: true or false for the run alike
            n = E.const_int_value(c.b) if isinstance(c, E.BinOp) and c.op in ("<", ">=") else None
            if n is None or n % width or (c.op == ">=" and n != 0) or has(c.b, jv) or not aligned_offset(c.a):
                return 0
    return width
