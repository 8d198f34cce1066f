"""A copy whose contiguous index holds a block index the compiler cannot prove
non-negative (T.use_swizzle's remapped one) keeps its `x >= 0` guard and is still
vectorized: the guard holds for a whole aligned vector or for none of it."""
from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import build
import tilelang.language as T


def _copy(swizzle):
    @T.prim_func
    def f(A: T.Tensor((256, 1024), "float16"), B: T.Tensor((256, 1024), "float16")):
        with T.Kernel(8, 2, threads=128) as (bx, by):
            T.use_swizzle(panel_size=4, enable=swizzle)
            s = T.alloc_shared((128, 128), "float16")
            T.copy(A[by * 128, bx * 128], s)
            T.copy(s, B[by * 128, bx * 128])
    return f


@needs_nvrtc
def test_swizzled_block_index_copies_are_vectorized():
    plain, swizzled = build(_copy(False), "sm_80").source, build(_copy(True), "sm_80").source
    assert ">= 0" in swizzled and "floordiv" in swizzled   # the guard the remap needs
    assert swizzled.count("uint4") == plain.count("uint4") > 0
