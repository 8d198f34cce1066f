"""Kernel factories shared by the autotuner tests (small CPU GEMMs)."""
import tilelang.language as T


def gemm_factory(M, N, K, bm=64, bn=64, bk=32, skip_last_k=False, bad_shape=False, dtype="float16",
                 accum="float32"):
    """C = A @ B. `skip_last_k` drops the last K tile (faster and wrong);
    `bad_shape` gives T.gemm operands whose shapes do not agree."""
    bk_b = bk * 2 if bad_shape else bk

    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), dtype)
            B_s = T.alloc_shared((bk_b, bn), dtype)
            C_l = T.alloc_fragment((bm, bn), accum)
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk) - (1 if skip_last_k else 0), num_stages=2):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * bm, bx * bn])
    return gemm


def gemm_ref(A, B):
    return (A.float() @ B.float()).to(A.dtype)
