"""wgmma m64nNk16 accumulator (PTX ISA D fragment) and block-level wgmma C."""
import pytest

from tilelang.layout import wgmma, SwizzleMode


def ptx_wgmma_d(tid, i):
    w, lane = tid // 32, tid % 32
    return 16 * w + lane // 4 + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * (lane % 4) + i % 2


@pytest.mark.parametrize("N", [8, 16, 64, 128, 256])
def test_accumulator_matches_ptx(N):
    f = wgmma.wgmma_accumulator_fragment(N)
    assert f.thread_extent == 128 and f.num_slots == N // 2
    for tid in range(0, 128, 5):
        for i in range(N // 2):
            assert f.map(*ptx_wgmma_d(tid, i)) == (tid, i)
    assert f.is_bijective_up_to_replication()


def test_spot_entries():
    f = wgmma.wgmma_accumulator_fragment(64)
    assert f.map(0, 0) == (0, 0) and f.map(8, 0) == (0, 2) and f.map(0, 8) == (0, 4)
    assert f.map(16, 0) == (32, 0) and f.map(63, 63) == (127, 31)


def test_a_register_fragment():
    f = wgmma.wgmma_a_register_fragment()
    assert f.thread_extent == 128 and f.num_slots == 8 and f.is_bijective_up_to_replication()
    assert f.map(16 + 8, 8) == (32, 6)


@pytest.mark.parametrize("M,N,mw,nw", [(64, 64, 4, 1), (128, 128, 4, 1), (128, 256, 4, 2), (256, 128, 8, 1)])
def test_block_accumulator(M, N, mw, nw):
    f = wgmma.make_wgmma_accumulator_fragment(M, N, mw, nw)
    assert f.thread_extent == 32 * mw * nw and f.is_bijective_up_to_replication()
    wn = N // nw
    # the first m64 instruction of warpgroup 0 is exactly the wgmma D layout
    d = wgmma.wgmma_accumulator_fragment(wn)
    for tid in range(0, 128, 7):
        for i in range(wn // 2):
            r, c = ptx_wgmma_d(tid, i)
            if mw == 4:
                assert f.map(r, c) == d.map(r, c)


def test_descriptor_fields():
    d = wgmma.wgmma_descriptor_fields(SwizzleMode.SWIZZLE_128B, 16)
    assert d == {"layout_type": 1, "stride_byte_offset": 1024, "k_elements_per_atom_row": 64}
    assert wgmma.wgmma_descriptor_fields(SwizzleMode.SWIZZLE_32B, 16)["layout_type"] == 3
