"""Barrier planning (plan/sync.py): what gets a __syncthreads and what does not."""
import numpy as np

import tilelang
import tilelang.language as T
from tests.backend.cuda.helpers import build


def per_thread_copy(N=128, M=128):
    @T.prim_func
    def k(A: T.Tensor((N, M), "float32"), B: T.Tensor((N, M), "float32")):
        with T.Kernel(M // 128, threads=128) as bx:
            tx = T.get_thread_binding(0)
            for row in T.serial(N):
                B[row, bx * 128 + tx] = A[row, bx * 128 + tx]
    return k


def per_thread_write_then_tile_read(N=128):
    @T.prim_func
    def k(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=N):
            tx = T.get_thread_binding(0)
            s = T.alloc_shared((N,), "float32")
            B[tx] = A[tx] * 2.0
            T.copy(B, s)          # every thread reads elements other threads wrote
            for i in T.Parallel(N):
                A[i] = s[N - 1 - i]
    return k


def test_per_thread_code_on_global_memory_gets_no_barrier():
    src = build(per_thread_copy()).source
    assert "__syncthreads" not in src


def test_tile_op_after_per_thread_global_writes_keeps_its_barrier():
    src = build(per_thread_write_then_tile_read()).source
    assert src.count("__syncthreads()") >= 1


def test_both_run_on_the_cpu_reference():
    a = np.random.rand(128, 128).astype("float32")
    b = np.zeros_like(a)
    tilelang.compile(per_thread_copy(), target="cpu")(a, b)
    np.testing.assert_array_equal(a, b)
    a1 = np.arange(128, dtype="float32")
    b1 = np.zeros(128, "float32")
    tilelang.compile(per_thread_write_then_tile_read(), target="cpu")(a1, b1)
    np.testing.assert_array_equal(b1, np.arange(128) * 2.0)
    np.testing.assert_array_equal(a1, (np.arange(128) * 2.0)[::-1])
