"""T.Kernel: 1, 2 and 3 grid dimensions, `threads` as int and list, block indices in indexing."""
import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T


def _grid1(N, block, threads):
    @T.prim_func
    def k(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=threads) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * 2.0 + bx
    return k


@pytest.mark.parametrize("threads", [32, 128, [64], [32, 2], [16, 2, 2]])
@pytest.mark.parametrize("N,block", [(256, 64), (96, 32)])
def test_grid_1d(N, block, threads):
    kern = tilelang.compile(_grid1(N, block, threads), out_idx=[1], target="cpu")
    a = np.random.randn(N).astype(np.float32)
    b = kern(a)
    assert isinstance(b, np.ndarray)
    ref = a * 2 + (np.arange(N) // block)
    np.testing.assert_allclose(b, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("M,N,bm,bn", [(64, 128, 16, 32), (32, 32, 32, 8)])
@pytest.mark.parametrize("threads", [128, [32, 4]])
def test_grid_2d(M, N, bm, bn, threads):
    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), Bx: T.Tensor((M, N), "int32"), By: T.Tensor((M, N), "int32"),
          C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                Bx[by * bm + i, bx * bn + j] = bx
                By[by * bm + i, bx * bn + j] = by
                C[by * bm + i, bx * bn + j] = A[by * bm + i, bx * bn + j] + 1.0
    kern = tilelang.compile(k, out_idx=[1, 2, 3], target="cpu")
    a = torch.randn(M, N)
    bx, by, c = kern(a)
    assert isinstance(c, torch.Tensor)
    ii, jj = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    np.testing.assert_array_equal(bx.numpy(), jj // bn)
    np.testing.assert_array_equal(by.numpy(), ii // bm)
    torch.testing.assert_close(c, a + 1)


@pytest.mark.parametrize("threads", [64, [8, 4, 2]])
def test_grid_3d(threads):
    Bt, M, N = 3, 8, 16

    @T.prim_func
    def k(A: T.Tensor((Bt, M, N), "float32"), C: T.Tensor((Bt, M, N), "float32")):
        with T.Kernel(N // 8, M // 4, Bt, threads=threads) as (bx, by, bz):
            for i, j in T.Parallel(4, 8):
                C[bz, by * 4 + i, bx * 8 + j] = A[bz, by * 4 + i, bx * 8 + j] * 10.0 + bz * 100 + by * 7 + bx
    kern = tilelang.compile(k, out_idx=[-1], target="cpu")
    a = np.random.rand(Bt, M, N).astype(np.float32)
    c = kern(a)
    z, y, x = np.meshgrid(np.arange(Bt), np.arange(M) // 4, np.arange(N) // 8, indexing="ij")
    np.testing.assert_allclose(c, a * 10 + z * 100 + y * 7 + x, rtol=1e-5, atol=1e-5)


def test_single_block_var_name_binding():
    # a 1-grid kernel binds a single variable (not a tuple)
    @T.prim_func
    def k(A: T.Tensor((4, 8), "float32"), C: T.Tensor((4,), "float32")):
        with T.Kernel(4, threads=32) as row:
            s = T.alloc_fragment((1,), "float32")
            a = T.alloc_fragment((8,), "float32")
            T.copy(A[row, 0:8], a)
            T.reduce_sum(a, s, dim=0)
            C[row] = s[0]
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.random.randn(4, 8).astype(np.float32)
    np.testing.assert_allclose(kern(a), a.sum(1), rtol=1e-5, atol=1e-5)


def test_thread_binding_on_cpu():
    # threads that cannot see each other's work run one after another on the CPU
    @T.prim_func
    def k(C: T.Tensor((2, 64), "int32")):
        with T.Kernel(2, threads=64) as bx:
            tx = T.get_thread_binding()
            C[bx, tx] = tx + bx * 1000
    c = tilelang.compile(k, out_idx=[0], target="cpu")()
    np.testing.assert_array_equal(c, np.arange(64)[None, :] + np.array([[0], [1000]]))

    # threads that share memory run in phases between barriers (backend/cpu/thread_phases.py)
    @T.prim_func
    def shared(C: T.Tensor((2, 64), "int32")):
        with T.Kernel(2, threads=64) as bx:
            tx = T.get_thread_binding()
            s = T.alloc_shared((64,), "int32")
            s[tx] = tx
            C[bx, tx] = s[63 - tx]
    c = tilelang.compile(shared, out_idx=[0], target="cpu")()
    np.testing.assert_array_equal(c, np.broadcast_to(np.arange(63, -1, -1), (2, 64)))


def test_launch_extent_queries():
    import numpy as np
    import tilelang
    import tilelang.language as T

    @T.prim_func
    def k(O: T.Tensor((4,), "int32")):
        with T.Kernel(3, 2, threads=(32, 4)) as (bx, by):
            if bx == 0 and by == 0:
                O[0] = T.get_block_extent(0) * 10 + T.get_block_extents()[1]
                O[1] = T.get_thread_extents()[0] + T.get_thread_extents()[1]
    kern = tilelang.compile(k, target="cpu")
    o = np.zeros(4, np.int32)
    kern(o)
    assert o[0] == 32 and o[1] == 36


def test_one_dimensional_grid_unpacks_as_a_one_tuple():
    # `with T.Kernel(n) as (bx,):` (the published tests' spelling) failed with
    # "cannot iterate over the scalar expression"
    import numpy as np

    @T.prim_func
    def k(A: T.Tensor((64,), "float32")):
        with T.Kernel(2, threads=32) as (bx,):
            for i in T.Parallel(32):
                A[bx * 32 + i] = A[bx * 32 + i] + bx
    a = np.zeros(64, np.float32)
    tilelang.compile(k, target="cpu")(a)
    np.testing.assert_array_equal(a, np.repeat([0.0, 1.0], 32))


@pytest.mark.parametrize("threads", [-1, 0, [-1], [128, 0], (128, 1, -2)])
def test_non_positive_thread_extents_are_rejected(threads):
    from tilelang.language.kernel import _normalize_threads
    with pytest.raises(ValueError, match="threads must be positive"):
        _normalize_threads(threads)
    assert _normalize_threads([32, 4]) == [32, 4, 1] and _normalize_threads(None) == [128, 1, 1]
