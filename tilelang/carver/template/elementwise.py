"""`ElementwiseTemplate`: B = A + 1 over a tensor of any rank (the published stand-in for an
elementwise operation)."""
# no `from __future__ import annotations`: the kernel's T.Tensor annotations read locals
import math
from dataclasses import dataclass

from tilelang.carver.arch import TileDevice
from tilelang.carver.roller import simt
from tilelang.carver.template.base import BaseTemplate, TemplateParameterError, check_dtypes
from tilelang.ir.span import caller_span

ELEMS_PER_BLOCK, THREADS = 1024, 256


def unravel(flat, shape):
    """The index tuple of row-major offset `flat` in `shape` (expressions)."""
    idx = []
    for n in reversed(shape):
        idx.append(flat % n)
        flat = flat // n
    return tuple(reversed(idx))


def check_shape(template, name="shape"):
    shape = getattr(template, name)
    ok = isinstance(shape, (list, tuple)) and len(shape) > 0 and all(
        isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in shape)
    if not ok:
        raise TemplateParameterError(
            f"{type(template).__name__}: parameter `{name}` must be a non-empty list of "
            f"positive ints, got {shape!r}", caller_span())
    setattr(template, name, list(shape))


def elementwise_kernel(shape, dtype):
    import tilelang.language as T
    total = math.prod(shape)

    @T.prim_func
    def add_one(A: T.Tensor(shape, dtype), B: T.Tensor(shape, dtype)):
        with T.Kernel(T.ceildiv(total, ELEMS_PER_BLOCK), threads=THREADS) as bx:
            for i in T.Parallel(ELEMS_PER_BLOCK):
                if bx * ELEMS_PER_BLOCK + i < total:
                    B[unravel(bx * ELEMS_PER_BLOCK + i, shape)] = A[unravel(bx * ELEMS_PER_BLOCK + i, shape)] + 1
    return add_one


@dataclass(repr=False)
class ElementwiseTemplate(BaseTemplate):
    shape: list = None
    dtype: str = "float16"

    def check_parameters(self):
        check_shape(self)
        check_dtypes(self, "dtype")

    def initialize_function(self):
        return elementwise_kernel(self.shape, self.dtype)

    def get_hardware_aware_configs(self, arch: TileDevice = None, topk: int = 10):
        return simt.recommend(arch or self.arch, "S" * len(self.shape), self.shape,
                              self.dtype.bits, topk)
