"""`T.gemm`: C (fragment) += A @ B on tiles."""
from __future__ import annotations

import enum

from tilelang.ir import builder as _builder
from tilelang.ir import tile_ops as TO
from tilelang.ir.buffer import Buffer, BufferRegion, to_region
from tilelang.ir.expr import const_int_value, BufferLoad
from tilelang.ir.errors import ShapeMismatchError, DTypeMismatchError, TileLangError


class GemmWarpPolicy(enum.IntEnum):
    """How the block's warps split the C tile. `Full` is accepted as `Square`."""
    Square = 0
    FullRow = 1
    FullCol = 2

    @classmethod
    def _missing_(cls, value):
        return None

    def is_square(self):
        return self == GemmWarpPolicy.Square

    def is_full_row(self):
        return self == GemmWarpPolicy.FullRow

    def is_full_col(self):
        return self == GemmWarpPolicy.FullCol


GemmWarpPolicy.Full = GemmWarpPolicy.Square


def _dims2(r: BufferRegion, what):
    exts = [e for e in r.extents]
    nz = [e for e in exts if const_int_value(e) != 1]
    if len(exts) < 2:
        raise ShapeMismatchError(f"T.gemm operand {what} (`{r.buffer.name}`) must be 2-D, got shape "
                                 f"{[str(e) for e in exts]}")
    if len(nz) > 2:
        raise ShapeMismatchError(f"T.gemm operand {what} (`{r.buffer.name}`) must be 2-D, got shape "
                                 f"{[str(e) for e in exts]}", hint="slice it to a 2-D tile, e.g. X[s, :, :]")
    last2 = exts[-2:]
    return [const_int_value(e) if const_int_value(e) is not None else e for e in last2]


def _region(x, what):
    if isinstance(x, BufferLoad):
        raise TileLangError(f"T.gemm operand {what} must be a whole tile or a slice, not one element")
    if not isinstance(x, (Buffer, BufferRegion)):
        raise TileLangError(f"T.gemm operand {what} must be a buffer, got {type(x).__name__}")
    return to_region(x)


def gemm(A, B, C, transpose_A=False, transpose_B=False, policy=GemmWarpPolicy.Square,
         clear_accum=False, k_pack=1, wg_wait=0, mbar=None, _wgmma=False, **kwargs):
    b = _builder.require("T.wgmma_gemm" if _wgmma else "T.gemm")
    ra, rb, rc = _region(A, "A"), _region(B, "B"), _region(C, "C")
    (a0, a1), (b0, b1), (c0, c1) = _dims2(ra, "A"), _dims2(rb, "B"), _dims2(rc, "C")
    M, Ka = (a1, a0) if transpose_A else (a0, a1)
    Kb, N = (b1, b0) if transpose_B else (b0, b1)

    def neq(x, y):
        return isinstance(x, int) and isinstance(y, int) and x != y
    if neq(Ka, Kb):
        raise ShapeMismatchError(
            f"T.gemm reduction dims differ: A `{ra.buffer.name}` gives K={Ka}, B `{rb.buffer.name}` gives K={Kb}",
            hint="check the tile shapes and transpose_A / transpose_B")
    if neq(M, c0) or neq(N, c1):
        raise ShapeMismatchError(
            f"T.gemm output `{rc.buffer.name}` is {c0}x{c1} but A @ B is {M}x{N}",
            hint="C must be (M, N) for A (M, K) and B (K, N) (after transposes)")
    if ra.buffer.dtype != rb.buffer.dtype and not (ra.buffer.dtype.is_float and rb.buffer.dtype.is_float
                                                    and ra.buffer.dtype.bits == 8 and rb.buffer.dtype.bits == 8):
        raise DTypeMismatchError(f"T.gemm operands have different dtypes: A is {ra.buffer.dtype}, "
                                 f"B is {rb.buffer.dtype}", hint="cast one of them (T.copy casts)")
    if rc.buffer.scope not in ("local.fragment", "local", "shared"):
        raise TileLangError(f"T.gemm accumulator `{rc.buffer.name}` must be a fragment "
                            f"(T.alloc_fragment), it is {rc.buffer.scope}")
    pol = GemmWarpPolicy(int(policy)).name if not isinstance(policy, str) else policy
    b.emit(TO.Gemm(ra, rb, rc, transpose_A, transpose_B, pol, clear_accum, k_pack, wg_wait,
                   annotations={TO.WGMMA: True} if _wgmma else None))


def wgmma_gemm(A, B, C, transpose_A=False, transpose_B=False, policy=GemmWarpPolicy.Square,
               clear_accum=False, annotations=None):
    """`T.gemm` that must run as a Hopper warpgroup MMA: a backend that cannot issue it so
    says why instead of choosing another form (the CUDA backend: sm_90a, ops/wgmma.py). Its
    group is waited for where the compiler's schedule puts the wait (right after it, or
    before the next statement that needs its result), so `T.wait_wgmma` has nothing left
    to wait for."""
    return gemm(A, B, C, transpose_A, transpose_B, policy, clear_accum, _wgmma=True)


def wait_wgmma(*args, **kwargs):
    """Every `T.wgmma_gemm` group is waited for by the compiler (see wgmma_gemm)."""
    return None
