"""Thread-block clusters and the grid barrier in the language (language/cluster.py):
`T.ClusterKernel` / `T.Kernel(cluster_dims=...)`, the cluster barrier, the block's
rank, cluster mbarriers, `T.copy_cluster`, `T.sync_grid`; what the CPU backend
runs (clusters of one block) and what it refuses, pointing at the user's line."""
import inspect

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.errors import TileLangError
from tilelang.ir.printer import Printer
from tilelang.language.kernel import normalize_cluster_dims


def _line_of(func, text):
    """The file line of the first source line of `func` that contains `text`."""
    lines, first = inspect.getsourcelines(func)
    return first + next(k for k, ln in enumerate(lines) if text in ln)


@pytest.mark.parametrize("given, expected", [
    (2, [2, 1, 1]), ((2,), [2, 1, 1]), ((2, 2), [2, 2, 1]), ([1, 4, 1], [1, 4, 1]), ((1, 1, 1), None), (1, None),
    (None, None)])
def test_cluster_dims_are_normalized_as_published(given, expected):
    assert normalize_cluster_dims(given) == expected


@pytest.mark.parametrize("bad", [0, (2, 0, 1), (1, 1, 1, 1), "2", (2.0, 1, 1), True])
def test_bad_cluster_dims_are_refused(bad):
    with pytest.raises(TileLangError, match="cluster_dims"):
        normalize_cluster_dims(bad)


def _rank_kernel(cluster=(4, 1, 1), grid=(128,), kernel=T.ClusterKernel):
    @T.prim_func
    def main(A: T.Tensor((128,), T.int32)):
        with kernel(*grid, threads=128, cluster_dims=cluster) as bx:
            T.cluster_arrive()
            T.cluster_wait()
            rank = T.block_rank_in_cluster()
            if T.get_thread_binding() == 0:
                A[bx] = rank
            T.cluster_arrive_relaxed()
            T.cluster_wait()
            T.cluster_sync()
    return main


def test_cluster_kernel_and_kernel_with_cluster_dims_print_the_same():
    a = Printer().func(_rank_kernel(kernel=T.ClusterKernel))
    b = Printer().func(_rank_kernel(kernel=T.Kernel))
    assert a == b
    assert "cluster_dims=[4, 1, 1]" in a


def test_cluster_calls_run_on_the_cpu_with_clusters_of_one_block():
    k = tilelang.compile(_rank_kernel(cluster=1), out_idx=-1, target="cpu")
    out = k()
    np.testing.assert_array_equal(np.asarray(out), np.zeros(128, dtype=np.int32))


def test_the_cpu_refuses_clusters_of_several_blocks_at_the_users_line():
    func = _rank_kernel(cluster=(4, 1, 1))
    with pytest.raises(TileLangError, match=r"thread-block clusters \(cluster_dims=\(4, 1, 1\)\)") as e:
        tilelang.compile(func, out_idx=-1, target="cpu")
    assert e.value.span is not None and e.value.span.file == __file__
    assert e.value.span.line == _line_of(_rank_kernel, "with kernel(")


def _exchange_cpu(N=64, barrier=False, sliced=False):
    """copy_cluster into the block's own rank (the only cluster the CPU runs)."""
    @T.prim_func
    def k(A: T.Tensor((2 * N,), "float32"), B: T.Tensor((2 * N,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            s_src = T.alloc_shared((N,), "float32")
            s_dst = T.alloc_shared((N,), "float32")
            bar = T.alloc_cluster_barrier([1])
            T.fill(s_dst, 0.0)
            T.cluster_sync()
            for i in T.Parallel(N):
                s_src[i] = A[bx * N + i]
            if sliced:
                T.copy_cluster(s_src[0:N // 2], s_dst[N // 2:N], dst_block=0,
                               remote_barrier=bar[0] if barrier else None)
                T.copy_cluster(s_src[N // 2:N], s_dst[0:N // 2], dst_block=0,
                               remote_barrier=bar[0] if barrier else None)
            else:
                T.copy_cluster(s_src, s_dst, dst_block=T.block_rank_in_cluster(),
                               remote_barrier=bar[0] if barrier else None)
            if barrier:
                T.mbarrier_wait_parity(bar[0], 0)
            T.cluster_sync()
            for i in T.Parallel(N):
                B[bx * N + i] = s_dst[i] * 2.0
    return k


@pytest.mark.parametrize("barrier", [False, True])
@pytest.mark.parametrize("sliced", [False, True])
def test_copy_cluster_to_the_blocks_own_rank_on_the_cpu(barrier, sliced):
    N = 64
    k = tilelang.compile(_exchange_cpu(N, barrier, sliced), out_idx=[1], target="cpu")
    a = np.arange(2 * N, dtype=np.float32)
    out = np.asarray(k(a))
    want = a.reshape(2, N)
    if sliced:
        want = np.concatenate([want[:, N // 2:], want[:, :N // 2]], axis=1)
    np.testing.assert_array_equal(out, want.reshape(-1) * 2)


def _sync_grid_kernel(blocks):
    @T.prim_func
    def k(A: T.Tensor((blocks * 64,), "float32"), B: T.Tensor((blocks * 64,), "float32")):
        with T.Kernel(blocks, threads=64) as bx:
            for i in T.Parallel(64):
                B[bx * 64 + i] = A[bx * 64 + i] + 1.0
            T.sync_grid()
            for i in T.Parallel(64):
                A[bx * 64 + i] = B[(blocks - 1 - bx) * 64 + i]
    return k


def test_sync_grid_on_the_cpu_is_refused_at_its_line():
    with pytest.raises(TileLangError, match=r"T\.sync_grid\(\) waits for every block") as e:
        tilelang.compile(_sync_grid_kernel(4), target="cpu")
    assert e.value.span is not None and e.value.span.file == __file__
    assert e.value.span.line == _line_of(_sync_grid_kernel, "T.sync_grid()")


def test_sync_grid_with_one_block_runs_on_the_cpu():
    k = tilelang.compile(_sync_grid_kernel(1), target="cpu")
    a = np.arange(64, dtype=np.float32)
    b = np.zeros(64, dtype=np.float32)
    k(a, b)
    np.testing.assert_array_equal(a, np.arange(64, dtype=np.float32) + 1)


def test_remote_arrive_needs_a_cluster_barrier():
    with pytest.raises(TileLangError, match="T.alloc_cluster_barrier"):
        @T.prim_func
        def k(A: T.Tensor((4,), "int32")):
            with T.Kernel(2, threads=32, cluster_dims=2):
                bar = T.alloc_barrier([1])
                T.mbarrier_arrive(bar, cta_id=1)


def test_mbarrier_arrive_without_cta_id_is_the_local_arrive():
    @T.prim_func
    def k(A: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=32):
            bar = T.alloc_barrier([32])
            T.mbarrier_arrive(bar)
            T.mbarrier_wait_parity(bar, 0)
    text = Printer().func(k)
    assert "'tl.mbarrier_arrive', bar[0]" in text and "cluster" not in text
    assert "bar = T.alloc_barrier([32])" in text


def test_printed_ir_tells_cluster_barriers_apart():
    # the printed form is the structural hash: the wait on a cluster barrier differs
    @T.prim_func
    def k(A: T.Tensor((4,), "int32")):
        with T.Kernel(2, threads=32, cluster_dims=2):
            bar = T.alloc_cluster_barrier([1, 2])
            T.cluster_sync()
            T.mbarrier_arrive(bar[1], cta_id=1)
            T.ptx_arrive_cluster_barrier(bar[0], 0)
            T.mbarrier_wait_parity(bar[1], 0)
    text = Printer().func(k)
    assert "bar = T.alloc_cluster_barrier([1, 2])" in text
    assert text.count("tl.mbarrier_arrive_cluster") == 2


@pytest.mark.parametrize("kwargs, msg", [
    ({}, "needs dst_block"),
    ({"dst_block": 1, "cluster_mask": 3}, "multicast"),
])
def test_copy_cluster_argument_errors(kwargs, msg):
    with pytest.raises(TileLangError, match=msg):
        @T.prim_func
        def k(A: T.Tensor((4,), "int32")):
            with T.Kernel(2, threads=32, cluster_dims=2):
                s = T.alloc_shared((32,), "float32")
                d = T.alloc_shared((32,), "float32")
                T.copy_cluster(s, d, **kwargs)


def test_copy_cluster_needs_shared_buffers_of_one_shape():
    with pytest.raises(TileLangError, match="shared buffer"):
        @T.prim_func
        def k(A: T.Tensor((32,), "float32")):
            with T.Kernel(2, threads=32, cluster_dims=2):
                d = T.alloc_shared((32,), "float32")
                T.copy_cluster(A, d, dst_block=1)
    with pytest.raises(TileLangError, match="extents"):
        @T.prim_func
        def k2(A: T.Tensor((32,), "float32")):
            with T.Kernel(2, threads=32, cluster_dims=2):
                s = T.alloc_shared((32,), "float32")
                d = T.alloc_shared((16,), "float32")
                T.copy_cluster(s, d, dst_block=1)
