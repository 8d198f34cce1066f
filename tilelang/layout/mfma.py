"""CDNA matrix-core (MFMA) operand and accumulator layouts over one wavefront of 64
lanes, and the padded LDS row pitch that keeps MFMA operand reads free of bank
conflicts.

An MFMA instruction `v_mfma_f32_{M}x{N}x{K}...` multiplies A (M x K) by B (K x N) into
C/D (M x N); every lane holds `a_regs` elements of A, `a_regs` of B and `c_regs` of C.
With `g = 64 // M` lane groups (M == N here), the ISA's placement (AMD's matrix
instruction calculator, CDNA2/CDNA3 ISA guides) is, for lane `l` and item `r`:

  A[i][k]:  i = l % M,  k = a_regs * (l // M) + r
  B[k][j]:  j = l % N,  k = a_regs * (l // N) + r
  C[i][j]:  j = l % N,  i = 4 * g * (r // 4) + 4 * (l // N) + r % 4

(16x16: C rows 4*(l//16) + r; 32x32: rows 8*(r//4) + 4*(l//32) + r%4). The functions
take ints or IR expressions alike, so the code generator prints the same formula the
tests check."""
from __future__ import annotations

from dataclasses import dataclass

WAVE = 64   # lanes of a CDNA wavefront


@dataclass(frozen=True)
class MfmaShape:
    m: int
    n: int
    k: int
    a_regs: int   # A (and B) elements per lane
    builtin: str  # the clang builtin (`__builtin_amdgcn_...`)
    in_ctype: str  # C vector type of one lane's A/B operand (include/tl_hip.h)

    @property
    def c_regs(self):
        return self.m * self.n // WAVE

    @property
    def groups(self):
        return WAVE // self.m


# operand dtype -> the shapes, preferred first; each needs the arch families listed
MFMA = {
    "float16": [MfmaShape(32, 32, 8, 4, "__builtin_amdgcn_mfma_f32_32x32x8f16", "tl::halfx4"),
                MfmaShape(16, 16, 16, 4, "__builtin_amdgcn_mfma_f32_16x16x16f16", "tl::halfx4")],
    "bfloat16": [MfmaShape(32, 32, 8, 4, "__builtin_amdgcn_mfma_f32_32x32x8bf16_1k", "tl::shortx4"),
                 MfmaShape(16, 16, 16, 4, "__builtin_amdgcn_mfma_f32_16x16x16bf16_1k", "tl::shortx4")],
    # gfx940+: the FNUZ encodings (bias 8 for e4m3, 16 for e5m2), 8 per lane in a 64-bit register pair
    "float8_e4m3fnuz": [MfmaShape(32, 32, 16, 8, "__builtin_amdgcn_mfma_f32_32x32x16_fp8_fp8", "long"),
                        MfmaShape(16, 16, 32, 8, "__builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8", "long")],
    "float8_e5m2fnuz": [MfmaShape(32, 32, 16, 8, "__builtin_amdgcn_mfma_f32_32x32x16_bf8_bf8", "long"),
                        MfmaShape(16, 16, 32, 8, "__builtin_amdgcn_mfma_f32_16x16x32_bf8_bf8", "long")],
}
FP8_ARCHS = ("gfx940", "gfx941", "gfx942")


def shapes_for(dtype: str, arch: str):
    """The MFMA shapes for operands of `dtype` on `arch`, or [] when it has none."""
    if dtype.startswith("float8") and arch not in FP8_ARCHS:
        return []
    return list(MFMA.get(dtype, []))


# lane/item -> logical index (what a lane holds) --------------------------------------
def a_index(s: MfmaShape, lane, r):
    """(i, k) of A held by `lane` at item `r`."""
    return lane % s.m, s.a_regs * (lane // s.m) + r


def b_index(s: MfmaShape, lane, r):
    """(k, j) of B held by `lane` at item `r`."""
    return s.a_regs * (lane // s.n) + r, lane % s.n


def c_index(s: MfmaShape, lane, r):
    """(i, j) of C/D held by `lane` at item `r` (`r` a Python int)."""
    return 4 * s.groups * (r // 4) + 4 * (lane // s.n) + r % 4, lane % s.n


# logical index -> (lane, item): the calculator's direction ------------------------------
def c_owner(s: MfmaShape, i, j):
    return j + s.n * ((i // 4) % s.groups), 4 * (i // (4 * s.groups)) + i % 4


def a_owner(s: MfmaShape, i, k):
    return i + s.m * (k // s.a_regs), k % s.a_regs


def b_owner(s: MfmaShape, k, j):
    return j + s.n * (k // s.a_regs), k % s.a_regs


# the transposed accumulator: the gemm issues MFMA with its operands swapped ------------
# (D^T = B^T A^T), so each lane holds part of one ROW of C: row i = l % m, columns at the
# ISA's C-row formula. Row vectors (softmax statistics) then need one register per tile
# row, row reductions are in-lane plus shuffles across the lane groups (l // m), and a C
# tile converted to the operand dtype is already the A operand of a following gemm
# whose K runs along C's columns (columns 4*g*(r//4) + 4*(l//m) + r%4: K step r // 4).
def ct_index(s: MfmaShape, lane, r):
    """(i, j) of C held by `lane` at item `r` when the gemm computes C^T."""
    j, i = c_index(s, lane, r)
    return i, j


def ct_owner(s: MfmaShape, i, j):
    return c_owner(s, j, i)


# a block's accumulator: waves tiled WM x WN, each holding MT x NT instruction tiles ----
@dataclass(frozen=True)
class MfmaTiling:
    """C (M x N) of one block computed by `WM * WN` waves (wave w at row w % WM, column
    w // WM), each covering (M / WM) x (N / WN) with MT x NT instruction tiles, in the
    transposed placement (`ct_index`). A lane's register slot `s = (mt * NT + nt) * c_regs + r`."""
    shape: MfmaShape
    M: int
    N: int
    WM: int
    WN: int

    @property
    def MT(self):
        return self.M // self.WM // self.shape.m

    @property
    def NT(self):
        return self.N // self.WN // self.shape.n

    @property
    def slots(self):
        return self.MT * self.NT * self.shape.c_regs

    def logical(self, thread, mt, nt, r):
        """(i, j) of C held by `thread` in tile (mt, nt), item `r` (ints: mt, nt, r)."""
        wave, lane = thread // WAVE, thread % WAVE
        ci, cj = ct_index(self.shape, lane, r)
        i = (wave % self.WM) * (self.M // self.WM) + mt * self.shape.m + ci
        j = (wave // self.WM) * (self.N // self.WN) + nt * self.shape.n + cj
        return i, j

    def owner(self, i, j):
        """(thread, slot) holding C[i][j] (ints)."""
        tm, tn = self.M // self.WM, self.N // self.WN
        wm, wn = i // tm, j // tn
        mt, nt = (i % tm) // self.shape.m, (j % tn) // self.shape.n
        lane, r = ct_owner(self.shape, i % self.shape.m, j % self.shape.n)
        return (wm + self.WM * wn) * WAVE + lane, (mt * self.NT + nt) * self.shape.c_regs + r

    def row(self, thread, mt):
        """The row of C that `thread` holds in tile row `mt` (all its items there)."""
        wave, lane = thread // WAVE, thread % WAVE
        return (wave % self.WM) * (self.M // self.WM) + mt * self.shape.m + lane % self.shape.m

    def row_owners(self, i):
        """(threads, mt) of every thread holding (a part of) row i: the lanes l // m of
        the WN waves in its wave row (a row vector is replicated over them)."""
        tm = self.M // self.WM
        wm, mt, li = i // tm, (i % tm) // self.shape.m, i % self.shape.m
        return [(wm + self.WM * wn) * WAVE + g * self.shape.m + li
                for wn in range(self.WN) for g in range(self.shape.groups)], mt


def choose_tiling(dtype, arch, M, N, K, waves, policy="square", shape_m=None, WM_only=None):
    """The MFMA tiling of an M x N x K gemm on `waves` wavefronts: the first shape (32x32
    before 16x16, or the one with `shape_m`) whose tiles divide the problem, with the split
    of the waves the policy prefers: "row" (T.GemmWarpPolicy.FullRow: waves split M only
    when they can), "col" (FullCol: split N), else the split closest to square; `WM_only`
    forces the wave rows. None when nothing fits. A full split in a smaller shape beats a
    partial split in a larger one (a full row per wave keeps row statistics in one wave and
    lets C be the next gemm's register A operand)."""
    if policy in ("row", "col") and WM_only is None:
        wm = waves if policy == "row" else 1
        for s in shapes_for(dtype, arch):
            if (shape_m is None or s.m == shape_m) and not K % s.k and not M % (wm * s.m) \
                    and not N % (waves // wm * s.n):
                return MfmaTiling(s, M, N, wm, waves // wm)
    for s in shapes_for(dtype, arch):
        if K % s.k or (shape_m is not None and s.m != shape_m):
            continue
        best = None
        for WM in range(1, waves + 1):
            if waves % WM or (WM_only is not None and WM != WM_only):
                continue
            WN = waves // WM
            if M % (WM * s.m) or N % (WN * s.n):
                continue
            score = {"row": WN, "col": WM}.get(policy, 0) * 1_000_000 + abs(M // WM - N // WN)
            if best is None or score < best[0]:
                best = (score, MfmaTiling(s, M, N, WM, WN))
        if best is not None:
            return best[1]
    return None


# LDS ------------------------------------------------------------------------------
LDS_BANKS = 32        # 4-byte banks (CDNA2/CDNA3)
LDS_BANK_BYTES = 4


def lds_bank_ways(byte_addresses, access_bytes):
    """The most distinct 4-byte words one bank serves among one phase's accesses."""
    per_bank = {}
    for a in byte_addresses:
        for w in range(max(1, access_bytes // LDS_BANK_BYTES)):
            word = a // LDS_BANK_BYTES + w
            per_bank.setdefault(word % LDS_BANKS, set()).add(word)
    return max((len(v) for v in per_bank.values()), default=0)


def operand_read_phases(rows, pitch, elem_bytes, s: MfmaShape):
    """Byte addresses of one MFMA operand read along K from a row-major [rows][pitch] LDS
    tile (A, or B stored N x K): lane l reads `a_regs` consecutive elements of row l % m.
    A phase is the lanes whose accesses fill the 128 bytes the banks serve at once."""
    access = s.a_regs * elem_bytes
    per_phase = max(1, LDS_BANKS * LDS_BANK_BYTES // access)
    phases = []
    for k0 in range(0, s.a_regs * s.groups, s.a_regs):
        lanes = [l for l in range(WAVE) if s.a_regs * (l // s.m) == k0]
        for p in range(0, len(lanes), per_phase):
            phases.append([(l % s.m) % rows * pitch * elem_bytes + k0 * elem_bytes
                           for l in lanes[p:p + per_phase]])
    return phases, access


def padded_pitch(rows, cols, elem_bytes, s: MfmaShape):
    """The row pitch (elements) of a [rows][cols] LDS tile read as an MFMA operand along
    its rows: `cols` plus the smallest pad (a multiple of one lane's access, so the vector
    reads stay aligned) under which no bank serves two words in one phase."""
    step = s.a_regs
    for pad in range(0, 8 * step + 1, step):
        phases, access = operand_read_phases(rows, cols + pad, elem_bytes, s)
        if all(lds_bank_ways(p, access) <= 1 for p in phases):
            return cols + pad
    return cols
