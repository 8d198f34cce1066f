"""GEMMs written warp by warp with the mma emitter, shared by the CPU tests
(tests/language/test_warp_mma.py) and the CUDA ones (tests/backend/cuda/ops/test_warp_mma.py)."""
import tilelang.language as T
from tilelang.cuda.intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitter


def warp_mma_gemm(M=128, N=128, K=128, dtype="float16", accum="float32", out="float32", a_trans=False,
                  b_trans=True, brw=2, bcw=2, wrt=32, wct=32, chunk=32, store="4d", stages=2, m_first=False,
                  atoms=False):
    em = TensorCoreIntrinEmitter(a_dtype=dtype, b_dtype=dtype, accum_dtype=accum, a_transposed=a_trans,
                                 b_transposed=b_trans, block_row_warps=brw, block_col_warps=bcw,
                                 warp_row_tiles=wrt, warp_col_tiles=wct, chunk=chunk, is_m_first=m_first)
    bm, bn, bk = brw * wrt, bcw * wct, chunk
    mn = em.micro_size_y
    a_shape, as_shape = ((K, M), (bk, bm)) if a_trans else ((M, K), (bm, bk))
    b_shape, bs_shape = ((N, K), (bn, bk)) if b_trans else ((K, N), (bk, bn))

    @T.prim_func
    def main(A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), out)):
        with T.Kernel(N // bn, M // bm, threads=em.threads) as (bx, by):
            As = T.alloc_shared(as_shape, dtype)
            Bs = T.alloc_shared(bs_shape, dtype)
            Al = T.alloc_local((em.warp_rows * em.local_size_a,), dtype)
            Bl = T.alloc_local((em.warp_cols * em.local_size_b,), dtype)
            Cl = T.alloc_local((em.warp_rows * em.warp_cols * em.local_size_out,), accum)
            T.clear(Cl)
            for ko in T.Pipelined(K // bk, num_stages=stages):
                if a_trans:
                    T.copy(A[ko * bk, by * bm], As)
                else:
                    T.copy(A[by * bm, ko * bk], As)
                if b_trans:
                    T.copy(B[bx * bn, ko * bk], Bs)
                else:
                    T.copy(B[ko * bk, bx * bn], Bs)
                for ki in T.serial(bk // em.micro_size_k):
                    em.ldmatrix_a(Al, As, ki)
                    em.ldmatrix_b(Bl, Bs, ki)
                    if atoms:   # the same product, one mma_atom per (i, j)
                        for i, j in T.grid(em.mma_num_inst_m, em.mma_num_inst_n):
                            em.mma_atom(Al, Bl, Cl, i, j, ki)
                    else:
                        em.mma(Al, Bl, Cl)
            if store == "global":
                em.stmatrix(Cl, C, pid_m=by, pid_n=bx)
            elif store == "2d":
                Cs = T.alloc_shared((bm, bn), out)
                em.stmatrix(Cl, Cs)
                T.copy(Cs, C[by * bm, bx * bn])
            else:
                Cs4 = T.alloc_shared((bm // 16, bn // mn, 16, mn), out)
                em.stmatrix(Cl, Cs4)
                for i, j in T.Parallel(bm, bn):
                    C[by * bm + i, bx * bn + j] = Cs4[i // 16, j // mn, i % 16, j % mn]
    return main
