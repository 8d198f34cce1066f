"""Reference solution of puzzle 10 (GEMM with 4-bit weights)."""
import tilelang.language as T


def dequant_gemm(M, N, K=80, block_M=32, block_N=32, block_K=32, dtype="float16", accum_dtype="float32"):
    @T.prim_func
    def kernel(A: T.Tensor((M, K), dtype), Wq: T.Tensor((N, K // 2), "uint8"), Scale: T.Tensor((N,), dtype),
               C: T.Tensor((M, N), accum_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            a = T.alloc_shared((block_M, block_K), dtype)
            packed = T.alloc_shared((block_N, block_K // 2), "uint8")
            w = T.alloc_shared((block_N, block_K), dtype)
            scale = T.alloc_shared((block_N,), dtype)
            c = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.copy(Scale[bx * block_N], scale)
            T.clear(c)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], a)
                T.copy(Wq[bx * block_N, k * (block_K // 2)], packed)
                for i, j in T.Parallel(block_N, block_K):
                    # even k in the low nibble, odd k in the high one; stored with an offset of 8
                    nibble = (packed[i, j // 2] >> ((j % 2) * 4)) & 15
                    w[i, j] = T.cast(T.cast(nibble, "int32") - 8, dtype) * scale[i]
                T.gemm(a, w, c, transpose_B=True)
            T.copy(c, C[by * block_M, bx * block_N])
    return kernel
