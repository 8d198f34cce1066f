"""CPU-only: tile ops that split their work among the block's threads (gemm, reductions)
inside a branch on the thread index are a clear compile error, not a partial result,
unless the branch selects whole warps (`if tx < 128:`, test_warp_specialized.py)."""
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc


def _kernel(op):
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32"),
          R: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=256):
            tx = T.get_thread_binding()
            a = T.alloc_shared((64, 64), "float16")
            b = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            r = T.alloc_fragment((64,), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.clear(c)
            if tx < 100:   # not whole warps
                if op == "gemm":
                    T.gemm(a, b, c)
                else:
                    T.reduce_sum(a, r, dim=1)
            T.copy(c, C)
            T.copy(r, R)
    return k


@needs_nvrtc
@pytest.mark.parametrize("op,name", [("gemm", "T.gemm"), ("reduce", "T.reduce_sum")])
def test_cooperative_tile_op_in_thread_branch_is_an_error(op, name):
    with pytest.raises(tilelang.TileLangError, match="branch on the thread index") as e:
        tilelang.compile(_kernel(op), target="cuda -arch=sm_90a")
    assert name in str(e.value) and "test_divergent_tile_ops.py" in str(e.value)
