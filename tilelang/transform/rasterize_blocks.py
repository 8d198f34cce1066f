"""`T.use_swizzle(panel_size)`: launch order of blocks grouped in panels, so blocks
that run at the same time share rows of A and columns of B in the L2 cache.

The hardware launches block (x, y) in order id = y * gx + x. We remap: ids run down
a panel of `panel_size` block rows (column by column) before moving right, i.e.
new_y = first_row + (id % group) % rows, new_x = (id % group) // rows, with
group = panel_size * gx. Every (x, y) is still visited exactly once.

The remap is a permutation of the grid, so the kernel's block variables keep their
ranges (0 <= bx < gx): they stay the launch's block variables, and the launch records
how each is computed from the hardware indices (`BLOCK_REMAP`). A backend binds them
once at the top of the kernel; every later pass reasons about plain block indices
(bounds, divisibility, TMA coordinates) instead of a floordiv/floormod/min chain
substituted into every address."""
from __future__ import annotations

from dataclasses import dataclass

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.visitor import Mutator
from tilelang.arith.simplify import simplify
from tilelang.transform.pass_manager import function_pass

BLOCK_REMAP = "block_remap"   # KernelLaunch annotation: a BlockRemap


@dataclass(frozen=True)
class BlockRemap:
    """block_vars[i] = exprs[i] (a function of the hardware indices `hw_vars`)."""
    hw_vars: tuple      # E.Var per grid axis (blockIdx.x, .y, ...)
    exprs: tuple        # the block variable's value per axis, over hw_vars

    def bindings(self, block_vars):
        return list(zip(block_vars, self.exprs))


def remap(bx, by, gx, gy, panel, order="row"):
    """(new_x, new_y) expressions of the hardware block indices."""
    if order == "col":  # panels of block columns
        ny, nx = remap(by, bx, gy, gx, panel, "row")
        return nx, ny
    pid = by * gx + bx
    group = gx * panel
    first = (pid // group) * panel
    rows = E.minimum(gy - first, panel)
    new_y = first + (pid % group) % rows
    new_x = (pid % group) // rows
    return new_x, new_y


class _Rasterize(Mutator):
    def visit_KernelLaunch(self, k):
        sw = k.annotations.get("swizzle")
        if not sw or len(k.grid) < 2:
            return self.generic_visit(k)
        panel, order = sw
        bx, by = k.block_vars[0], k.block_vars[1]
        hx, hy = E.Var(bx.name + "_hw"), E.Var(by.name + "_hw")
        nx, ny = (simplify(e) for e in remap(hx, hy, k.grid[0], k.grid[1], int(panel), order))
        hw = [hx, hy] + k.block_vars[2:]
        ann = {a: v for a, v in k.annotations.items() if a != "swizzle"}
        ann[BLOCK_REMAP] = BlockRemap(tuple(hw), (nx, ny) + tuple(k.block_vars[2:]))
        out = S.KernelLaunch(k.grid, k.threads, k.block_vars, k.thread_vars, self.visit(k.body), ann)
        out.span = k.span
        return out


@function_pass("rasterize_blocks")
def rasterize_blocks(func):
    return func.with_body(_Rasterize().visit(func.body))
