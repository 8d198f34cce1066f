"""`GEMVTemplate`: C[1, N] = A[1, K] @ B (B stored N x K when `trans_B`), accumulated in
`accum_dtype`, plus an optional Bias[N], stored as `out_dtype`."""
from __future__ import annotations

from dataclasses import dataclass

from tilelang.carver.arch import TileDevice
from tilelang.carver.roller import simt
from tilelang.carver.template.base import BaseTemplate, check_dtypes, check_positive_ints
from tilelang.carver.template.matmul import gemm_kernel


@dataclass(repr=False)
class GEMVTemplate(BaseTemplate):
    N: int = None
    K: int = None
    trans_B: bool = True
    in_dtype: str = "float16"
    out_dtype: str = "float16"
    accum_dtype: str = "float16"
    with_bias: bool = False

    def check_parameters(self):
        check_positive_ints(self, "N", "K")
        check_dtypes(self, "in_dtype", "out_dtype", "accum_dtype")

    def initialize_function(self):
        return gemm_kernel(1, self.N, self.K, False, self.trans_B, self.in_dtype, self.out_dtype,
                           self.accum_dtype, self.with_bias, block_M=16)

    def get_hardware_aware_configs(self, arch: TileDevice = None, topk: int = 10):
        # a vector times a matrix is bandwidth-bound: SIMT hints over (N, K), B read along K
        # when it is stored N x K
        axes, extents = ("SR", [self.N, self.K]) if self.trans_B else ("RS", [self.K, self.N])
        return simt.recommend(arch or self.arch, axes, extents, self.in_dtype.bits, topk)
