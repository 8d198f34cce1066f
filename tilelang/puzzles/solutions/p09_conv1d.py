"""Reference solution of puzzle 9 (1-D convolution as a sum of GEMMs)."""
import tilelang.language as T


def conv1d(batch, L, C=32, F=64, KW=3, block_L=32, block_F=32, dtype="float16", accum_dtype="float32"):
    L_out = L - KW + 1

    @T.prim_func
    def kernel(X: T.Tensor((batch, L, C), dtype), W: T.Tensor((KW, C, F), dtype),
               O: T.Tensor((batch, L_out, F), accum_dtype)):
        with T.Kernel(T.ceildiv(F, block_F), T.ceildiv(L_out, block_L), batch, threads=128) as (bf, bl, b):
            x = T.alloc_shared((block_L, C), dtype)
            w = T.alloc_shared((C, block_F), dtype)
            o = T.alloc_fragment((block_L, block_F), accum_dtype)
            T.clear(o)
            for t in T.serial(KW):
                # tap t: the input rows shifted by t times the filter slice W[t]
                T.copy(X[b, bl * block_L + t:bl * block_L + t + block_L, 0:C], x)
                T.copy(W[t, 0:C, bf * block_F:bf * block_F + block_F], w)
                T.gemm(x, w, o)
            T.copy(o, O[b, bl * block_L:bl * block_L + block_L, bf * block_F:bf * block_F + block_F])
    return kernel
