"""Rasterization plans: the order in which a hint's blocks walk a 2-D grid of output tiles.

Walking the grid in panels of `panel_width` rows (or columns) keeps the operand tiles that
neighbouring blocks share in L2; with `NoRasterization` block (x, y) takes tile (x, y). In a
kernel the plan becomes `T.use_swizzle(panel_size=plan.panel_width, order=plan.order)`."""
from __future__ import annotations


class Rasterization:
    """Base of the plans. `order` is the `T.use_swizzle` order ("row" / "col")."""
    order: str | None = None
    panel_width_: int | None = None

    @property
    def panel_width(self) -> int:
        if self.panel_width_ is None:
            raise ValueError(f"{self!r} walks the grid in natural order: it has no panel width")
        return self.panel_width_

    def tile_of(self, block: int, grid: tuple[int, int]) -> tuple[int, int]:
        """The (x, y) tile that the `block`-th block (row-major launch order) computes."""
        raise NotImplementedError

    def __eq__(self, other):
        return type(self) is type(other) and self.panel_width_ == other.panel_width_

    def __hash__(self):
        return hash((type(self).__name__, self.panel_width_))


class NoRasterization(Rasterization):
    def tile_of(self, block, grid):
        gx, _ = grid
        return block % gx, block // gx

    def __repr__(self):
        return "<NoRasterization>"


def _panel_walk(block, gx, gy, width):
    """The tile of launch id `block` when panels of `width` grid rows are walked column by
    column (the mapping `transform/rasterize_blocks.py` gives `T.use_swizzle(order="row")`)."""
    group = gx * width
    first = (block // group) * width
    rows = min(gy - first, width)     # the last panel may be narrower
    return (block % group) // rows, first + (block % group) % rows


class Rasterization2DRow(Rasterization):
    """Panels of `panel_width` grid rows (y): down a panel, then one column right."""
    order = "row"

    def __init__(self, panel_width: int = 4):
        if int(panel_width) < 1:
            raise ValueError(f"Rasterization2DRow: panel_width must be >= 1, got {panel_width}")
        self.panel_width_ = int(panel_width)

    def tile_of(self, block, grid):
        gx, gy = grid
        return _panel_walk(block, gx, gy, self.panel_width_)

    def __repr__(self):
        return f"<Rasterization2DRow({self.panel_width_})>"


class Rasterization2DColumn(Rasterization):
    """Panels of `panel_width` grid columns (x): across a panel, then one row down."""
    order = "col"

    def __init__(self, panel_width: int = 4):
        if int(panel_width) < 1:
            raise ValueError(f"Rasterization2DColumn: panel_width must be >= 1, got {panel_width}")
        self.panel_width_ = int(panel_width)

    def tile_of(self, block, grid):
        gx, gy = grid
        # the row walk of the transposed grid, whose launch ids run down the columns
        y, x = _panel_walk((block % gx) * gy + block // gx, gy, gx, self.panel_width_)
        return x, y

    def __repr__(self):
        return f"<Rasterization2DColumn({self.panel_width_})>"
