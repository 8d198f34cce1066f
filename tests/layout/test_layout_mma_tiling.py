"""The register maps of warp-written GEMMs (layout/mma_tiling.py): slot -> element
formulas invert the mma fragments, and a block's registers cover its tiles exactly."""
import collections

import pytest

from tilelang.layout import mma
from tilelang.layout.mma_tiling import WarpMmaTiling


@pytest.mark.parametrize("bits", [16, 8])
def test_slot_element_maps_invert_the_fragments(bits):
    fa, fb, fc = mma.mma_fragments(bits)
    for frag, elem in ((fa, lambda l, s: mma.mma_a_element(l, s, bits)),
                       (fb, lambda l, s: mma.mma_b_element(l, s, bits)),
                       (fc, mma.mma_c_element)):
        rows, cols = frag.get_input_shape()
        for i in range(rows):
            for j in range(cols):
                lane, slot = frag.map(i, j)
                assert elem(lane, slot) == (i, j)


def _tiling(bits=16, wrt=32, wct=32, brw=2, bcw=2, m_first=False, chunk=32):
    dt = "float16" if bits == 16 else "int8"
    return WarpMmaTiling.make(dt, dt, "float32", False, True, brw, bcw, wrt, wct, chunk, m_first)


@pytest.mark.parametrize("bits,wct,m_first", [(16, 32, False), (16, 24, True), (8, 32, False)])
def test_block_registers_cover_the_tiles(bits, wct, m_first):
    t = _tiling(bits, wct=wct, m_first=m_first)
    c = collections.Counter()
    a = collections.Counter()
    b = collections.Counter()
    for tid in range(t.threads):
        lane, wm, wn = t.split_thread(tid)
        assert t.warp_base_thread(wm, wn) + lane == tid
        for i in range(t.warp_rows):
            for j in range(t.warp_cols):
                for s in range(t.local_size_c):
                    c[t.c_element(lane, wm, wn, i, j, s)] += 1
        for i in range(t.warp_rows):
            for s in range(t.local_size_a):
                a[t.a_element(lane, wm, i, s)] += 1
        for j in range(t.warp_cols):
            for s in range(t.local_size_b):
                b[t.b_element(lane, wn, j, s)] += 1
    assert set(c) == {(m, n) for m in range(t.block_m) for n in range(t.block_n)} and set(c.values()) == {1}
    # A is held once per warp column, B once per warp row
    assert set(a) == {(m, k) for m in range(t.block_m) for k in range(t.micro_k)}
    assert set(a.values()) == {t.block_col_warps}
    assert set(b) == {(n, k) for n in range(t.block_n) for k in range(t.micro_k)}
    assert set(b.values()) == {t.block_row_warps}
    assert t.micro_n == (16 if wct % 16 == 0 else 8)


def test_sizes_and_bad_configs():
    t = _tiling(16, wrt=64, wct=64)
    assert (t.warp_rows, t.warp_cols, t.local_size_a, t.local_size_b, t.local_size_c) == (4, 4, 8, 8, 8)
    assert _tiling(8).micro_k == 32
    with pytest.raises(ValueError):
        _tiling(16, wrt=8)
    with pytest.raises(ValueError):
        WarpMmaTiling.make("float16", "int8", "float32", False, True, 2, 2, 32, 32, 32)
