"""Bank-conflict simulation: swizzles are conflict-free for ldmatrix-style
8-rows-at-one-chunk phases; a plain 128-byte-row fp16 tile is 8-way
conflicted (so the check can fail)."""
import pytest

import tilelang.layout as TL
from tilelang.layout import bank_conflicts as bc


def test_unswizzled_128B_rows_conflict():
    L = TL.make_linear_layout((64, 64))
    assert bc.max_conflict_ways(L, 16, bc.ldmatrix_phases((64, 64), 16)) == 8
    assert not TL.is_bank_conflict_free(L, 16)
    assert TL.is_bank_conflict_free(L, 16, pattern="row_vector")   # row-wise copies are fine regardless


@pytest.mark.parametrize("dtype,shape", [("float16", (64, 64)), ("float16", (128, 32)), ("float16", (64, 16)),
                                         ("float16", (128, 128)), ("int8", (64, 128)), ("float32", (64, 32)),
                                         ("bfloat16", (64, 256))])
def test_chosen_swizzle_is_conflict_free(dtype, shape):
    L = TL.make_swizzled_layout(shape, dtype=dtype)
    bits = {"float16": 16, "bfloat16": 16, "int8": 8, "float32": 32}[dtype]
    assert TL.is_bank_conflict_free(L, bits, "ldmatrix")
    assert TL.is_bank_conflict_free(L, bits, "row_vector")


def test_padding_also_removes_conflicts():
    assert TL.is_bank_conflict_free(TL.make_padded_layout(64, 64, 16), 16)


def test_32B_rows_two_way_without_swizzle():
    assert bc.max_conflict_ways(TL.make_linear_layout((64, 16)), 16, bc.ldmatrix_phases((64, 16), 16)) == 2


def test_phase_model():
    assert bc.phase_ways([16 * k for k in range(8)]) == 1          # 128 contiguous bytes
    assert bc.phase_ways([128 * k for k in range(8)]) == 8         # same four banks
    assert bc.phase_ways([0] * 8) == 1                             # broadcast
