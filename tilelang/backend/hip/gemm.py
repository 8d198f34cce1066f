"""T.gemm on CDNA matrix cores: each wavefront computes its (M/WM) x (N/WN) part of C
with MT x NT MFMA tiles per K step; operands are read from LDS in the lane layout of
tilelang/layout/mfma.py (`a_index` / `b_index`), one 8-byte vector per lane where the
operand's K run is contiguous and aligned, else gathered element by element. The MFMA
gets B's vector as its first operand and A's as its second: it computes C^T, so each
lane holds part of a row of C (`ct_index`). An A operand kept in registers (a "tile"
fragment: the previous gemm's layout, register_layouts.py) is read from its own slots,
with the K loop unrolled so that every register index is a constant."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.layout.mfma import WAVE
from tilelang.backend.hip.plan import gemm_dims


def emit_gemm(cg, g):
    tl = cg.plan.tilings[id(g.C.buffer)]
    s = tl.shape
    M, N, K = gemm_dims(g)
    acc = cg.bname(g.C.buffer)
    cg.emit(f"{{   // T.gemm {M}x{N}x{K}: {s.builtin[len('__builtin_amdgcn_'):]} on {tl.WM}x{tl.WN} waves, "
            f"{tl.MT}x{tl.NT} tiles each")
    cg.ind += 1
    lane, wm, wn, k = (cg.names.fresh(x) for x in ("tl_lane", "tl_wm", "tl_wn", "tl_k"))
    cg.emit(f"const int {lane} = tl_tid % {WAVE};")
    cg.emit(f"const int {wm} = (tl_tid / {WAVE}) % {tl.WM}, {wn} = (tl_tid / {WAVE}) / {tl.WM};")
    if _clear(g):
        cg.emit("#pragma unroll")
        cg.emit(f"for (int q = 0; q < {tl.MT * tl.NT}; ++q) {acc}[q] = (tl::floatx{s.c_regs})(0.0f);")
    a, b = cg.names.fresh("tl_a"), cg.names.fresh("tl_b")
    a_regs = cg.plan.regs.get(id(g.A.buffer))
    if a_regs is not None:
        cg.emit("#pragma unroll")
    cg.emit(f"for (int {k} = 0; {k} < {K}; {k} += {s.k}) {{")
    cg.ind += 1
    cg.emit(f"{s.in_ctype} {a}[{tl.MT}], {b}[{tl.NT}];")
    cg.emit("#pragma unroll")
    if a_regs is not None:
        cg.emit(f"for (int t = 0; t < {tl.MT}; ++t) {a}[t] = {_register_operand(cg, g.A.buffer, a_regs.tiling, k, s)};")
    else:
        # A: row i = lane % m of tile mt, K run a_regs * (lane / m) ... + a_regs
        row = f"{wm} * {M // tl.WM} + t * {s.m} + {lane} % {s.m}"
        kk = f"{k} + {s.a_regs} * ({lane} / {s.m})"
        cg.emit(f"for (int t = 0; t < {tl.MT}; ++t) {a}[t] = "
                f"{_operand(cg, g.A, row, kk, g.trans_A, s)};")
    col = f"{wn} * {N // tl.WN} + t * {s.n} + {lane} % {s.n}"
    kk = f"{k} + {s.a_regs} * ({lane} / {s.n})"
    cg.emit("#pragma unroll")
    cg.emit(f"for (int t = 0; t < {tl.NT}; ++t) {b}[t] = "
            f"{_operand(cg, g.B, col, kk, not g.trans_B, s)};")
    cg.emit("#pragma unroll")
    cg.emit(f"for (int mt = 0; mt < {tl.MT}; ++mt)")
    cg.emit("#pragma unroll")
    cg.emit(f"  for (int nt = 0; nt < {tl.NT}; ++nt)")
    cg.emit(f"    {acc}[mt * {tl.NT} + nt] = {s.builtin}({b}[nt], {a}[mt], {acc}[mt * {tl.NT} + nt], 0, 0, 0);")
    cg.ind -= 1
    cg.emit("}")
    cg.ind -= 1
    cg.emit("}")


def _register_operand(cg, buf, t, k, s):
    """Lane's A vector for tile row t at K step `k` from a register tile in the layout of
    tiling `t` (WN == 1): columns k .. k + s.k sit in tile column k / n, items
    4 * ((k % n) / s.k) .. + 4 (ct_index: column 4*g*(r//4) + 4*(l//m) + r%4)."""
    c = t.shape.c_regs
    first = f"(t * {t.NT} + {k} / {t.shape.n}) * {c} + 4 * (({k} % {t.shape.n}) / {s.k})"
    name = cg.bname(buf)
    bits = ".bits" if buf.dtype.name == "bfloat16" else ""
    return f"{s.in_ctype}{{" + ", ".join(f"{name}[{first} + {e}]{bits}" for e in range(4)) + "}"


def _clear(g):
    c = g.clear_accum
    return bool(c) if isinstance(c, (bool, int)) else bool(E.const_int_value(c))


def _operand(cg, region, outer, kk, k_is_row, s):
    """One lane's operand vector: `a_regs` elements at (outer, kk..kk+a_regs) of the
    operand's logical [outer][K] view. `k_is_row`: the storage is [K][outer] (A transposed,
    or B as K x N), so the K run strides by a row."""
    buf = region.buffer
    nd = len(region.starts)
    starts = list(region.starts)
    r0, c0 = (cg.expr(x) for x in starts[nd - 2:])
    # storage indices of the run's first element
    row, col = (kk, outer) if k_is_row else (outer, kk)
    idx = starts[:nd - 2] + [E.Var("__row"), E.Var("__col")]
    with cg.names.bound(idx[-2], f"({r0} + {row})" if r0 != "0" else f"({row})"), \
            cg.names.bound(idx[-1], f"({c0} + {col})" if c0 != "0" else f"({col})"):
        first = cg.elem(buf, idx)
    strides = cg.strides(buf)
    stride = strides[nd - 2] if k_is_row else strides[nd - 1]
    st = E.const_int_value(stride)
    st_c = str(st) if st is not None else cg.expr(stride)
    if st == 1 and _aligned(cg, buf, starts, s, nd):
        return f"tl::load_operand<{s.in_ctype}>(&{first})"
    return f"tl::gather_operand<{s.in_ctype}>(&{first}, {st_c})"


def _aligned(cg, buf, starts, s, nd):
    """Whether every lane's K run starts on a multiple of its vector's bytes: the row pitch,
    the buffer's outer strides and the region's start are multiples of `a_regs`."""
    for x in cg.strides(buf)[:nd - 1]:
        v = E.const_int_value(x)
        if v is None or v % s.a_regs:
            return False
    last = E.const_int_value(starts[-1])
    return last is not None and last % s.a_regs == 0
