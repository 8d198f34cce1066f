"""The SIMT recommender: threads and tiles per axis are consistent and cover the problem."""
import math

import pytest

from tilelang.carver.arch import CUDA
from tilelang.carver.roller.simt import recommend

ARCH = CUDA("cuda -arch=sm_90a")


@pytest.mark.parametrize("axes,extents", [("SSR", [64, 128, 1024]), ("SRS", [8, 1024, 512]),
                                          ("SS", [1024, 1024]), ("S", [7]), ("SR", [3, 5])])
def test_hints_are_consistent(axes, extents):
    hints = recommend(ARCH, axes, extents, 16, 10)
    assert hints
    for h in hints:
        assert not h.use_tc and h.threads in (64, 128, 256, 512)
        s = [n for a, n in zip(axes, extents) if a == "S"]
        assert len(h.block) == len(h.thread) == len(s) and len(h.rstep) == axes.count("R")
        assert all(b % t == 0 for b, t in zip(h.block, h.thread))
        v = h.vectorize.get("A", 1)
        assert v * 16 <= 128 and extents[-1] % v == 0
    assert [h.score for h in hints] == sorted((h.score for h in hints), reverse=True)


def test_contiguous_reduction_is_split_across_threads():
    best = recommend(ARCH, "SR", [4096, 4096], 16, 1)[0]
    assert math.prod(best.reduce_thread) >= 32   # a warp reads a row's contiguous elements
