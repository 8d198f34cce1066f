"""Reference solution of puzzle 8 (GEMM)."""
import tilelang.language as T


def gemm(M, N, K, block_M=32, block_N=32, block_K=32, dtype="float16", accum_dtype="float32"):
    @T.prim_func
    def kernel(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), accum_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            a = T.alloc_shared((block_M, block_K), dtype)
            b = T.alloc_shared((block_K, block_N), dtype)
            c = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(c)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                # past K both tiles read zeros, which add nothing to the products
                T.copy(A[by * block_M, k * block_K], a)
                T.copy(B[k * block_K, bx * block_N], b)
                T.gemm(a, b, c)
            T.copy(c, C[by * block_M, bx * block_N])
    return kernel
