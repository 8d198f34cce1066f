"""sm_80 mma.sync fragments against the PTX ISA register tables, and
ldmatrix.x4 (simulated) producing exactly those fragments."""
import pytest

from tilelang.layout import mma


def g_t(lane):
    return lane >> 2, lane % 4     # groupID, threadID_in_group


def ptx_m16n8k16_a(lane, i):
    g, t = g_t(lane)
    row = g if (i < 2 or 4 <= i < 6) else g + 8
    col = t * 2 + (i & 1) + (8 if i >= 4 else 0)
    return row, col


def ptx_m16n8k16_b(lane, i):
    g, t = g_t(lane)
    return t * 2 + (i & 1) + (8 if i >= 2 else 0), g


def ptx_m16n8k16_c(lane, i):
    g, t = g_t(lane)
    return (g if i < 2 else g + 8), t * 2 + (i & 1)


def ptx_m16n8k32_a(lane, i):
    g, t = g_t(lane)
    row = g if (i < 4 or 8 <= i < 12) else g + 8
    return row, t * 4 + (i & 3) + (16 if i >= 8 else 0)


def ptx_m16n8k32_b(lane, i):
    g, t = g_t(lane)
    return t * 4 + (i & 3) + (16 if i >= 4 else 0), g


CASES = [
    (mma.mma_m16n8k16_a, ptx_m16n8k16_a, 8),
    (mma.mma_m16n8k16_b, ptx_m16n8k16_b, 4),
    (mma.mma_m16n8k16_c, ptx_m16n8k16_c, 4),
    (mma.mma_m16n8k32_a, ptx_m16n8k32_a, 16),
    (mma.mma_m16n8k32_b, ptx_m16n8k32_b, 8),
]


@pytest.mark.parametrize("make,ptx,nregs", CASES, ids=lambda x: getattr(x, "__name__", str(x)))
def test_fragment_matches_ptx_table(make, ptx, nregs):
    f = make()
    assert f.thread_extent == 32 and f.num_slots == nregs
    for lane in range(32):
        for i in range(nregs):
            r, c = ptx(lane, i)
            assert f.map(r, c) == (lane, i), (lane, i, r, c)
    assert f.is_bijective_up_to_replication()


def test_documented_spot_entries():
    # a few entries read straight off the PTX ISA figures
    A, B, C = mma.mma_fragments(16)
    assert A.map(0, 0) == (0, 0) and A.map(0, 1) == (0, 1)
    assert A.map(8, 0) == (0, 2) and A.map(0, 8) == (0, 4) and A.map(15, 15) == (31, 7)
    assert B.map(0, 0) == (0, 0) and B.map(8, 0) == (0, 2) and B.map(15, 7) == (31, 3)
    assert C.map(0, 0) == (0, 0) and C.map(8, 7) == (3, 3) and C.map(15, 7) == (31, 3)


def test_ldmatrix_x4_row_provider():
    assert [mma.ldmatrix_x4_row_provider(l) for l in (0, 7, 8, 31)] == [(0, 0), (0, 7), (1, 0), (3, 7)]


def test_ldmatrix_x4_fills_a_fragment():
    A = mma.mma_m16n8k16_a()
    got = mma.simulate_ldmatrix_x4(mma.ldmatrix_x4_a_address)
    for (lane, slot), rc in got.items():
        assert A.map(*rc) == (lane, slot)


@pytest.mark.parametrize("trans", [True, False])
def test_ldmatrix_x4_fills_two_b_fragments(trans):
    B2 = mma.mma_m16n8k16_b().repeat([1, 2], lower_dim_first=False)   # K x 16 N: two n8 blocks
    got = mma.simulate_ldmatrix_x4(lambda l: mma.ldmatrix_x4_b_address(l, trans), trans=trans)
    for (lane, slot), (r, c) in got.items():
        k, n = (r, c) if trans else (c, r)      # non-trans tile is stored N x K
        assert B2.map(k, n) == (lane, slot)


def test_unsupported_bits():
    with pytest.raises(NotImplementedError):
        mma.mma_fragments(32)
