"""`T.gemm_sp` -> decompress A into a dense tile, then `T.gemm` (every backend).

For dense column k of row m (groups of G = 4 along K, or 2 for 32-bit types):
    nibble = (E[m, g // (b/4)] >> 4 * (g % (b/4))) & 0xF,   g = k // G, b = bits of E
    A[m, k] = A_sparse[m, 2g]     if k % G == nibble & 3
            = A_sparse[m, 2g + 1] if k % G == nibble >> 2       (G = 4)
    A[m, k] = A_sparse[m, g]      if k % 2 == (nibble & 3) >> 1  (G = 2; positions in 16-bit units)
and 0 elsewhere. The dense tile lives where the sparse one does (shared memory for
a shared A_sparse), so the gemm takes its usual tensor-core path; sparse tensor
cores (mma.sp / wgmma.sp) are not used yet."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.sparse_ops import GemmSp
from tilelang.ir.buffer import Buffer, BufferRegion
from tilelang.ir.dtypes import int32
from tilelang.ir.visitor import Mutator
from tilelang.arith.simplify import simplify
from tilelang.transform.pass_manager import function_pass


def _at(region, row, col):
    idx = list(region.starts)
    idx[-2] = simplify(idx[-2] + row)
    idx[-1] = simplify(idx[-1] + col)
    return E.BufferLoad(region.buffer, idx)


def decompress(op: GemmSp, dense: Buffer):
    """The T.Parallel nest filling `dense` (A's storage orientation) from A_sparse and E."""
    from tilelang.layout.sparse import group_config
    elem, group = group_config(op.A.buffer.dtype)
    nibbles = op.E.buffer.dtype.bits // 4
    rows, cols = dense.shape
    i, j = E.Var("i"), E.Var("j")
    m, k = (j, i) if op.trans_A else (i, j)
    g, p = k // group, k % group
    meta = _at(op.E, g // nibbles, m) if op.trans_E else _at(op.E, m, g // nibbles)
    nib = E.binop("&", E.binop(">>", E.cast(meta, int32), 4 * (g % nibbles)), 15)

    def sparse(c):
        return _at(op.A, c, m) if op.trans_A else _at(op.A, m, c)
    zero = E.literal(0, dense.dtype)
    if elem == 2:
        val = E.select(E.binop("==", p, E.binop("&", nib, 3)), sparse(2 * g),
                       E.select(E.binop("==", p, E.binop(">>", nib, 2)), sparse(2 * g + 1), zero))
    else:
        val = E.select(E.binop("==", p, E.binop(">>", E.binop("&", nib, 3), 1)), sparse(g), zero)
    store = S.BufferStore(dense, E.cast(val, dense.dtype), [i, j])
    return S.For(i, E.IntImm(0), E.IntImm(rows), S.PARALLEL,
                 S.For(j, E.IntImm(0), E.IntImm(cols), S.PARALLEL, store))


class _Lower(Mutator):
    def visit_GemmSp(self, op):
        a = op.A
        rows, cols = (E.const_int_value(e) for e in a.extents[-2:])
        shape = (2 * rows, cols) if op.trans_A else (rows, 2 * cols)
        scope = a.buffer.scope if a.buffer.scope in ("shared", "local.fragment") else "shared"
        dense = Buffer(a.buffer.name + "_dense", shape, a.buffer.dtype, scope)
        whole = BufferRegion(dense, [(E.IntImm(0), E.IntImm(d)) for d in shape])
        gemm = TO.Gemm(whole, op.B, op.C, op.trans_A, op.trans_B, op.policy, op.clear_accum, op.k_pack,
                       op.wg_wait)
        out = [S.DeclBuffer(dense), decompress(op, dense), gemm]
        for s in out:
            s.span = op.span
        return S.seq(out)


@function_pass("lower_gemm_sp")
def lower_gemm_sp(func):
    return func.with_body(_Lower().visit(func.body))
