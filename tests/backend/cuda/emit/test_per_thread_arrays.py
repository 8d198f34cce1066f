"""T.Parallel nests over per-thread arrays (`T.alloc_local`), e.g. T.clear / T.copy of
one, run entirely in every thread instead of being split over the block's threads."""
import re

from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import build
import tilelang.language as T


def _kernel():
    @T.prim_func
    def f(A: T.Tensor((4, 128, 16), "float32"), B: T.Tensor((4, 128, 16), "float32"), S: T.Tensor((4,), "float32")):
        with T.Kernel(4, threads=128) as bz:
            tx = T.get_thread_binding()
            L = T.alloc_local((16,), "float32")
            F = T.alloc_fragment((128,), "float32")
            T.clear(L)
            T.copy(A[bz, tx, :], L)
            for i in T.serial(16):
                L[i] = L[i] * 2
            T.copy(L, B[bz, tx, :])
            idx = T.alloc_local((1,), "int32")
            idx[0] = bz * 2
            for i in T.Parallel(128):   # a block-uniform local scalar: still spread over the threads
                F[i] = A[idx[0] // 2, i, 0]
            T.reduce_sum(F, S[bz:bz + 1], dim=0)
    return f


@needs_nvrtc
def test_local_array_loops_are_per_thread():
    src = build(_kernel(), "sm_80").source
    for pattern in (r"L\[(\w+)\] = 0\.0f;", r"L\[(\w+)\] = .*A\[", r"B\[.*\] = L\[(\w+)\];"):
        m = re.search(pattern, src)
        assert m, pattern
        var = m.group(1)
        assert re.search(rf"for \(int {var} = 0; {var} < 16; \+\+{var}\)", src), (pattern, src)
    assert "* 128 + tl_tid;" in src   # the fragment loop is still spread over the threads
