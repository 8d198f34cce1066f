"""`tilelang.carver.template`: computations that recommend their own schedules."""
from tilelang.carver.template.base import BaseTemplate, TemplateParameterError  # noqa: F401
from tilelang.carver.template.matmul import MatmulTemplate  # noqa: F401
from tilelang.carver.template.gemv import GEMVTemplate  # noqa: F401
from tilelang.carver.template.elementwise import ElementwiseTemplate  # noqa: F401
from tilelang.carver.template.general_reduce import GeneralReductionTemplate  # noqa: F401
