"""Reference solution of puzzle 2 (vector add)."""
import tilelang.language as T


def vector_add(N, block_N=64, dtype="float32"):
    @T.prim_func
    def kernel(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=64) as bx:
            a = T.alloc_fragment((block_N,), dtype)
            b = T.alloc_fragment((block_N,), dtype)
            T.copy(A[bx * block_N], a)
            T.copy(B[bx * block_N], b)
            for i in T.Parallel(block_N):
                a[i] = a[i] + b[i]
            T.copy(a, C[bx * block_N])
    return kernel
