"""Reference solution of puzzle 3 (outer add)."""
import tilelang.language as T


def outer_add(M, N, block_M=16, block_N=32, dtype="float32"):
    @T.prim_func
    def kernel(A: T.Tensor((M,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            a = T.alloc_fragment((block_M,), dtype)
            b = T.alloc_fragment((block_N,), dtype)
            c = T.alloc_fragment((block_M, block_N), dtype)
            T.copy(A[by * block_M], a)
            T.copy(B[bx * block_N], b)
            for i, j in T.Parallel(block_M, block_N):
                c[i, j] = a[i] + b[j]
            T.copy(c, C[by * block_M, bx * block_N])
    return kernel
