"""Rasterization plans walk every tile once, in the order T.use_swizzle gives the kernel."""
import pytest

from tilelang.carver.roller.rasterization import (NoRasterization, Rasterization2DColumn,
                                                  Rasterization2DRow)
from tilelang.ir import expr as E
from tilelang.transform.rasterize_blocks import remap


@pytest.mark.parametrize("plan", [NoRasterization(), Rasterization2DRow(3), Rasterization2DColumn(4)])
@pytest.mark.parametrize("grid", [(5, 7), (8, 8), (1, 6)])
def test_every_tile_once(plan, grid):
    tiles = [plan.tile_of(b, grid) for b in range(grid[0] * grid[1])]
    assert sorted(tiles) == sorted((x, y) for x in range(grid[0]) for y in range(grid[1]))


def _evaluate(e, env):
    from tilelang.arith.simplify import simplify
    from tilelang.ir.visitor import substitute
    return int(simplify(substitute(e, {v: E.const(n) for v, n in env.items()})).value)


@pytest.mark.parametrize("plan", [Rasterization2DRow(3), Rasterization2DColumn(2)])
def test_matches_the_kernel_swizzle(plan):
    gx, gy = 5, 7
    hx, hy = E.Var("hx"), E.Var("hy")
    nx, ny = remap(hx, hy, gx, gy, plan.panel_width, plan.order)
    for b in range(gx * gy):
        env = {hx: b % gx, hy: b // gx}
        assert plan.tile_of(b, (gx, gy)) == (_evaluate(nx, env), _evaluate(ny, env))


def test_no_rasterization_has_no_panel():
    with pytest.raises(ValueError, match="no panel width"):
        NoRasterization().panel_width
    with pytest.raises(ValueError, match="panel_width"):
        Rasterization2DRow(0)
