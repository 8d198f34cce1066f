"""`tilelang.carver.roller`: hints (recommended schedules) and the recommenders that rank
them -- `tensorcore` for GEMM-shaped work, `simt` for elementwise and reduction loops."""
from tilelang.carver.roller.rasterization import (  # noqa: F401
    NoRasterization, Rasterization, Rasterization2DColumn, Rasterization2DRow)
from tilelang.carver.roller.hint import Hint, IntrinInfo  # noqa: F401
from tilelang.carver.arch import CUDA, TileDevice  # noqa: F401
