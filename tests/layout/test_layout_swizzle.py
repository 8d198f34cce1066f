"""Swizzles: permutations, the CUTLASS XOR pattern, mode choice by row width,
TMA/WGMMA compatibility, published factory names and arguments."""
import numpy as np
import pytest

import tilelang.layout as TL
from tilelang.layout import SwizzleMode
from tilelang.layout.swizzle import apply_cutlass_swizzle, make_swizzle_layout_2d

MODES = [SwizzleMode.SWIZZLE_32B, SwizzleMode.SWIZZLE_64B, SwizzleMode.SWIZZLE_128B]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bits,shape", [(16, (64, 64)), (16, (128, 128)), (8, (64, 128)), (32, (32, 64))])
def test_swizzle_is_permutation_and_inverse(mode, bits, shape):
    L = make_swizzle_layout_2d(*shape, bits, mode)
    assert L.is_bijective()
    inv = L.inverse()
    offs = L.coords().reshape(-1, 3)
    idx = np.stack(np.indices(shape), -1).reshape(-1, 2)
    for k in range(0, len(offs), 97):
        assert inv.forward(*offs[k]) == tuple(idx[k])


@pytest.mark.parametrize("mode", MODES)
def test_matches_cutlass_xor_on_bytes(mode):
    width = mode.value
    L = make_swizzle_layout_2d(8, width // 2, 16, mode)     # one 8-row atom of fp16
    for r in range(8):
        for c in range(width // 2):
            assert L.map(r, c) * 2 == apply_cutlass_swizzle(r * width + c * 2, *mode.cutlass_swizzle())


@pytest.mark.parametrize("row_bytes,mode", [(256, SwizzleMode.SWIZZLE_128B), (128, SwizzleMode.SWIZZLE_128B),
                                            (64, SwizzleMode.SWIZZLE_64B), (96, SwizzleMode.SWIZZLE_32B),
                                            (32, SwizzleMode.SWIZZLE_32B), (16, SwizzleMode.NONE)])
def test_widest_swizzle(row_bytes, mode):
    assert TL.widest_swizzle(row_bytes) is mode


@pytest.mark.parametrize("cols,mode", [(64, SwizzleMode.SWIZZLE_128B), (32, SwizzleMode.SWIZZLE_64B),
                                       (16, SwizzleMode.SWIZZLE_32B)])
def test_make_swizzled_layout_picks_by_row(cols, mode):
    L = TL.make_swizzled_layout((128, cols), dtype="float16")
    assert TL.detect_swizzle_mode(L, (128, cols), dtype="float16") is mode
    assert TL.is_tma_wgmma_compatible(L, (128, cols), dtype="float16")


def test_wide_rows_are_strips_of_atoms():
    L = TL.make_wgmma_swizzled_layout((64, 128), dtype="float16")     # 256-byte rows
    assert L.get_output_shape() == [2, 8, 512]
    assert L.map(0, 64) == 64 * 64                                      # strip 1 starts after 64 rows of strip 0
    assert TL.is_tma_wgmma_compatible(L, (64, 128), dtype="float16")


def test_padding_fallback_and_linear_fallback():
    padded = TL.make_swizzled_layout((64, 8), dtype="float16")          # 16-byte rows: no swizzle fits
    assert padded.map(1, 0) == 8 and padded.is_injective()             # 128-bit rows: not 256-bit multiple
    padded2 = TL.make_swizzled_layout((64, 32), dtype="int8", k_major=False)
    assert padded2.map(1, 0) == 48                                      # int8 K-outer: one 16 B pad
    lin = TL.make_wgmma_swizzled_layout((64, 8), dtype="float16")
    assert lin.map(1, 0) == 8 and lin.is_bijective()


def test_mode_mismatch_not_tma_compatible():
    L = TL.make_quarter_bank_swizzled_layout((64, 64), dtype="float16")  # 32B atoms on 128-byte rows
    assert TL.detect_swizzle_mode(L, (64, 64), dtype="float16") is SwizzleMode.SWIZZLE_32B
    # the 32B pattern with 32B strips is a valid TMA layout for a 16-element box, but it is not the
    # 128B layout: a 128B-swizzled TMA load would put elements elsewhere
    assert not L.is_equal(TL.make_full_bank_swizzled_layout((64, 64), dtype="float16"))
    assert not TL.is_tma_wgmma_compatible(TL.make_padded_layout(64, 64, 16), (64, 64), dtype="float16")


def test_leading_dims_pass_through():
    L = TL.make_full_bank_swizzled_layout((3, 16, 64), dtype="float16")
    assert L.get_output_shape()[0] == 3 and L.is_bijective()
    assert L.map(2, 0, 0) == 2 * 16 * 64


def test_accepts_buffers():
    from tilelang.ir.buffer import Buffer
    buf = Buffer("A_s", (128, 32), "float16", scope="shared")
    L = TL.make_swizzled_layout(buf)
    assert TL.detect_swizzle_mode(L, buf) is SwizzleMode.SWIZZLE_64B
    assert TL.make_linear_layout(buf).map(1, 1) == 33


def test_bad_shapes_rejected():
    with pytest.raises(ValueError):
        TL.make_full_bank_swizzled_layout((64, 32), dtype="float16")       # 64-byte rows
    with pytest.raises(ValueError):
        TL.make_full_bank_swizzled_layout((6, 64), dtype="float16")        # not a multiple of 8 rows
    with pytest.raises(TypeError):
        TL.make_full_bank_swizzled_layout((64, 64))                          # plain shape needs dtype


def test_swizzle_mode_fields():
    assert [m.wgmma_layout_type() for m in [SwizzleMode.NONE] + MODES] == [0, 3, 2, 1]
    assert [m.smem_alignment() for m in MODES] == [256, 512, 1024]
    assert SwizzleMode.from_ordinal(3) is SwizzleMode.SWIZZLE_128B
