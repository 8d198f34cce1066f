"""compute_gmma_descriptor: the descriptor offsets read off a layout, checked against
the canonical form, for the swizzles we make, a user's interleaved layout, slices, and
layouts wgmma cannot read."""
import pytest

from tilelang.ir.buffer import Buffer
from tilelang.layout import Layout, make_linear_layout
from tilelang.layout.swizzle import (SwizzleMode, make_full_bank_swizzled_layout,
                                     make_half_bank_swizzled_layout, make_quarter_bank_swizzled_layout)
from tilelang.layout.wgmma_descriptor import compute_gmma_descriptor


def _buf(shape, dtype="float16"):
    return Buffer("S", shape, dtype, "shared")


@pytest.mark.parametrize("maker,mode,aw", [(make_full_bank_swizzled_layout, SwizzleMode.SWIZZLE_128B, 128),
                                           (make_half_bank_swizzled_layout, SwizzleMode.SWIZZLE_64B, 64),
                                           (make_quarter_bank_swizzled_layout, SwizzleMode.SWIZZLE_32B, 32)])
@pytest.mark.parametrize("rows,cols", [(64, 64), (128, 128), (64, 256)])
def test_k_major_swizzles(maker, mode, aw, rows, cols):
    buf = _buf((rows, cols))
    p = compute_gmma_descriptor(maker(buf), buf, transposed=False)
    assert (p.swizzle_mode, p.leading_byte_offset, p.stride_byte_offset) == (mode, 1, 8 * aw // 16)
    # the next swizzle strip along K holds the whole MN extent of one atom width
    assert p.strip_byte_offset == (rows * aw if cols * 2 > aw else 0)
    assert p.atom_byte_offset(64, 16) == 8 * 8 * aw + (32 // aw) * rows * aw + 32 % aw


def test_mn_major_128b_steps_between_atoms():
    buf = _buf((64, 128))     # (K, N), N contiguous: two 64-column atoms
    p = compute_gmma_descriptor(make_full_bank_swizzled_layout(buf), buf, transposed=True)
    assert (p.swizzle_mode, p.leading_byte_offset, p.stride_byte_offset) == (SwizzleMode.SWIZZLE_128B, 64 * 128 // 16, 64)
    assert not p.is_k_major and p.atom_byte_offset(64, 16) == 64 * 128 + 2 * 1024
    one = _buf((64, 64))
    assert compute_gmma_descriptor(make_full_bank_swizzled_layout(one), one, transposed=True).leading_byte_offset == 0


def test_interleaved_core_matrices():
    # [K/8][rows][8]: each 8-row x 16-byte core matrix contiguous (no swizzle)
    rows, k = 64, 32
    buf = _buf((rows, k))
    lay = Layout([rows, k], lambda r, c: (c // 8) * rows * 8 + r * 8 + c % 8)
    p = compute_gmma_descriptor(lay, buf, transposed=False)
    assert (p.swizzle_mode, p.leading_byte_offset, p.stride_byte_offset) == (SwizzleMode.NONE, rows * 16 // 16, 8)


def test_slice_of_a_staged_buffer():
    buf = _buf((2, 64, 64))
    lay = make_full_bank_swizzled_layout(buf)
    p = compute_gmma_descriptor(lay, buf, transposed=False, region=[(1, 1), (0, 64), (0, 64)])
    assert p.slice_byte_offset == 64 * 64 * 2 and p.stride_byte_offset == 64
    with pytest.raises(ValueError, match="2-D tile"):
        compute_gmma_descriptor(lay, buf, transposed=False, region=[(0, 2), (0, 64), (0, 64)])


def test_layouts_wgmma_cannot_read():
    buf = _buf((64, 64))
    with pytest.raises(ValueError, match="is not one wgmma reads K-major"):
        compute_gmma_descriptor(make_linear_layout([64, 64]), buf, transposed=False)
    with pytest.raises(ValueError, match="8-, 16- or 32-bit"):
        compute_gmma_descriptor(make_linear_layout([64, 64]), _buf((64, 64), "int4"), transposed=False)
