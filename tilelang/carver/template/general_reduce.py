"""`GeneralReductionTemplate`: C = the sum of A over its "R" axes, `structure` naming each axis
of `shape` "S" (kept) or "R" (summed); e.g. "SSR" sums the last axis. Floats add in float32
and integers in int32 (or their own type when wider), and C has A's dtype."""
# no `from __future__ import annotations`: the kernel's T.Tensor annotations read locals
import math
from dataclasses import dataclass

from tilelang.carver.arch import TileDevice
from tilelang.carver.roller import simt
from tilelang.carver.template.base import BaseTemplate, TemplateParameterError, check_dtypes
from tilelang.carver.template.elementwise import check_shape, unravel
from tilelang.ir.span import caller_span

OUTS_PER_BLOCK = 128


def _accum(dtype):
    if dtype.is_float:
        return "float64" if dtype.bits > 32 else "float32"
    return "int64" if dtype.bits > 32 else "int32"


def reduction_kernel(structure, shape, dtype):
    import tilelang.language as T
    s_shape = [n for a, n in zip(structure, shape) if a == "S"] or [1]
    r_shape = [n for a, n in zip(structure, shape) if a == "R"] or [1]
    s_total, r_total = math.prod(s_shape), math.prod(r_shape)
    acc_dtype = _accum(dtype)

    def a_index(s, r):   # A's index of spatial offset s and reduction offset r
        si, ri = iter(unravel(s, s_shape)), iter(unravel(r, r_shape))
        return tuple(next(si) if a == "S" else next(ri) for a in structure)

    @T.prim_func
    def reduce_sum(A: T.Tensor(shape, dtype), C: T.Tensor(s_shape, dtype)):
        with T.Kernel(T.ceildiv(s_total, OUTS_PER_BLOCK), threads=OUTS_PER_BLOCK) as bx:
            acc = T.alloc_fragment((OUTS_PER_BLOCK,), acc_dtype)
            T.clear(acc)
            for r in T.serial(r_total):
                for i in T.Parallel(OUTS_PER_BLOCK):
                    if bx * OUTS_PER_BLOCK + i < s_total:
                        acc[i] += A[a_index(bx * OUTS_PER_BLOCK + i, r)]
            for i in T.Parallel(OUTS_PER_BLOCK):
                if bx * OUTS_PER_BLOCK + i < s_total:
                    C[unravel(bx * OUTS_PER_BLOCK + i, s_shape)] = acc[i]
    return reduce_sum


@dataclass(repr=False)
class GeneralReductionTemplate(BaseTemplate):
    structure: str = None
    shape: list = None
    dtype: str = "float16"

    def check_parameters(self):
        s = self.structure
        if not isinstance(s, str) or not s or any(a not in "SRsr" for a in s):
            raise TemplateParameterError(
                f"GeneralReductionTemplate: parameter `structure` must be a string of 'S' "
                f"(spatial) and 'R' (reduction) letters such as 'SSR', got {s!r}", caller_span())
        self.structure = s.upper()
        check_shape(self)
        if len(self.shape) != len(self.structure):
            raise TemplateParameterError(
                f"GeneralReductionTemplate: parameter `shape` has {len(self.shape)} axes but "
                f"`structure` {self.structure!r} names {len(self.structure)}", caller_span())
        check_dtypes(self, "dtype")

    def initialize_function(self):
        return reduction_kernel(self.structure, self.shape, self.dtype)

    def get_hardware_aware_configs(self, arch: TileDevice = None, topk: int = 10):
        return simt.recommend(arch or self.arch, self.structure, self.shape, self.dtype.bits, topk)
