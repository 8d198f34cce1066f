"""plan/copy_forms.py on the lane loop of `T.atomic_addx{n}` (`for lane in T.vectorized(n):
atomic_add(...)`): one vector atomic of n lanes where the first element is aligned to the
vector (ops/vector_atomic.py `lane_width`), printed as the loop's form; else no form, the
lanes one by one."""
import pytest

import tilelang.language as T
from tilelang.backend.cuda.plan.copy_forms import plan_copy_forms
from tests.backend.cuda.plan.around import around, lines_with


def adds(n, dt, offset=0):
    @T.prim_func
    def k(A: T.Tensor((64,), dt), B: T.Tensor((72,), dt)):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(64 // n):
                (T.atomic_addx2 if n == 2 else T.atomic_addx4)(B[i * n + offset], A[i * n])
    return k


def _lane_loops(text):
    return lines_with(text, "T.vectorized(")


@pytest.mark.parametrize("n,dt,form", [(4, "float32", "vector atomic x4 (16 B)"),
                                       (2, "float32", "vector atomic x2 (8 B)"),
                                       (2, "bfloat16", "vector atomic x2 (4 B)"),
                                       (4, "float16", "vector atomic x4 (8 B)")])
def test_aligned_lanes_are_one_vector_atomic(n, dt, form):
    before, after = around(adds(n, dt), plan_copy_forms)
    assert _lane_loops(before) == [f"for lane in T.vectorized({n}):"]
    assert _lane_loops(after) == [f"for lane in T.vectorized({n}):  # atomic -> {form}"], after


def test_unaligned_lanes_stay_a_loop():
    # B[i * 4 + 1]: the first lane is not on a 16-byte boundary
    _, after = around(adds(4, "float32", offset=1), plan_copy_forms)
    assert _lane_loops(after) == ["for lane in T.vectorized(4):"], after
