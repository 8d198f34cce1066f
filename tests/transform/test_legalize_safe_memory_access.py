"""before / expected for the safe-memory-access legalization."""
import tilelang.language as T
from tilelang.transform.legalize_safe_memory_access import legalize_safe_memory_access
from tilelang.transform.lower_tile_ops import lower_tile_ops


def _legal(f):
    return legalize_safe_memory_access(lower_tile_ops(f)).script()


def test_unprovable_accesses_are_guarded():
    n = T.dynamic("n")

    @T.prim_func
    def f(A: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 32)) as bx:
            for i in T.Parallel(32):
                C[bx * 32 + i] = A[bx * 32 + i] + 1.0
    text = _legal(f)
    assert "if bx * 32 + i < n:" in text
    assert "T.if_then_else(bx * 32 + i < n, A[bx * 32 + i], 0.0)" in text


def test_provable_accesses_are_left_alone():
    @T.prim_func
    def f(A: T.Tensor((128,), "float32"), C: T.Tensor((128,), "float32")):
        with T.Kernel(4) as bx:
            for i in T.Parallel(32):
                C[bx * 32 + i] = A[(bx * 32 + i) % 128] + 1.0
    text = _legal(f)
    assert "if " not in text and "if_then_else" not in text


def test_the_users_own_guard_is_enough():
    @T.prim_func
    def f(A: T.Tensor((100,), "float32"), C: T.Tensor((100,), "float32")):
        with T.Kernel(4) as bx:
            for i in T.Parallel(32):
                if bx * 32 + i < 100:
                    C[bx * 32 + i] = A[bx * 32 + i] + 1.0
    text = _legal(f)
    assert text.count("if ") == 1 and "if_then_else" not in text
