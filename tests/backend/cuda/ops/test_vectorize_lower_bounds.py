"""A copy whose contiguous index the compiler cannot prove non-negative (a block's column
read from a tensor) keeps its `x >= 0` guard and is still vectorized: the guard holds for
a whole aligned vector or for none of it. T.use_swizzle's remapped block indices are
bound once and keep their ranges: no guard, no floordiv in the addresses."""
from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import build
import tilelang.language as T


def _copy(swizzle=False, loaded_column=False):
    @T.prim_func
    def f(A: T.Tensor((256, 1024), "float16"), Col: T.Tensor((8,), "int32"), B: T.Tensor((256, 1024), "float16")):
        with T.Kernel(8, 2, threads=128) as (bx, by):
            T.use_swizzle(panel_size=4, enable=swizzle)
            s = T.alloc_shared((128, 128), "float16")
            col = Col[bx] if loaded_column else bx
            T.copy(A[by * 128, col * 128], s)
            T.copy(s, B[by * 128, bx * 128])
    return f


@needs_nvrtc
def test_unprovable_column_keeps_its_guard_and_vectors():
    plain, loaded = build(_copy(), "sm_80").source, build(_copy(loaded_column=True), "sm_80").source
    assert ">= 0" in loaded and ">= 0" not in plain
    assert loaded.count("const uint4*") == plain.count("const uint4*") > 0


@needs_nvrtc
def test_swizzled_block_indices_are_bound_once_and_unguarded():
    plain, swizzled = build(_copy(), "sm_80").source, build(_copy(swizzle=True), "sm_80").source
    body = swizzled[swizzled.index("const int by = "):].split("\n", 1)[1]
    assert "floordiv" not in body and ">= 0" not in body and "< 1024" not in body
    assert swizzled.count("uint4") == plain.count("uint4") > 0
