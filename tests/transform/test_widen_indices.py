"""before / expected for widen_indices: indices into tensors with int64 extents (or 2**31
elements and more) are computed in int64. Before, `x[bx * 512 + i]` overflowed int32 for
a 2**32-element tensor (the published test_fill_symbolic: an illegal memory access)."""
import tilelang.language as T
from tilelang.transform.lower_tile_ops import lower_tile_ops
from tilelang.transform.widen_indices import widen_indices


def _fill(n):
    @T.prim_func
    def f(x: T.Tensor((n,), "bfloat16")):
        with T.Kernel(T.ceildiv(n, 512), threads=128) as bx:
            for i in T.Parallel(512):
                x[bx * 512 + i] = 1.0
    return f


def test_int64_extent_widens_the_index_arithmetic():
    text = widen_indices(lower_tile_ops(_fill(T.symbolic("n", "int64")))).script()
    assert 'x[T.Cast("int64", bx) * T.int64(512) + T.Cast("int64", i)]' in text, text


def test_int32_extents_are_left_alone():
    f = lower_tile_ops(_fill(T.symbolic("n", "int32")))
    assert widen_indices(f).script() == f.script()


def test_constant_sizes_past_int32_are_widened():
    text = widen_indices(lower_tile_ops(_fill(2 ** 32))).script()
    assert 'T.Cast("int64", bx)' in text
