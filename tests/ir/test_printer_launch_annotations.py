"""Launch annotations (T.use_swizzle, T.annotate_min_blocks_per_sm) change the generated
code, so they are part of the printed form and of the structural hash (the cache key)."""
import tilelang
import tilelang.language as T
from tilelang.ir.structural_hash import structural_hash


def _k(swizzle=False, min_blocks=None):
    @T.prim_func
    def k(A: T.Tensor((256, 256), "float32")):
        with T.Kernel(4, 4, threads=128) as (bx, by):
            if swizzle:
                T.use_swizzle(8)
            if min_blocks:
                T.annotate_min_blocks_per_sm(min_blocks)
            for i, j in T.Parallel(64, 64):
                A[by * 64 + i, bx * 64 + j] = A[by * 64 + i, bx * 64 + j] + 1
    return k


def test_annotations_are_printed_and_hashed():
    plain, sw, mb = _k(), _k(swizzle=True), _k(min_blocks=2)
    assert "T.use_swizzle(8, 'row')" in sw.script()
    assert "T.annotate_min_blocks_per_sm(2)" in mb.script()
    hashes = {structural_hash(f) for f in (plain, sw, mb)}
    assert len(hashes) == 3


def test_min_blocks_per_sm_reaches_launch_bounds():
    try:
        src = tilelang.compile(_k(min_blocks=2), target="cuda -arch=sm_90a").get_kernel_source()
    except ImportError:
        return
    assert "__launch_bounds__(128, 2)" in src
