"""Warp-level mma ops (`ir/warp_ops.py`) on CUDA: per-thread code on the threads'
register arrays (`local` buffers), following `layout/mma_tiling.py`.

- load: `ldmatrix.x4` (include/tl_cuda/warp_mma.h) for 16-wide atoms whose rows are
  16-byte aligned (16-bit operands in either storage order; 8-bit A stored M x K and
  B stored N x K); otherwise one element per slot, from the same element map;
- mma: one `mma.sync m16n8k16` (16-bit) / `m16n8k32` (8-bit) per 16 x 8 piece;
- store: one element per slot (cast to the destination type).

Lane and warp come from the linear thread index; `tl_tid` is declared by the kernel."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.errors import LoweringError
from tilelang.arith.simplify import simplify, linear_form
from tilelang.backend.cuda.emit.expr import ctype


def _check_threads(kc, op):
    if op.tiling.threads != kc.plan.nthreads:
        t = op.tiling
        raise LoweringError(f"the mma emitter is built for {t.threads} threads ({t.block_row_warps} x "
                            f"{t.block_col_warps} warps) but the kernel has {kc.plan.nthreads}", span=op.span,
                            hint=f"use T.Kernel(..., threads={t.threads})")


class _Scope:
    """A C block `{ ... }` declaring lane / warp_m / warp_n of this thread, bound to
    IR variables so index expressions built from them print as C."""

    def __init__(self, kc, tiling, need=("lane", "warp_m", "warp_n")):
        self.kc, self.t, self.need = kc, tiling, need
        self.lane, self.wm, self.wn = E.Var("lane"), E.Var("warp_m"), E.Var("warp_n")

    def __enter__(self):
        kc = self.kc
        kc.w("{")
        kc.indent += 1
        tid = E.Var("tl_tid")
        kc.names.alias(tid, "tl_tid")
        lane, wm, wn = self.t.split_thread(tid)
        for v, e in ((self.lane, lane), (self.wm, wm), (self.wn, wn)):
            if v.name not in self.need:
                continue
            name = kc.names.new(v, "tl_" + v.name, True)
            kc.w(f"const int {name} = {kc.expr(simplify(e))};")
        return self

    def var(self, base):
        """A fresh loop variable with a unique C name."""
        v = E.Var(base)
        self.kc.names.new(v, "tl_" + base, True)
        return v

    def __exit__(self, *exc):
        self.kc.indent -= 1
        self.kc.w("}")
        return False


def _unrolled(kc, v, extent):
    kc.w("#pragma unroll")
    kc.w(f"for (int {kc.names.get(id(v))} = 0; {kc.names.get(id(v))} < {extent}; ++{kc.names.get(id(v))}) {{")
    kc.indent += 1


def _close(kc, n=1):
    for _ in range(n):
        kc.indent -= 1
        kc.w("}")


def _at(region, rc):
    idx = list(region.starts)
    idx[-2] = simplify(idx[-2] + rc[0])
    idx[-1] = simplify(idx[-1] + rc[1])
    return idx


def _multiple_of(x, n):
    """x is a multiple of n for every value of its variables."""
    lin = linear_form(simplify(E.convert(x)))
    if lin is None:
        return False
    terms, const = lin
    return const % n == 0 and all(c % n == 0 for _, c in terms.values())


def _ldmatrix_ok(kc, op):
    """ldmatrix can fill this operand: 16-wide atoms, a form ldmatrix supports, and every
    8-row group of addresses 16-byte aligned."""
    t = op.tiling
    src = op.src
    if op.operand == "B" and t.micro_n != 16:
        return False
    stored_k_inner = not t.a_transposed if op.operand == "A" else t.b_transposed
    if t.bits == 8 and not stored_k_inner:
        return False
    vec = 16 // src.buffer.dtype.itemsize
    strides = kc.strides(src.buffer)
    row_stride = E.const_int_value(strides[-2])
    if row_stride is None or row_stride % vec or E.const_int_value(strides[-1]) != 1:
        return False
    p = kc.placement(src.buffer)
    if p is None or p.kind != "smem":
        return False
    return _multiple_of(src.starts[-1], vec) and _multiple_of(op.k_offset, vec)


def ldmatrix_address(t, operand, lane):
    """((row, col), trans): the element of a 16-wide atom (at its M/N start and K step
    start, in storage order) whose 16-byte row `lane` hands to `ldmatrix.x4`, and
    whether the load is `.trans`, so that the registers come out in the mma fragment
    order of `layout/mma_tiling.py`. Matrices in register order: A (16-bit: rows 0-7 /
    8-15 of K 0-7, then of K 8-15), B (n 0-7 of both K halves, then n 8-15)."""
    vec = 128 // t.bits                              # elements per 16-byte row piece
    if operand == "A" and not t.a_transposed:        # M x K
        return (lane % 16, (lane // 16) * vec), False
    if operand == "A":                               # K x M (16-bit)
        return ((lane // 16) * 8 + lane % 8, ((lane // 8) % 2) * 8), True
    if t.b_transposed:                               # N x K
        return ((lane // 16) * 8 + lane % 8, ((lane // 8) % 2) * vec), False
    return (((lane // 8) % 2) * 8 + lane % 8, (lane // 16) * 8), True   # K x N (16-bit)


def emit_load(kc, op):
    _check_threads(kc, op)
    t, src = op.tiling, op.src
    dst = kc.buf_name(op.dst)
    is_a = op.operand == "A"
    count, size = (t.warp_rows, t.local_size_a) if is_a else (t.warp_cols, t.local_size_b)
    with _Scope(kc, t, ("lane", "warp_m" if is_a else "warp_n")) as sc:
        w = sc.wm if is_a else sc.wn
        a = sc.var("atom")
        _unrolled(kc, a, count)
        if _ldmatrix_ok(kc, op):
            (r, c), trans = ldmatrix_address(t, op.operand, sc.lane)
            mn0 = w * (t.warp_row_tiles if is_a else t.warp_col_tiles) + a * 16
            stored_k_inner = not t.a_transposed if is_a else t.b_transposed
            rc = (mn0 + r, op.k_offset + c) if stored_k_inner else (op.k_offset + r, mn0 + c)
            ptr = kc.access(E.BufferLoad(src.buffer, _at(src, rc)))
            fn = "ldmatrix_x4_trans_to" if trans else "ldmatrix_x4_to"
            kc.w(f"tl::{fn}({dst} + {kc.names.get(id(a))} * {size}, &{ptr});")
        else:
            s = sc.var("s")
            _unrolled(kc, s, size)
            element = t.a_element if is_a else t.b_element
            mn, k = element(sc.lane, w, a, s)
            k = op.k_offset + k
            transposed = t.a_transposed if is_a else not t.b_transposed
            rc = (k, mn) if transposed else (mn, k)
            val = E.BufferLoad(src.buffer, _at(src, rc))
            kc.stmt(S.BufferStore(op.dst, E.cast(val, op.dst.dtype), [simplify(a * size + s)]), False)
            _close(kc)
        _close(kc)


def emit_mma(kc, op):
    _check_threads(kc, op)
    t = op.tiling
    for b, dt in ((op.A, t.a_dtype), (op.B, t.b_dtype), (op.C, t.accum_dtype)):
        if b.dtype != dt:
            raise LoweringError(f"mma operand `{b.name}` is {b.dtype}, the emitter expects {dt}", span=op.span)
    ta, tc = ctype(t.a_dtype), ctype(t.accum_dtype)
    supported = {("half", "float"), ("__nv_bfloat16", "float"), ("half", "half"), ("signed char", "int"),
                 ("unsigned char", "int"), ("__nv_fp8_e4m3", "float"), ("__nv_fp8_e5m2", "float")}
    if (ta, tc) not in supported or t.a_dtype != t.b_dtype:
        raise LoweringError(f"no mma.sync for {t.a_dtype} x {t.b_dtype} -> {t.accum_dtype}", span=op.span)
    from tilelang.backend.cuda.target import arch_number
    if t.a_dtype.kind == "float8" and arch_number(kc.target.arch) < 89:
        raise LoweringError(f"fp8 mma needs sm_89 or newer, the target is {kc.target.arch}", span=op.span)
    A, B, C = (kc.buf_name(b) for b in (op.A, op.B, op.C))
    if op.atom_m is None:   # every atom of the warp
        kc.w("#pragma unroll")
        kc.w(f"for (int tl_mi = 0; tl_mi < {t.warp_rows}; ++tl_mi) {{")
        kc.w("  #pragma unroll")
        kc.w(f"  for (int tl_nj = 0; tl_nj < {t.warp_cols}; ++tl_nj) {{")
    else:                   # one atom (mma_atom)
        kc.w(f"{{ const int tl_mi = {kc.expr(op.atom_m)};")
        kc.w(f"  {{ const int tl_nj = {kc.expr(op.atom_n)};")
    c0 = f"{C} + (tl_mi * {t.warp_cols} + tl_nj) * {t.local_size_c}"
    a0, b0 = f"{A} + tl_mi * {t.local_size_a}", f"{B} + tl_nj * {t.local_size_b}"
    mma = f"tl::WarpMma16n8<{ta}, {tc}>::run"
    kc.w(f"    {mma}({c0}, {a0}, {b0});")
    if t.micro_n == 16:  # the second n8 half: next 4 accumulators, second half of the B registers
        kc.w(f"    {mma}({c0} + 4, {a0}, {b0} + {t.local_size_b // 2});")
    kc.w("  }")
    kc.w("}")


def emit_store(kc, op):
    _check_threads(kc, op)
    t, dst = op.tiling, op.dst
    with _Scope(kc, t) as sc:
        i, j, s = sc.var("i"), sc.var("j"), sc.var("s")
        _unrolled(kc, i, t.warp_rows)
        _unrolled(kc, j, t.warp_cols)
        _unrolled(kc, s, t.local_size_c)
        m, n = t.c_element(sc.lane, sc.wm, sc.wn, i, j, s)
        if dst.ndim == 4:
            idx = [m // t.micro_m, n // t.micro_n, m % t.micro_m, n % t.micro_n]
        else:
            idx = [m + (op.row0 if op.row0 is not None else 0), n + (op.col0 if op.col0 is not None else 0)]
        val = E.BufferLoad(op.src, [simplify((i * t.warp_cols + j) * t.local_size_c + s)])
        kc.stmt(S.BufferStore(dst, E.cast(val, dst.dtype), [simplify(x) for x in idx]), False)
        _close(kc, 3)
