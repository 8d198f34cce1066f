"""T.alloc_reducer on CUDA: each thread keeps partials of the iterations it runs (one
replicated register for a 1-element reducer, the rows of a register tile), the finalize
combines the copies; a reducer no register layout suits lives in shared memory and every
contribution is a shared-memory atomic. Each contribution counts exactly once (the
published regression: 128 threads summing 8 elements must give 36, not 576)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T


def scalar_sum():
    @T.prim_func
    def k(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment((8,), "float32")
            T.copy(A, src)
            acc = T.alloc_reducer((1,), "float32", op="sum")
            T.reducer_init(acc)
            for i in T.Parallel(8):
                T.reducer_update(acc[0], src[i])
            res = T.alloc_fragment((1,), "float32")
            T.finalize_reducer(acc, res)
            if T.get_thread_binding() == 0:
                B[0] = res[0]
    return k


def outer_product(K=256):
    """acc[i, j] over serial i, j and a parallel k: no register layout, shared memory."""
    @T.prim_func
    def k(A: T.Tensor((4, K), "float32"), A2: T.Tensor((4, K), "float32"), B: T.Tensor((4, 4), "float32")):
        with T.Kernel(1, threads=128):
            s1 = T.alloc_fragment((4, K), "float32")
            s2 = T.alloc_fragment((4, K), "float32")
            T.copy(A, s1)
            T.copy(A2, s2)
            acc = T.alloc_reducer((4, 4), "float32", op="sum")
            T.reducer_init(acc)
            for i in T.serial(4):
                for j in T.serial(4):
                    for kk in T.Parallel(K):
                        T.reducer_update(acc[i, j], s1[i, kk] * s2[j, kk])
            res = T.alloc_fragment((4, 4), "float32")
            T.finalize_reducer(acc, res)
            T.copy(res, B)
    return k


def test_shared_memory_reducers_update_atomically():
    src = tilelang.compile(outer_product(), target="cuda -arch=sm_90a").get_kernel_source()
    assert "AtomicAdd(&acc[" in src


def test_cpu_reference():
    a = np.arange(1, 9, dtype=np.float32)
    np.testing.assert_array_equal(tilelang.compile(scalar_sum(), out_idx=-1, target="cpu")(a), [36.0])
    x, y = (np.random.default_rng(s).standard_normal((4, 256)).astype(np.float32) for s in (1, 2))
    np.testing.assert_allclose(tilelang.compile(outer_product(), out_idx=-1, target="cpu")(x, y), x @ y.T,
                               rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
def test_reducers_on_the_gpu():
    torch = pytest.importorskip("torch")
    a = torch.arange(1, 9, dtype=torch.float32, device="cuda")
    torch.testing.assert_close(tilelang.compile(scalar_sum(), out_idx=-1, target="cuda")(a),
                               torch.tensor([36.0], device="cuda"), rtol=0, atol=0)
    x, y = torch.randn(4, 256, device="cuda"), torch.randn(4, 256, device="cuda")
    torch.testing.assert_close(tilelang.compile(outer_product(), out_idx=-1, target="cuda")(x, y), x @ y.T,
                               rtol=1e-4, atol=1e-4)
