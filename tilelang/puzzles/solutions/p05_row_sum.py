"""Reference solution of puzzle 5 (row sums)."""
import tilelang.language as T


def row_sum(M, N, block_M=8, block_N=32, dtype="float32"):
    @T.prim_func
    def kernel(A: T.Tensor((M, N), dtype), S: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            tile = T.alloc_fragment((block_M, block_N), dtype)
            part = T.alloc_fragment((block_M,), dtype)
            total = T.alloc_fragment((block_M,), dtype)
            T.clear(total)
            for k in T.serial(T.ceildiv(N, block_N)):
                T.copy(A[bx * block_M, k * block_N], tile)   # zeros past N: they add nothing
                T.reduce_sum(tile, part, dim=1)
                for i in T.Parallel(block_M):
                    total[i] += part[i]
            T.copy(total, S[bx * block_M])
    return kernel
