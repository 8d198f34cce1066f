"""Kernels shared by the CUDA backend tests (CPU compile tests and GPU runs)."""
import tilelang.language as T


def elementwise_add(N=1000, block=256, dtype="float32"):
    @T.prim_func
    def add(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
    return add


def copy_2d(M=100, N=70, bm=32, bn=32, dtype="float16"):
    """Ragged edges: tiles past the end are predicated by T.copy."""
    @T.prim_func
    def copy(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            S = T.alloc_shared((bm, bn), dtype)
            F = T.alloc_fragment((bm, bn), dtype)
            T.copy(A[by * bm, bx * bn], S)
            T.copy(S, F)
            for i, j in T.Parallel(bm, bn):
                F[i, j] = F[i, j] * 2
            T.copy(F, B[by * bm, bx * bn])
    return copy


def gemm(M=256, N=256, K=256, bm=128, bn=128, bk=32, threads=128, dtype="float16", accum="float32",
         trans_A=False, trans_B=False, stages=2, relu=False):
    a_shape = (K, M) if trans_A else (M, K)
    b_shape = (N, K) if trans_B else (K, N)
    as_shape = (bk, bm) if trans_A else (bm, bk)
    bs_shape = (bn, bk) if trans_B else (bk, bn)

    @T.prim_func
    def matmul(A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            As = T.alloc_shared(as_shape, dtype)
            Bs = T.alloc_shared(bs_shape, dtype)
            Cf = T.alloc_fragment((bm, bn), accum)
            T.clear(Cf)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                if trans_A:
                    T.copy(A[k * bk, by * bm], As)
                else:
                    T.copy(A[by * bm, k * bk], As)
                if trans_B:
                    T.copy(B[bx * bn, k * bk], Bs)
                else:
                    T.copy(B[k * bk, bx * bn], Bs)
                T.gemm(As, Bs, Cf, transpose_A=trans_A, transpose_B=trans_B)
            if relu:
                for i, j in T.Parallel(bm, bn):
                    Cf[i, j] = T.max(Cf[i, j], 0)
            T.copy(Cf, C[by * bm, bx * bn])
    return matmul


def softmax(M=100, N=1000, rows=4, width=1024):
    @T.prim_func
    def softmax_rows(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, rows), threads=128) as bx:
            x = T.alloc_fragment((rows, width), "float32")
            m = T.alloc_fragment((rows,), "float32")
            s = T.alloc_fragment((rows,), "float32")
            T.copy(A[bx * rows, 0], x)
            for i, j in T.Parallel(rows, width):
                x[i, j] = T.if_then_else(j < N, x[i, j], -T.infinity("float32"))
            T.reduce_max(x, m, dim=1)
            for i, j in T.Parallel(rows, width):
                x[i, j] = T.exp(x[i, j] - m[i])
            T.reduce_sum(x, s, dim=1)
            for i, j in T.Parallel(rows, width):
                x[i, j] = x[i, j] / s[i]
            T.copy(x, B[bx * rows, 0])
    return softmax_rows


def row_sum_atomic(M=64, N=256, bn=64):
    """Each block adds its partial row sums into O with atomics."""
    @T.prim_func
    def rowsum(A: T.Tensor((M, N), "float32"), O: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(N, bn), threads=128) as bx:
            t = T.alloc_fragment((M, bn), "float32")
            s = T.alloc_fragment((M,), "float32")
            T.copy(A[0, bx * bn], t)
            T.reduce_sum(t, s, dim=1)
            T.atomic_add(O, s)
    return rowsum


def scalar_and_dynamic():
    """Scalar params, a dynamic dimension, a serial loop with a scalar accumulator."""
    N = T.dynamic("N")

    @T.prim_func
    def scale(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), alpha: T.float32, reps: T.int32):
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            acc = T.alloc_var("float32", 0.0)
            for r in T.serial(reps):
                acc = acc + alpha
            for i in T.Parallel(128):
                if bx * 128 + i < N:
                    B[bx * 128 + i] = A[bx * 128 + i] * acc
    return scale


def gemm_row_stats(M=256, N=64, K=128, bm=64, threads=128, policy="FullRow", dtype="float16", reduce_dim=1):
    """C = A @ B per block row tile, then row statistics of the accumulator kept as
    fragments: Mx = max_j C (clear), Sm = 1 + sum_j (C - Mx) (non-clear reduce into a
    filled row fragment); D = (C - Mx) * 0.5 cast to `dtype`. `reduce_dim=0` reduces over
    rows instead (a use the register layouts cannot follow: shared-memory fallback)."""
    red = bm if reduce_dim == 1 else N

    @T.prim_func
    def rowstats(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), D: T.Tensor((M, N), dtype),
                 Mx: T.Tensor((M,), "float32"), Sm: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=threads) as bx:
            As = T.alloc_shared((bm, K), dtype)
            Bs = T.alloc_shared((K, N), dtype)
            C = T.alloc_fragment((bm, N), "float32")
            Ch = T.alloc_fragment((bm, N), dtype)
            mx = T.alloc_fragment((red,), "float32")
            sm = T.alloc_fragment((red,), "float32")
            T.copy(A[bx * bm, 0], As)
            T.copy(B, Bs)
            T.clear(C)
            T.gemm(As, Bs, C, policy=policy)
            T.reduce_max(C, mx, dim=reduce_dim)
            if reduce_dim == 1:
                for i, j in T.Parallel(bm, N):
                    C[i, j] = C[i, j] - mx[i]
            T.fill(sm, 1.0)
            T.reduce_sum(C, sm, dim=reduce_dim, clear=False)
            T.copy(C, Ch)
            for i, j in T.Parallel(bm, N):
                Ch[i, j] = Ch[i, j] * 0.5
            T.copy(Ch, D[bx * bm, 0])
            if reduce_dim == 1:
                for i in T.Parallel(bm):
                    if bx * bm + i < M:
                        Mx[bx * bm + i] = mx[i]
                        Sm[bx * bm + i] = sm[i]
    return rowstats
