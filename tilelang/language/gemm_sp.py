"""`T.gemm_sp`: GEMM with a 2:4 structured-sparse A (compressed values + metadata)."""
from __future__ import annotations

from tilelang.ir import builder as _builder
from tilelang.ir.sparse_ops import GemmSp
from tilelang.ir.buffer import Buffer, BufferRegion, to_region
from tilelang.ir.expr import BufferLoad, const_int_value
from tilelang.ir.errors import TileLangError, ShapeMismatchError, DTypeMismatchError
from tilelang.language.gemm import GemmWarpPolicy


def _operand(x, what):
    if isinstance(x, BufferLoad):
        raise TileLangError(f"T.gemm_sp operand {what} must be a tile or a slice, not one element")
    if not isinstance(x, (Buffer, BufferRegion)):
        raise TileLangError(f"T.gemm_sp operand {what} must be a buffer, got {type(x).__name__}")
    r = to_region(x)
    exts = [const_int_value(e) for e in r.extents]
    if len(exts) < 2 or any(e != 1 for e in exts[:-2]) or None in exts[-2:]:
        raise ShapeMismatchError(f"T.gemm_sp operand {what} (`{r.buffer.name}`) must be a 2-D tile of constant "
                                 f"shape, got {[str(e) for e in r.extents]}")
    return r, exts[-2], exts[-1]


def gemm_sp(A_sparse, E, B, C, transpose_A=False, transpose_E=False, transpose_B=False,
            policy=GemmWarpPolicy.Square, clear_accum=False, k_pack=1, wg_wait=0):
    """C += A @ B where A (M x K) is given by its nonzeros `A_sparse` (M x K/2; K/2 x M
    with `transpose_A`) and metadata `E` (M x K/e_factor; transposed with `transpose_E`),
    in the format of `tilelang.cuda.intrinsics.sparse_layout`."""
    from tilelang.layout.sparse import group_config, get_e_factor
    b = _builder.require("T.gemm_sp")
    (ra, a0, a1), (re, e0, e1) = _operand(A_sparse, "A_sparse"), _operand(E, "E")
    (rb, b0, b1), (rc, c0, c1) = _operand(B, "B"), _operand(C, "C")
    M, Ks = (a1, a0) if transpose_A else (a0, a1)
    Kb, N = (b1, b0) if transpose_B else (b0, b1)
    adt, edt = ra.buffer.dtype, re.buffer.dtype
    try:
        group_config(adt)
        e_factor = get_e_factor(adt, edt)
    except (ValueError, KeyError):
        raise DTypeMismatchError(f"T.gemm_sp has no sparse format for A `{ra.buffer.name}` of {adt} with "
                                 f"metadata of {edt}", hint="A: float16/bfloat16/float32/int8/float8; "
                                 "E: an integer type") from None
    if not edt.is_int:
        raise DTypeMismatchError(f"T.gemm_sp metadata `{re.buffer.name}` must be an integer tile, it is {edt}")
    if 2 * Ks != Kb:
        raise ShapeMismatchError(f"T.gemm_sp: A_sparse `{ra.buffer.name}` holds K/2 = {Ks} columns but B "
                                 f"`{rb.buffer.name}` has K = {Kb}",
                                 hint="A_sparse is the compressed (K/2 wide) tile; check the transposes")
    em, ek = (e1, e0) if transpose_E else (e0, e1)
    if em != M or ek * e_factor != Kb:
        raise ShapeMismatchError(f"T.gemm_sp: metadata `{re.buffer.name}` is {e0}x{e1}, expected "
                                 f"{(Kb // e_factor, M) if transpose_E else (M, Kb // e_factor)} "
                                 f"(one {edt} per {e_factor} elements of A along K)")
    if (c0, c1) != (M, N):
        raise ShapeMismatchError(f"T.gemm_sp output `{rc.buffer.name}` is {c0}x{c1} but A @ B is {M}x{N}")
    if rb.buffer.dtype != adt:
        raise DTypeMismatchError(f"T.gemm_sp operands have different dtypes: A is {adt}, B is {rb.buffer.dtype}")
    if rc.buffer.scope not in ("local.fragment", "local", "shared"):
        raise TileLangError(f"T.gemm_sp accumulator `{rc.buffer.name}` must be a fragment, it is {rc.buffer.scope}")
    pol = GemmWarpPolicy(int(policy)).name if not isinstance(policy, str) else policy
    b.emit(GemmSp(ra, re, rb, rc, transpose_A, transpose_E, transpose_B, pol, clear_accum, k_pack, wg_wait))
