"""The tensor-core recommender: every hint fits the arch and covers the problem; the ranking
is deterministic and follows the documented factors."""
import math

import pytest

from tilelang.carver.arch import CUDA
from tilelang.carver.roller.rasterization import NoRasterization, Rasterization2DColumn
from tilelang.carver.roller.tensorcore import GemmShape, recommend

H100, A100 = CUDA("cuda -arch=sm_90a"), CUDA("cuda -arch=sm_80")
PROBLEMS = [GemmShape(4096, 4096, 4096, 16, 32, 16), GemmShape(1024, 1024, 1024, 8, 32, 32),
            GemmShape(77, 300, 40, 16, 32, 16), GemmShape(1, 1024, 1024, 16, 16, 16),
            GemmShape(512, 512, 8192, 32, 32, 32)]


@pytest.mark.parametrize("arch", [H100, A100], ids=["sm90", "sm80"])
@pytest.mark.parametrize("p", PROBLEMS, ids=lambda p: f"{p.M}x{p.N}x{p.K}_{p.in_bits}b")
def test_hints_fit_the_arch_and_cover_the_problem(arch, p):
    hints = recommend(arch, p, 20)
    assert 0 < len(hints) <= 20
    k_inst = 256 // p.in_bits
    for h in hints:
        (bm, bn), (wm, wn), (bk,) = h.block, h.warp, h.rstep
        assert bm % wm == 0 and bn % wn == 0 and wm % 16 == 0 and wn % 16 == 0
        assert bk % k_inst == 0 and h.threads % 32 == 0 and 32 <= h.threads <= 1024
        # a tile is never larger than the problem needs (16 at least)
        assert bm <= max(16, 1 << (p.M - 1).bit_length()) and bn <= max(16, 1 << (p.N - 1).bit_length())
        smem = h.pipeline_stage * (bm + bn) * bk * p.in_bits // 8 + bm * bn * p.out_bits // 8
        assert h.smem_usage == smem <= arch.smem_cap
        assert 1 <= h.pipeline_stage <= max(1, math.ceil(p.K / bk))
        assert h.use_tc and 0 < h.score <= 1
    assert [h.score for h in hints] == sorted((h.score for h in hints), reverse=True)
    keys = [(tuple(h.block), tuple(h.rstep), h.threads) for h in hints]
    assert len(keys) == len(set(keys))   # one warp layout per block / K step / warp count


def test_deterministic():
    a = [h.to_dict() for h in recommend(H100, PROBLEMS[0], 20)]
    b = [h.to_dict() for h in recommend(H100, PROBLEMS[0], 20)]
    assert repr(a) == repr(b)


def test_large_problem_gets_large_tiles_and_a_panel_walk():
    best = recommend(H100, PROBLEMS[0], 1)[0]
    assert best.block[0] * best.block[1] >= 128 * 128 and best.pipeline_stage >= 2
    # 64 MiB of operands do not fit the 50 MiB L2: blocks walk in panels of sqrt(132) columns
    assert best.rasterization_plan == Rasterization2DColumn(11)


def test_small_problem_spreads_over_the_sms():
    # one 128 x 128 tile would leave 131 of 132 SMs idle: the best hint cuts more tiles
    best = recommend(H100, GemmShape(128, 128, 128, 16, 32, 16), 1)[0]
    assert (128 // best.block[0]) * (128 // best.block[1]) > 1
    assert best.rasterization_plan == NoRasterization()   # operands fit in L2


def test_shared_memory_limit_is_honoured():
    small = CUDA("cuda -arch=sm_80")
    small.smem_cap = small.max_smem_usage = 48 * 1024
    for h in recommend(small, PROBLEMS[0], 50):
        assert h.smem_usage <= 48 * 1024
