"""Small kernels shared by the unit tests."""
import tilelang.language as T


def gemm_func(M=128, N=128, K=64, bm=64, bn=64, bk=32, dtype="float16", accum="float32", relu=False):
    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_shared = T.alloc_shared((bm, bk), dtype)
            B_shared = T.alloc_shared((bk, bn), dtype)
            C_local = T.alloc_fragment((bm, bn), accum)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], A_shared)
                T.copy(B[k * bk, bx * bn], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            if relu:
                for i, j in T.Parallel(bm, bn):
                    C_local[i, j] = T.max(C_local[i, j], 0)
            T.copy(C_local, C[by * bm, bx * bn])
    return gemm


def add_func(N=1000, block=128, dtype="float32"):
    @T.prim_func
    def add(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
    return add
