"""`T.gemm` on CUDA: tensor cores (ldmatrix + mma.sync m16n8k16, `tl::gemm_ss` in
include/tl_cuda/mma.h; fp8: m16n8k32, `tl::gemm_ss_k32`; float32 / tfloat32: m16n8k8 .tf32,
`tl::gemm_ss_tf32`) when the shapes, dtypes and arch allow, else a SIMT loop that is correct
for any shapes and dtypes.

TF32 semantics: a gemm whose A and B are 32-bit floats (float32 or tfloat32) and whose
accumulator is float32 multiplies the operands' top 19 bits (sign, exponent, 10 mantissa
bits: the low 13 bits dropped, i.e. rounded toward zero), as the tensor cores read a .tf32
operand register and as the published TileLang runs such gemms (raw float32 bits into
mma/wgmma .tf32); products are exact and sums float32. The SIMT loop (`tf32_operand`) and
the CPU reference (`tl::gemm` in backend/cpu/include/tl_cpu.h) truncate the same way, so
all three agree up to the order of the float32 sums."""
from __future__ import annotations

import math
from dataclasses import dataclass

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.buffer import BufferRegion
from tilelang.arith.simplify import simplify, linear_form
from tilelang.backend.cuda.target import arch_number


@dataclass(frozen=True)
class MmaConfig:
    M: int
    N: int
    K: int
    WM: int   # warps along M
    WN: int   # warps along N

    acc: str = "float32"   # accumulator dtype: float32, or float16 (f16 inputs, mma .f16 form)
    # a 16-bit A read from a register fragment in the accumulator pattern of an M x K tile
    # (layout/fragment.py a_register_layout; `tl::gemm_rs`), WN == 1
    a_regs: bool = False

    kind = "mma"
    k32 = False   # MmaK32Config: 8-bit (fp8) operands
    tf32 = False  # MmaTf32Config: 32-bit float operands

    @property
    def regs(self):
        return (self.M // self.WM // 16) * (self.N // self.WN // 8) * 4

    def layout(self):
        return f"tl::MmaAccLayout<{self.M}, {self.N}, {self.WM}, {self.WN}>"


@dataclass(frozen=True)
class MmaK32Config(MmaConfig):
    """8-bit operands (fp8, int8, uint8): m16n8k32 steps (`tl::gemm_ss_k32`), A stored M x K,
    B stored N x K; the accumulator layout is MmaConfig's."""
    k32 = True


@dataclass(frozen=True)
class MmaTf32Config(MmaConfig):
    """32-bit float operands (float32 / tfloat32) into float32: m16n8k8 .tf32 steps
    (`tl::gemm_ss_tf32`); K-major operands through ldmatrix, M/N-major ones one 32-bit
    element per register; the accumulator layout is MmaConfig's. With `a_regs` the A
    operand is a register fragment in `layout/fragment.py` Tf32ALayout (`tl::gemm_rs_tf32`)."""
    tf32 = True
    a_regs: bool = False
    chains: int = 1   # accumulator chains a warp runs its k8 steps on (`tf32_chains`)


def tf32_chains(cfg, target_in_flight=4) -> int:
    """How many accumulator chains the k8 steps of TF32 gemm `cfg` alternate between, so that
    each warp has `target_in_flight` independent MMAs a step: a warp with one or two MMAs a
    step (a 16 x 16 warp tile, as DeepSeek mHC's 32-token gemm) otherwise waits the MMA's
    latency once per k8 step when it is alone on its scheduler (one block of four warps an
    SM). The partial chains are summed into the accumulator at the end of each gemm call;
    a chain gets at least 4 steps a call."""
    mmas = (cfg.M // cfg.WM // 16) * (cfg.N // cfg.WN // 8)
    chains = max(1, target_in_flight // max(mmas, 1))
    while chains > 1 and cfg.K // 8 < 4 * chains:
        chains //= 2
    return chains


def is_tf32_gemm(da, db, dc) -> bool:
    """A and B 32-bit floats and a float32 accumulator: the gemm runs in TF32."""
    return da.name in _F32 and db.name in _F32 and dc.name == "float32"


def mat_dims(r: BufferRegion):
    """(rows, cols) extents of a 2-D view: the region's last two dimensions, all
    leading dimensions of extent 1."""
    ext = [E.const_int_value(e) for e in r.extents]
    if len(ext) < 2 or any(e != 1 for e in ext[:-2]):
        return None
    return ext[-2], ext[-1]


def gemm_mnk(op):
    a, b, c = mat_dims(op.A), mat_dims(op.B), mat_dims(op.C)
    if None in (a, b, c) or None in a + b + c:
        return None
    M, K = (a[1], a[0]) if op.trans_A else a
    K2, N = (b[1], b[0]) if op.trans_B else b
    if K != K2 or c != (M, N):
        return None
    return M, N, K


def warp_partition(M, N, nwarps, policy="Square"):
    """(WM, WN) with WM * WN == nwarps, M % (16 WM) == 0, N % (16 WN) == 0, per-warp
    tile as square as possible (fewest shared-memory loads per mma)."""
    best = None
    for wm in range(1, nwarps + 1):
        if nwarps % wm:
            continue
        wn = nwarps // wm
        if M % (16 * wm) or N % (16 * wn):
            continue
        # FullRow / FullCol put every warp along one axis; where the tile is too small
        # for that, as many as fit (the published policies also relax), never the
        # SIMT loop
        if policy == "FullRow":
            score = (wn, 0.0)
        elif policy == "FullCol":
            score = (wm, 0.0)
        else:
            score = (0, abs(math.log((M / wm) / (N / wn))))
        if best is None or score < best[0]:
            best = (score, wm, wn)
    return None if best is None else (best[1], best[2])


_FP8 = ("float8_e4m3fn", "float8_e5m2")
_F32 = ("float32", "tfloat32")


def _aligned(x, n):
    """x is a multiple of n for every value of its variables."""
    lin = linear_form(simplify(E.convert(x))) if isinstance(x, (E.PrimExpr, int)) else None
    if lin is None:
        return False
    terms, const = lin
    return const % n == 0 and all(c % n == 0 for _, c in terms.values())


def mma_config(op, arch, nthreads, row_stride):
    """The tensor-core config for this gemm, or None (then the SIMT loop runs).
    `row_stride(buffer)` is the element stride of a shared buffer's rows."""
    if arch is None or arch_number(arch) < 80 or nthreads % 32:
        return None
    mnk = gemm_mnk(op)
    if mnk is None:
        return None
    M, N, K = mnk
    da, db, dc = op.A.buffer.dtype, op.B.buffer.dtype, op.C.buffer.dtype
    # fp8 (e4m3 / e5m2, mixed too) on sm_89+: m16n8k32, both operands K-major (ldmatrix
    # has no 8-bit transpose), so A stored M x K and B stored N x K
    k32 = da.name in _FP8 and db.name in _FP8 and dc.name == "float32" and arch_number(arch) >= 89 and \
        not op.trans_A and op.trans_B
    # int8 / uint8 (both the same) into int32: m16n8k32 .s32.s8.s8.s32 / .u8, K-major too
    k32 = k32 or (da is db and da.name in ("int8", "uint8") and dc.name == "int32" and not op.trans_A and
                  op.trans_B)
    # fp16/bf16 inputs accumulate in fp32; fp16 inputs also in fp16 (mma .f16.f16.f16.f16)
    f16_acc = da is db and da.name == "float16" and dc.name == "float16"
    # float32 / tfloat32 (mixed too) into float32: m16n8k8 .tf32
    tf32 = is_tf32_gemm(da, db, dc)
    if not k32 and not f16_acc and not tf32 and \
            (da is not db or da.name not in ("float16", "bfloat16") or dc.name != "float32"):
        return None
    # K per mma; elements per 16-byte row piece
    kstep, vec = (32, 16) if k32 else (8, 4) if tf32 else (16, 8)
    if op.A.buffer.scope != "shared" or op.B.buffer.scope != "shared" or K % kstep:
        return None
    for r in (op.A, op.B):
        ld = row_stride(r.buffer)
        if ld is None or ld % vec or not _aligned(r.starts[-1], vec):
            return None
    policy = op.policy if isinstance(op.policy, str) else getattr(op.policy, "name", "Square")
    wp = warp_partition(M, N, nthreads // 32, policy if policy in ("FullRow", "FullCol") else "Square")
    if wp is None:
        return None
    return (MmaK32Config if k32 else MmaTf32Config if tf32 else MmaConfig)(M, N, K, wp[0], wp[1], dc.name)


def simt_gemm(op):
    """The reference loop C[i, j] += sum_k A[i, k] * B[k, j] (in C's dtype), as IR:
    a T.Parallel over C whose iterations accumulate in a register."""
    M, N, K = gemm_mnk(op) or (None, None, None)
    if M is None:
        raise NotImplementedError("T.gemm operands must be 2-D tiles with constant shapes")
    i, j, k = E.Var("gi"), E.Var("gj"), E.Var("gk")

    def at(r, row, col):
        idx = list(r.starts)
        idx[-2] = simplify(idx[-2] + row)
        idx[-1] = simplify(idx[-1] + col)
        return E.BufferLoad(r.buffer, idx)
    from tilelang.ir.buffer import Buffer
    acc = Buffer("gacc", (1,), op.C.buffer.dtype, "local")
    a = at(op.A, k, i) if op.trans_A else at(op.A, i, k)
    b = at(op.B, j, k) if op.trans_B else at(op.B, k, j)
    dt = op.C.buffer.dtype
    c = at(op.C, i, j)
    zero = [E.IntImm(0)]
    if dt.is_float and dt.bits < 32:
        # a 16-bit float accumulator rounds once per 16 products (float32 inside), as the
        # tensor cores' f16 accumulators do and the CPU reference (tl::gemm) does
        k0 = E.Var("gk0")
        part = Buffer("gpart", (1,), "float32", "local")
        kk = simplify(k0 * 16 + k)
        a = at(op.A, kk, i) if op.trans_A else at(op.A, i, kk)
        b = at(op.B, j, kk) if op.trans_B else at(op.B, kk, j)
        prod = E.binop("*", E.cast(a, "float32"), E.cast(b, "float32"))
        chunk = S.seq([
            S.BufferStore(part, E.FloatImm(0.0), zero),
            S.For(k, E.IntImm(0), simplify(E.minimum(16, K - k0 * 16)), S.SERIAL,
                  S.BufferStore(part, E.binop("+", E.BufferLoad(part, zero), prod), zero)),
            S.BufferStore(acc, E.cast(E.binop("+", E.cast(E.BufferLoad(acc, zero), "float32"),
                                               E.BufferLoad(part, zero)), dt), zero),
        ])
        loop = S.seq([S.DeclBuffer(part), S.For(k0, E.IntImm(0), E.IntImm((K + 15) // 16), S.SERIAL, chunk)])
    else:
        if is_tf32_gemm(op.A.buffer.dtype, op.B.buffer.dtype, dt):
            a, b = tf32_operand(a), tf32_operand(b)
        prod = E.binop("*", E.cast(a, dt), E.cast(b, dt))
        loop = S.For(k, E.IntImm(0), E.IntImm(K), S.SERIAL,
                     S.BufferStore(acc, E.binop("+", E.BufferLoad(acc, zero), prod), zero))
    body = S.seq([
        S.DeclBuffer(acc),
        S.BufferStore(acc, c, zero),
        loop,
        S.BufferStore(op.C.buffer, E.BufferLoad(acc, zero), c.indices),
    ])
    return S.For(i, E.IntImm(0), E.IntImm(M), S.PARALLEL, S.For(j, E.IntImm(0), E.IntImm(N), S.PARALLEL, body))


def tf32_operand(x):
    """The value a TF32 tensor core reads from the 32-bit float `x` (`tl::tf32_trunc`,
    include/tl_cuda/common.h): the SIMT loop multiplies what the mma would."""
    return E.call("tl::tf32_trunc", [E.cast(x, "float32")], "float32")
