"""Reference solution of puzzle 6 (row softmax)."""
import tilelang.language as T


def softmax(M, N, block_M=8, block_N=32, dtype="float32"):
    @T.prim_func
    def kernel(A: T.Tensor((M, N), dtype), P: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            tile = T.alloc_fragment((block_M, block_N), dtype)
            run_max = T.alloc_fragment((block_M,), dtype)
            new_max = T.alloc_fragment((block_M,), dtype)
            run_sum = T.alloc_fragment((block_M,), dtype)
            part = T.alloc_fragment((block_M,), dtype)
            T.fill(run_max, -T.infinity(dtype))
            T.clear(run_sum)
            # pass 1: the running maximum and the sum of exponentials, rescaled whenever the
            # maximum grows (online softmax)
            for k in T.serial(T.ceildiv(N, block_N)):
                T.copy(A[bx * block_M, k * block_N], tile)
                for i, j in T.Parallel(block_M, block_N):
                    tile[i, j] = T.if_then_else(k * block_N + j < N, tile[i, j], -T.infinity(dtype))
                T.reduce_max(tile, new_max, dim=1)
                for i in T.Parallel(block_M):
                    new_max[i] = T.max(new_max[i], run_max[i])
                for i, j in T.Parallel(block_M, block_N):
                    tile[i, j] = T.exp(tile[i, j] - new_max[i])
                T.reduce_sum(tile, part, dim=1)
                for i in T.Parallel(block_M):
                    run_sum[i] = run_sum[i] * T.exp(run_max[i] - new_max[i]) + part[i]
                    run_max[i] = new_max[i]
            # pass 2: normalise
            for k in T.serial(T.ceildiv(N, block_N)):
                T.copy(A[bx * block_M, k * block_N], tile)
                for i, j in T.Parallel(block_M, block_N):
                    tile[i, j] = T.exp(tile[i, j] - run_max[i]) / run_sum[i]
                T.copy(tile, P[bx * block_M, k * block_N])
    return kernel
