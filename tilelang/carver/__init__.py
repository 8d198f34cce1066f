"""`tilelang.carver`: device descriptions (`arch`), hints and the recommenders that rank them
(`roller`), and computations that recommend their own schedules (`template`)."""
from tilelang.carver.arch import CDNA, CUDA  # noqa: F401
from tilelang.carver.roller import (  # noqa: F401
    Hint, IntrinInfo, NoRasterization, Rasterization2DColumn, Rasterization2DRow)
from tilelang.carver.template import (  # noqa: F401
    ElementwiseTemplate, GEMVTemplate, GeneralReductionTemplate, MatmulTemplate)
