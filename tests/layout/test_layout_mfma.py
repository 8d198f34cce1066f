"""CDNA MFMA lane layouts (tilelang/layout/mfma.py) against the ISA's placement, as AMD's
matrix instruction calculator states it in the direction element -> (lane, item):

  v_mfma_f32_32x32x8f16  A[i][k]: lane i + 32*(k//4), item k%4      B[k][j]: lane j + 32*(k//4), item k%4
                         D[i][j]: lane j + 32*((i//4)%2), item 4*(i//8) + i%4
  v_mfma_f32_16x16x16f16 A[i][k]: lane i + 16*(k//4), item k%4      B[k][j]: lane j + 16*(k//4), item k%4
                         D[i][j]: lane j + 16*(i//4), item i%4
  fp8 16x16x32 / 32x32x16: 8 items per lane, lane i + M*(k//8), item k%8

(the tables below are written out independently of the module's formulas), plus a numpy
run of a block's MFMA gemm as the HIP backend schedules it, and the LDS padding."""
import numpy as np
import pytest

from tilelang.layout import mfma
from tilelang.layout.mfma import MFMA, WAVE, MfmaTiling, a_index, b_index, c_index, choose_tiling, padded_pitch


def _isa_a(m, regs, i, k):
    return i + m * (k // regs), k % regs


def _isa_d(m, i, j):
    if m == 32:
        return j + 32 * ((i // 4) % 2), 4 * (i // 8) + i % 4
    return j + 16 * (i // 4), i % 4


ALL = [(dt, s) for dt, shapes in MFMA.items() for s in shapes]


@pytest.mark.parametrize("dt,s", ALL, ids=[f"{dt}-{s.m}x{s.n}x{s.k}" for dt, s in ALL])
def test_operand_and_accumulator_match_the_isa(dt, s):
    assert s.k == s.a_regs * s.groups and s.c_regs * WAVE == s.m * s.n
    for lane in range(WAVE):
        for r in range(s.a_regs):
            i, k = a_index(s, lane, r)
            assert _isa_a(s.m, s.a_regs, i, k) == (lane, r)
            k2, j = b_index(s, lane, r)
            assert _isa_a(s.n, s.a_regs, j, k2) == (lane, r)
        for r in range(s.c_regs):
            i, j = c_index(s, lane, r)
            assert _isa_d(s.m, i, j) == (lane, r)
            assert mfma.c_owner(s, i, j) == (lane, r)


@pytest.mark.parametrize("dt,s", ALL[:2], ids=["32x32x8", "16x16x16"])
def test_layouts_are_bijections(dt, s):
    seen_c = {c_index(s, l, r) for l in range(WAVE) for r in range(s.c_regs)}
    seen_a = {a_index(s, l, r) for l in range(WAVE) for r in range(s.a_regs)}
    assert len(seen_c) == s.m * s.n and len(seen_a) == s.m * s.k


def _mfma_isa(s, a_regs, b_regs, c_regs):
    """One MFMA by the ISA's definition: operands gathered from the lanes by the calculator's
    placement, D = A @ B + C, scattered back the same way."""
    A = np.array([[a_regs[_isa_a(s.m, s.a_regs, i, k)] for k in range(s.k)] for i in range(s.m)])
    B = np.array([[b_regs[_isa_a(s.n, s.a_regs, j, k)] for j in range(s.n)] for k in range(s.k)])
    C = np.array([[c_regs[_isa_d(s.m, i, j)] for j in range(s.n)] for i in range(s.m)])
    D = A @ B + C
    return {_isa_d(s.m, i, j): D[i, j] for i in range(s.m) for j in range(s.n)}


@pytest.mark.parametrize("M,N,K,waves", [(64, 64, 32, 4), (64, 32, 32, 2), (32, 64, 16, 1)])
def test_block_gemm_schedule_computes_a_times_b(M, N, K, waves):
    """The HIP backend's gemm (backend/hip/gemm.py): wave w at (w % WM, w // WM), lane l loads
    A rows wm*M/WM + mt*m + a_index, K runs a_index; the MFMA gets B's registers as its A
    operand and A's as its B (it computes C^T, so a lane holds part of a row of C); the
    accumulator is read back through MfmaTiling.logical. Simulated lane by lane, the result
    is A @ B."""
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((M, K)), rng.standard_normal((K, N))
    t = choose_tiling("float16", "gfx90a", M, N, K, waves)
    s = t.shape
    acc = {(th, q): 0.0 for th in range(waves * WAVE) for q in range(t.slots)}
    for w in range(waves):
        wm, wn = w % t.WM, w // t.WM
        for k0 in range(0, K, s.k):
            for mt in range(t.MT):
                for nt in range(t.NT):
                    a_regs, b_regs, c_regs = {}, {}, {}
                    for l in range(WAVE):
                        for r in range(s.a_regs):
                            i, k = a_index(s, l, r)
                            a_regs[(l, r)] = A[wm * (M // t.WM) + mt * s.m + i, k0 + k]
                            k, j = b_index(s, l, r)
                            b_regs[(l, r)] = B[k0 + k, wn * (N // t.WN) + nt * s.n + j]
                        for r in range(s.c_regs):
                            c_regs[(l, r)] = acc[(w * WAVE + l, (mt * t.NT + nt) * s.c_regs + r)]
                    d = _mfma_isa(s, b_regs, a_regs, c_regs)   # swapped: the MFMA computes C^T
                    for (l, r), v in d.items():
                        acc[(w * WAVE + l, (mt * t.NT + nt) * s.c_regs + r)] = v
    C = np.full((M, N), np.nan)
    for (th, q), v in acc.items():
        mt, rest = divmod(q, t.NT * s.c_regs)
        nt, r = divmod(rest, s.c_regs)
        i, j = t.logical(th, mt, nt, r)
        assert np.isnan(C[i, j])
        C[i, j] = v
        assert t.owner(i, j) == (th, q)
    np.testing.assert_allclose(C, A @ B, rtol=1e-12, atol=1e-12)


def test_choose_tiling():
    t = choose_tiling("float16", "gfx90a", 128, 128, 32, 4)
    assert (t.shape.m, t.WM, t.WN, t.MT, t.NT) == (32, 2, 2, 2, 2)
    assert choose_tiling("float16", "gfx90a", 16, 16, 16, 1).shape.m == 16
    assert choose_tiling("float16", "gfx90a", 48, 16, 16, 4) is None          # 4 waves cannot split 48x16
    assert choose_tiling("float8_e4m3fnuz", "gfx90a", 64, 64, 64, 4) is None  # fp8 MFMA is gfx940+
    assert choose_tiling("float8_e4m3fnuz", "gfx940", 64, 64, 64, 4).shape.k == 16


def _banks_ways(addresses, nbytes):
    """Independent LDS model: 32 banks of 4 bytes; a phase's cost is the most distinct words
    one bank serves."""
    banks = {}
    for a in addresses:
        for w in range(a // 4, (a + nbytes) // 4):
            banks.setdefault(w % 32, set()).add(w)
    return max(len(v) for v in banks.values())


@pytest.mark.parametrize("cols", [32, 64, 128])
@pytest.mark.parametrize("m", [16, 32])
def test_padded_pitch_removes_bank_conflicts(cols, m):
    s = next(x for x in MFMA["float16"] if x.m == m)
    pitch = padded_pitch(64, cols, 2, s)
    assert pitch % s.a_regs == 0 and pitch >= cols   # 8-byte vector reads stay aligned

    def worst(p):
        out = 0
        for k0 in range(0, s.k, s.a_regs):   # the 16 lanes of one 128-byte phase: rows 0..15 at one K run
            rows = range(16)
            out = max(out, _banks_ways([r * p * 2 + k0 * 2 for r in rows], 8))
        return out
    assert worst(cols) > 1          # unpadded: the rows' runs share banks
    assert worst(pitch) == 1


@pytest.mark.parametrize("m,M,N,waves", [(32, 64, 64, 2), (16, 64, 64, 4), (16, 32, 128, 2)])
def test_transposed_accumulator_rows_and_register_a_operand(m, M, N, waves):
    """In the transposed placement each lane's items of tile row mt lie in one row
    (MfmaTiling.row, replicated over row_owners); with whole rows per wave (WN == 1), the
    4 items 4*((k % n) / K) .. of tile column k / n are exactly the A operand run a_index
    wants at K step k: C converted to fp16 feeds the next MFMA from registers."""
    s = next(x for x in MFMA["float16"] if x.m == m)
    t = MfmaTiling(s, M, N, waves, 1)
    for th in range(waves * WAVE):
        for mt in range(t.MT):
            i = t.row(th, mt)
            threads, mt2 = t.row_owners(i)
            assert th in threads and mt2 == mt and all(t.row(x, mt) == i for x in threads)
            for nt in range(t.NT):
                for r in range(s.c_regs):
                    assert t.logical(th, mt, nt, r)[0] == i
            lane = th % WAVE
            for k in range(0, N, s.k):
                for e in range(s.a_regs):
                    slot = (mt * t.NT + k // s.n) * s.c_regs + 4 * ((k % s.n) // s.k) + e
                    nt, r = divmod(slot - mt * t.NT * s.c_regs, s.c_regs)
                    ai, ak = a_index(s, lane, e)
                    assert t.logical(th, mt, nt, r) == ((th // WAVE) * (M // waves) + mt * s.m + ai, k + ak)


def test_choose_tiling_follows_the_warp_policy():
    # FullRow: a whole row per wave even if that takes the smaller MFMA shape
    t = choose_tiling("float16", "gfx90a", 64, 64, 64, 4, "row")
    assert (t.shape.m, t.WM, t.WN) == (16, 4, 1)
    t = choose_tiling("float16", "gfx90a", 64, 128, 64, 4, "col")
    assert (t.shape.m, t.WM, t.WN) == (32, 1, 4)
    t = choose_tiling("float16", "gfx90a", 64, 64, 64, 4, "square")
    assert (t.shape.m, t.WM, t.WN) == (32, 2, 2)
    assert choose_tiling("float16", "gfx90a", 64, 64, 64, 4, shape_m=16, WM_only=2).WN == 2
