"""Kernels that index threads explicitly run on the CPU as one loop over the threads when
their threads cannot see each other's work (backend/cpu/thread_loops.py); kernels whose
threads do are tested in test_thread_phases.py."""
import numpy as np

import tilelang
import tilelang.language as T


def test_per_thread_kernel_with_2d_threads_and_local_arrays():
    @T.prim_func
    def f(A: T.Tensor((4, 8, 16), "float32"), B: T.Tensor((4, 8, 16), "float32"), C: T.Tensor((4, 8), "int32")):
        with T.Kernel(4, threads=(8, 2)) as bz:
            tm = T.get_thread_binding(0)
            tn = T.get_thread_binding(1)
            L = T.alloc_local((8,), "float32")
            n = T.alloc_var("int32", init=0)
            T.copy(A[bz, tm, tn * 8:(tn + 1) * 8], L)
            for i in T.serial(8):
                if L[i] > 0:
                    n = n + 1
                L[i] = L[i] * 2 + tn
            T.copy(L, B[bz, tm, tn * 8:(tn + 1) * 8])
            T.atomic_add(C[bz, tm], n)
    k = tilelang.compile(f, target="cpu")
    a = np.random.default_rng(0).standard_normal((4, 8, 16)).astype(np.float32)
    b = np.zeros_like(a)
    c = np.zeros((4, 8), np.int32)
    k(a, b, c)
    np.testing.assert_allclose(b, a * 2 + np.repeat([0.0, 1.0], 8)[None, None, :], rtol=1e-6)
    np.testing.assert_array_equal(c, (a > 0).sum(-1))
