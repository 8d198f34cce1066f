"""The mismatch report: counts, first wrong indices with their output tile, and hints for an
unwritten region, a wrong ragged edge and an output shifted by one tile."""
import numpy as np

from tilelang.puzzles.mismatch import describe, tile_extent, tile_of


def test_right_output_gives_no_lines():
    x = np.arange(12.0).reshape(3, 4)
    assert describe("out", x.astype("float32"), x, (2, 2), 1e-6, 1e-6) == []


def test_tile_of_and_extent_clip_at_the_edge():
    assert tile_of((5, 9), (4, 8)) == (1, 1)
    assert tile_extent((1, 1), (4, 8), (6, 10)) == "[4..5, 8..9]"
    assert tile_of((5, 9), (0, 8)) == (0, 1)   # a dimension no block splits


def test_one_wrong_tile_is_named():
    expected = np.zeros((10, 20))
    got = expected.copy()
    got[4:8, 8:16] = 1.0
    text = "\n".join(describe("out", got, expected, (4, 8), 1e-6, 1e-6))
    assert "32 of 200 elements of out are wrong" in text
    assert "out[4, 8] = 1, expected 0" in text and "output tile (1, 1) covering [4..7, 8..15]" in text
    assert "fall in 1 of the 9 output tiles" in text


def test_ragged_edge_never_written():
    expected = np.ones((5, 70))
    got = expected.copy()
    got[:, 64:] = np.nan
    text = "\n".join(describe("out", got, expected, (5, 32), 1e-6, 1e-6))
    assert "never written" in text
    assert "only the last tile along dimension 1 is wrong, the partial one (70 is not a multiple of 32)" in text


def test_output_shifted_by_one_tile():
    rng = np.random.default_rng(0)
    expected = rng.standard_normal(150)
    got = np.full(150, np.nan)
    got[64:] = expected[:86]          # block b wrote its tile at block b + 1's place
    text = "\n".join(describe("out", got, expected, (64,), 1e-6, 1e-6))
    assert "shifted forward by one tile (64) along dimension 0" in text
    assert "off-by-one in the block offset" in text
    got = np.full(150, np.nan)
    got[:86] = expected[64:]
    assert "shifted backward by one tile" in "\n".join(describe("out", got, expected, (64,), 1e-6, 1e-6))


def test_everything_wrong_hints_at_the_formula():
    text = "\n".join(describe("out", np.zeros(8), np.ones(8), (4,), 1e-6, 1e-6))
    assert "every element is wrong" in text
