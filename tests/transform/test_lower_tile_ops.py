"""before / expected: a tile op and the loops it lowers to."""
import tilelang.language as T
from tilelang.transform.lower_tile_ops import lower_tile_ops
from tilelang.transform.pass_manager import PassContext


def _lower(f):
    return lower_tile_ops(f, PassContext()).script()


def test_copy_predicates_ragged_global_reads():
    @T.prim_func
    def before(A: T.Tensor((100,), "float32"), B: T.Tensor((100,), "float32")):
        with T.Kernel(2, threads=64) as bx:
            s = T.alloc_shared((64,), "float32")
            T.copy(A[bx * 64], s)
            T.copy(s, B[bx * 64])
    text = _lower(before)
    # loads outside read 0, stores outside are skipped
    assert "T.if_then_else(bx * 64 + i0 < 100, A[bx * 64 + i0], 0.0)" in text
    assert "if bx * 64 + i0_1 < 100:" in text


def test_copy_in_bounds_is_not_predicated():
    @T.prim_func
    def before(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            s = T.alloc_shared((64,), "float32")
            T.copy(A[0:64], s)
            T.copy(s, B[64:128])
    text = _lower(before)
    assert "if_then_else" not in text and "if " not in text


def test_reduce_lowers_to_init_and_serial_loop():
    @T.prim_func
    def before(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1) as bx:
            f = T.alloc_fragment((4, 8), "float32")
            r = T.alloc_fragment((4,), "float32")
            T.copy(A, f)
            T.reduce_max(f, r, dim=1)
            T.copy(r, B)
    text = _lower(before)
    assert '-T.infinity("float32")' in text
    assert "for r_1 in T.serial(8):" in text
    assert "r[i0_1] = T.max(r[i0_1], f[i0_1, r_1])" in text


def test_gemm_clear_accum_becomes_fill():
    @T.prim_func
    def before(A: T.Tensor((16, 16), "float16"), C: T.Tensor((16, 16), "float32")):
        with T.Kernel(1) as bx:
            a = T.alloc_shared((16, 16), "float16")
            c = T.alloc_fragment((16, 16), "float32")
            T.copy(A, a)
            T.gemm(a, a, c, clear_accum=True)
            T.copy(c, C)
    text = _lower(before)
    assert text.index("c[i0_1, i1_1] = 0.0") < text.index("T.gemm(a, a, c)")
