"""Kernels with thread-block clusters, a grid barrier and programmatic dependent
launch: compiled for sm_90a here (test_cluster_launch.py) and run on the GPU
(test_run_gpu_clusters.py)."""
import tilelang.language as T


def cluster_rank(grid=(128, 1), cluster=(4, 1, 1), published_form=True):
    """Out[by, bx] = the block's rank in its cluster (the published test, in 2-D)."""
    gx, gy = grid
    kernel = T.ClusterKernel if published_form else T.Kernel

    @T.prim_func
    def main(Out: T.Tensor((gy, gx), T.int32)):
        with kernel(gx, gy, threads=128, cluster_dims=cluster) as (bx, by):
            T.cluster_arrive()
            T.cluster_wait()
            rank = T.block_rank_in_cluster()
            if T.get_thread_binding() == 0:
                Out[by, bx] = rank
            T.cluster_sync()
    return main


def cluster_rank_dynamic(cluster=(2, 1, 1)):
    """The grid depends on a dynamic size: the divisibility check happens at launch."""
    n = T.dynamic("n")

    @T.prim_func
    def main(Out: T.Tensor((n,), T.int32)):
        with T.Kernel(n, threads=32, cluster_dims=cluster) as bx:
            T.cluster_sync()
            if T.get_thread_binding() == 0:
                Out[bx] = T.block_rank_in_cluster()
    return main


def remote_arrive(cluster=4, blocks=128):
    """Every thread of every block of a cluster arrives once on rank 0's barrier
    (one phase of cluster x 128 arrivals); rank 0 waits for it, then each block
    writes its rank + 1. (A parity wait only tells phases apart one at a time, so
    the arrivals fill exactly one phase.)"""
    @T.prim_func
    def main(Out: T.Tensor((blocks,), T.int32)):
        with T.ClusterKernel(blocks, threads=128, cluster_dims=(cluster, 1, 1)) as bx:
            mbar = T.alloc_cluster_barrier([cluster * 128])
            T.cluster_sync()
            T.mbarrier_arrive(mbar, 0)
            if T.block_rank_in_cluster() == 0:
                T.mbarrier_wait_parity(mbar, 0)
            if T.get_thread_binding() == 0:
                Out[bx] = T.block_rank_in_cluster() + 1
            T.cluster_sync()
    return main


def dsmem_swap(N=256, mode="bulk", clusters=4):
    """Pairs of blocks (clusters of 2) swap an N-float tile through distributed shared
    memory: block r sends its tile to block r ^ 1. Out[b] = 2 * A[partner of b].

    mode "bulk": T.copy_cluster with a remote barrier (cp.async.bulk into the
    partner, completing on its barrier); "simt": element stores into the partner,
    ordered by T.cluster_sync; "simt_barrier": a slice that is not contiguous,
    element stores then one arrival on the partner's barrier; "arrive": element
    stores then T.mbarrier_arrive(bar, cta_id=partner) from every thread."""
    blocks = 2 * clusters
    rows, cols, full = (N // 32, 32, 64) if mode == "simt_barrier" else (1, N, N)

    @T.prim_func
    def main(A: T.Tensor((blocks, rows, cols), "float32"), Out: T.Tensor((blocks, rows, cols), "float32")):
        with T.Kernel(blocks, threads=128, cluster_dims=(2, 1, 1)) as bx:
            s_src = T.alloc_shared((rows, full), "float32")
            s_dst = T.alloc_shared((rows, full), "float32")
            bar = T.alloc_cluster_barrier([128 if mode == "arrive" else 1])
            T.fill(s_dst, -1.0)
            T.cluster_sync()   # every block's barrier is initialised before anyone arrives
            peer = T.block_rank_in_cluster() ^ 1
            for i, j in T.Parallel(rows, cols):
                s_src[i, j] = A[bx, i, j]
            if mode == "bulk":
                T.copy_cluster(s_src, s_dst, dst_block=peer, remote_barrier=bar[0])
                T.mbarrier_wait_parity(bar[0], 0)
            elif mode == "simt":
                T.copy_cluster(s_src, s_dst, dst_block=peer)
                T.cluster_sync()
            elif mode == "simt_barrier":
                T.copy_cluster(s_src[0:rows, 0:cols], s_dst[0:rows, 0:cols], dst_block=peer, remote_barrier=bar[0])
                T.mbarrier_wait_parity(bar[0], 0)
            else:
                T.copy_cluster(s_src, s_dst, dst_block=peer)
                T.mbarrier_arrive(bar[0], cta_id=peer)
                T.mbarrier_wait_parity(bar[0], 0)
            for i, j in T.Parallel(rows, cols):
                Out[bx, i, j] = s_dst[i, j] * 2.0
            T.cluster_sync()   # no block leaves while its partner may still reach its shared memory
    return main


def grid_two_phase(blocks=64, width=256):
    """Phase 1: each block writes B[b] = A[b] + 1; grid barrier; phase 2: each block
    reads the tile of the block at the mirror position (written by another block)."""
    @T.prim_func
    def main(A: T.Tensor((blocks, width), "float32"), B: T.Tensor((blocks, width), "float32"),
             C: T.Tensor((blocks, width), "float32")):
        with T.Kernel(blocks, threads=128) as bx:
            for i in T.Parallel(width):
                B[bx, i] = A[bx, i] + 1.0
            T.sync_grid()
            for i in T.Parallel(width):
                C[bx, i] = B[blocks - 1 - bx, i] * 3.0
    return main


def grid_sync_published(N=1024):
    """The published test: T.sync_grid inside a T.Parallel loop (64 iterations over 128
    threads). Every element ends as N - 1."""
    block = 64

    @T.prim_func
    def kernel(A: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            A_local = T.alloc_fragment((block,), dtype=T.float32)
            n_idx = bx * block
            for i in T.Parallel(block):
                A[n_idx + i] = n_idx + i
            T.sync_grid()
            for i in T.Parallel(block):
                A_local[i] = A[N - n_idx - i - 1]
                T.sync_grid()
                A[n_idx + i] = A[n_idx + i] + A_local[i]
    return kernel


def grid_sync_dynamic():
    """A grid that depends on a dynamic size (the occupancy check happens at launch)."""
    n = T.dynamic("n")

    @T.prim_func
    def main(A: T.Tensor((n, 128), "float32"), B: T.Tensor((n, 128), "float32")):
        with T.Kernel(n, threads=128) as bx:
            for i in T.Parallel(128):
                B[bx, i] = A[bx, i] * 2.0
            T.sync_grid()
            for i in T.Parallel(128):
                A[bx, i] = B[n - 1 - bx, i]
    return main


def pdl_pair(blocks=128, width=1024, spin=200):
    """Two kernels in one function: the first computes B = 2 * A slowly (`spin`
    passes over B in global memory), then triggers its dependents; the second does
    independent work (D = A - 1), waits (T.pdl_sync), then reads B: C = B + 1. With
    small integer inputs every value is exact."""
    @T.prim_func
    def main(A: T.Tensor((blocks, width), "float32"), B: T.Tensor((blocks, width), "float32"),
             C: T.Tensor((blocks, width), "float32"), D: T.Tensor((blocks, width), "float32")):
        with T.Kernel(blocks, threads=256) as bx:
            for i in T.Parallel(width):
                B[bx, i] = A[bx, i] * 2.0 - spin
            for _ in T.serial(spin):
                for i in T.Parallel(width):
                    B[bx, i] = B[bx, i] + 1.0
            T.pdl_trigger()
        with T.Kernel(blocks, threads=256) as bx:
            for i in T.Parallel(width):
                D[bx, i] = A[bx, i] - 1.0
            T.pdl_sync()
            for i in T.Parallel(width):
                C[bx, i] = B[bx, i] + 1.0
    return main
