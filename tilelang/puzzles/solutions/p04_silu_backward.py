"""Reference solution of puzzle 4 (the backward pass of SiLU)."""
import tilelang.language as T


def silu_backward(M, N, block_M=16, block_N=32, dtype="float32"):
    @T.prim_func
    def kernel(X: T.Tensor((M, N), dtype), dY: T.Tensor((M, N), dtype), dX: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            x = T.alloc_fragment((block_M, block_N), dtype)
            g = T.alloc_fragment((block_M, block_N), dtype)
            T.copy(X[by * block_M, bx * block_N], x)
            T.copy(dY[by * block_M, bx * block_N], g)
            for i, j in T.Parallel(block_M, block_N):
                s = 1.0 / (1.0 + T.exp(-x[i, j]))
                g[i, j] = g[i, j] * s * (1.0 + x[i, j] * (1.0 - s))
            T.copy(g, dX[by * block_M, bx * block_N])
    return kernel
