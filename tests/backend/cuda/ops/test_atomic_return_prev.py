"""`T.atomic_add(x[i], v, return_prev=True)` as an expression in CUDA code: the
device helper returns the previous value."""
import tilelang.language as T

from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import build


@needs_nvrtc
def test_return_prev_is_an_expression():
    @T.prim_func
    def k(Out: T.Tensor((256,), "int32"), M: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=256) as bx:
            tx = T.get_thread_binding()
            cnt = T.alloc_shared((1,), "int32")
            pos = T.alloc_var(T.int32)
            if tx == 0:
                cnt[0] = 0
            T.sync_threads()
            pos = T.atomic_add(cnt[0], 1, return_prev=True)
            Out[pos] = tx
            old = T.atomic_max(M[0], T.cast(tx, "float32"), return_prev=True)
            if old < 0:
                Out[0] = -1
    art = build(k)
    assert "AtomicAddRet(&cnt[0], (int)(1))" in art.source
    assert "AtomicMaxRet(&M[0]" in art.source
