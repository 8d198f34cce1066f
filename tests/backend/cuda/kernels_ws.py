"""Hand-written warp-specialized kernels (branches on the thread index + mbarriers),
shared by the compile-only and the GPU tests."""
import tilelang.language as T


def ws_gemm(M, N, K, bm=128, bn=128, bk=64, dtype="float16"):
    """C = relu(A @ B) and R = row max of each C tile: threads 0..255 compute (two-slot
    ring of shared tiles), threads 256..383 load the tiles and hand them over on mbarriers."""
    assert K % (2 * bk) == 0

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype),
             R: T.Tensor((M, T.ceildiv(N, bn)), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=384) as (bx, by):
            A0 = T.alloc_shared((bm, bk), dtype)
            B0 = T.alloc_shared((bk, bn), dtype)
            A1 = T.alloc_shared((bm, bk), dtype)
            B1 = T.alloc_shared((bk, bn), dtype)
            acc = T.alloc_fragment((bm, bn), "float32")
            rmax = T.alloc_fragment((bm,), "float32")
            full = T.alloc_barrier([128, 128])
            empty = T.alloc_barrier([256, 256])
            tx = T.get_thread_binding()
            if tx < 256:
                T.set_max_nreg(232, 1)
                T.clear(acc)
                for ko in T.serial(K // bk // 2):
                    T.barrier_wait(full[0], ko & 1)
                    T.gemm(A0, B0, acc)
                    T.barrier_arrive(empty[0])
                    T.barrier_wait(full[1], ko & 1)
                    T.gemm(A1, B1, acc)
                    T.barrier_arrive(empty[1])
                for i, j in T.Parallel(bm, bn):
                    acc[i, j] = T.max(acc[i, j], 0)
                T.reduce_max(acc, rmax, dim=1)
                T.copy(acc, C[by * bm, bx * bn])
                for i in T.Parallel(bm):
                    R[by * bm + i, bx] = rmax[i]
            else:
                T.set_max_nreg(40, 0)
                for ko in T.serial(K // bk // 2):
                    T.barrier_wait(empty[0], (ko & 1) ^ 1)
                    T.copy(A[by * bm, (2 * ko) * bk], A0)
                    T.copy(B[(2 * ko) * bk, bx * bn], B0)
                    T.barrier_arrive(full[0])
                    T.barrier_wait(empty[1], (ko & 1) ^ 1)
                    T.copy(A[by * bm, (2 * ko + 1) * bk], A1)
                    T.copy(B[(2 * ko + 1) * bk, bx * bn], B1)
                    T.barrier_arrive(full[1])
    return main


def ws_cp_async_sum(N, rows=64, cols=128):
    """Row sums of X: one warp fetches each tile with T.ptx_cp_async and
    T.cp_async_barrier_noinc, four warps sum it; an mbarrier pair per direction."""

    @T.prim_func
    def main(X: T.Tensor((N, cols), "float32"), S: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=160):
            tile = T.alloc_shared((rows, cols), "float32")
            part = T.alloc_shared((rows,), "float32")
            total = T.alloc_shared((rows,), "float32")
            ready = T.alloc_barrier(32)
            free = T.alloc_barrier(128)
            tx = T.get_thread_binding()
            if tx < 128:
                T.clear(total)
                for t in T.serial(N // rows):
                    T.barrier_wait(ready, t & 1)
                    T.reduce_sum(tile, part, dim=1)
                    for i in T.Parallel(rows):
                        total[i] += part[i]
                    T.barrier_arrive(free)
                    T.copy(total, S[t * rows])
                    T.clear(total)
            else:
                for t in T.serial(N // rows):
                    T.barrier_wait(free, (t & 1) ^ 1)
                    for r in T.serial(rows):
                        T.ptx_cp_async(T.access_ptr(tile[r, (tx - 128) * 4], "w"),
                                       T.access_ptr(X[t * rows + r, (tx - 128) * 4], "r"), 4)
                    T.cp_async_barrier_noinc(ready)
    return main


def ws_gemm_tma(M, N, K, bm=128, bn=256, bk=64, stages=4, dtype="float16"):
    """C = A @ B with a TMA producer: threads 256..383 (one elected thread) fill a ring of
    `stages` shared slots with T.tma_copy(..., barrier=full[s]); threads 0..255 run the
    wgmma on each slot and release it on empty[s]."""
    assert K % bk == 0

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=384) as (bx, by):
            A_s = [T.alloc_shared((bm, bk), dtype) for _ in range(stages)]
            B_s = [T.alloc_shared((bk, bn), dtype) for _ in range(stages)]
            acc = T.alloc_fragment((bm, bn), "float32")
            full = T.alloc_barrier([128] * stages)
            empty = T.alloc_barrier([256] * stages)
            tx = T.get_thread_binding()
            nk = K // bk
            if tx < 256:
                T.set_max_nreg(240, 1)
                T.clear(acc)
                for ko in T.serial(T.ceildiv(nk, stages)):
                    for s in list(range(stages)):   # unrolled while tracing: slot s is a Python int
                        if ko * stages + s < nk:
                            T.barrier_wait(full[s], ko & 1)
                            T.gemm(A_s[s], B_s[s], acc)
                            T.barrier_arrive(empty[s])
                T.copy(acc, C[by * bm, bx * bn])
            else:
                T.set_max_nreg(24, 0)
                for ko in T.serial(T.ceildiv(nk, stages)):
                    for s in list(range(stages)):   # unrolled while tracing: slot s is a Python int
                        if ko * stages + s < nk:
                            T.barrier_wait(empty[s], (ko & 1) ^ 1)
                            T.tma_copy(A[by * bm, (ko * stages + s) * bk], A_s[s], barrier=full[s])
                            T.tma_copy(B[(ko * stages + s) * bk, bx * bn], B_s[s], barrier=full[s])
                            T.barrier_arrive(full[s])
    return main


def ws_tma_copy_gather(L, nb, bn=64, d=64, counts=(128, 128)):
    """Out[b] = 2 * X[offsets[b] : offsets[b] + bn] (rows past L read 0), b < nb: threads
    128..255 copy each block into a two-slot [2, bn, d] ring with T.tma_copy(...,
    barrier=full[b % 2]) and arrive on it, threads 0..127 read the slot and release it on
    empty[b % 2] (the published vertical-slash sparse attention's producer; no wgmma
    reads the ring). `counts`: the arrivals each full barrier expects."""

    @T.prim_func
    def main(X: T.Tensor((L, d), "float16"), Offsets: T.Tensor((nb,), "int32"),
             Out: T.Tensor((nb, bn, d), "float16")):
        with T.Kernel(1, threads=256):
            ring = T.alloc_shared((2, bn, d), "float16")
            offsets = T.alloc_shared((nb,), "int32")
            full = T.alloc_barrier(list(counts))
            empty = T.alloc_barrier([128, 128])
            for i in T.Parallel(nb):
                offsets[i] = Offsets[i]
            tx = T.get_thread_binding()
            if tx >= 128:
                for b in T.serial(nb):
                    k = offsets[b]
                    T.mbarrier_wait_parity(empty[b % 2], ((b & 3) >> 1) ^ 1)
                    T.tma_copy(X[k:k + bn, :], ring[b % 2, :, :], barrier=full[b % 2])
                    T.mbarrier_arrive(full[b % 2])
            else:
                for b in T.serial(nb):
                    T.mbarrier_wait_parity(full[b % 2], (b & 3) >> 1)
                    for i, j in T.Parallel(bn, d):
                        Out[b, i, j] = ring[b % 2, i, j] * T.float16(2)
                    T.mbarrier_arrive(empty[b % 2])
    return main
