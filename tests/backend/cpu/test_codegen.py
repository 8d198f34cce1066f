import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.errors import LoweringError
from tests.kernels import gemm_func


def test_blocks_run_in_parallel_and_atomics_are_exact():
    # 4096 blocks each add 1 to one counter: any lost update shows
    @T.prim_func
    def count(C: T.Tensor((1,), "int32")):
        with T.Kernel(64, 64) as (bx, by):
            T.atomic_add(C[0], 1)
    k = tilelang.compile(count, target="cpu")
    c = np.zeros(1, np.int32)
    k(c)
    assert c[0] == 64 * 64
    assert "#pragma omp for collapse(3)" in k.get_kernel_source()


def test_float16_atomic_add():
    @T.prim_func
    def count(C: T.Tensor((4,), "float16")):
        with T.Kernel(100) as bx:
            for i in T.Parallel(4):
                T.atomic_add(C[i], 0.5)
    k = tilelang.compile(count, target="cpu")
    c = np.zeros(4, np.float16)
    k(c)
    np.testing.assert_array_equal(c, np.full(4, 50.0, np.float16))


def test_explicit_thread_indexing_is_rejected_with_a_span():
    # (threads that do not communicate run one after another: tests/backend/cpu/test_thread_loops.py;
    # threads that meet at block barriers run in phases: test_thread_phases.py)
    @T.prim_func
    def f(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            A[tx] = 1.0
            T.sync_threads(1, 64)   # a named barrier for part of the block
            A[tx] = A[127 - tx] + 1.0
    with pytest.raises(LoweringError, match="named barrier") as e:
        tilelang.compile(f, target="cpu")
    assert e.value.span is not None and e.value.span.line > 0


def test_gemm_large_tile_heap_allocated():
    k = tilelang.compile(gemm_func(M=256, N=256, K=64, bm=256, bn=256, bk=64, dtype="float32"), out_idx=[-1],
                         target="cpu")
    a = np.random.rand(256, 64).astype(np.float32)
    b = np.random.rand(64, 256).astype(np.float32)
    from tests.tf32 import tf32   # a float32 gemm is a TF32 gemm
    np.testing.assert_allclose(k(a, b), tf32(a).astype(np.float64) @ tf32(b), rtol=1e-4)
