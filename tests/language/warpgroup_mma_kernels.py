"""A GEMM written atom by atom with WGMMATensorCoreIntrinEmitter: one warpgroup,
C (M x N, float32) = A (M x K, K-major, 64B swizzle) @ B (K x N, N-major, 128B swizzle),
wgmma m64nNk16 atoms through descriptors; shared by the compile and GPU tests."""
import tilelang.language as T
from tilelang.cuda.language import WGMMATensorCoreIntrinEmitter
from tilelang.layout import make_full_bank_swizzled_layout, make_half_bank_swizzled_layout


def wgmma_atom_gemm(M=64, N=64, K=32, dtype="float16"):
    emi = WGMMATensorCoreIntrinEmitter(a_dtype=dtype, b_dtype=dtype, accum_dtype="float32", a_transposed=False,
                                       b_transposed=False, block_row_warps=4, block_col_warps=1,
                                       warp_row_tiles=M // 4, warp_col_tiles=N, chunk=K)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128):
            As = T.alloc_shared((M, K), dtype)
            Bs = T.alloc_shared((K, N), dtype)
            Cl = T.alloc_local((emi.wgmma_accum_regs,), "float32")
            la, lb = make_half_bank_swizzled_layout(As), make_full_bank_swizzled_layout(Bs)
            emi._assign_a_shared_layout(la)
            emi._assign_b_shared_layout(lb)
            T.annotate_layout({As: la, Bs: lb})
            T.copy(A, As)
            T.copy(B, Bs)
            pa, pb = emi.compute_wgmma_a_desc_params(As), emi.compute_wgmma_b_desc_params(Bs)
            da = T.alloc_wgmma_desc()
            db = T.alloc_wgmma_desc()
            emi.init_wgmma_a_desc(da, As, pa)
            emi.init_wgmma_b_desc(db, Bs, pb)
            emi.wgmma_fence_c(Cl)
            emi.wgmma_arrive()
            for n in T.unroll(emi.wgmma_num_inst_n):
                for m in T.unroll(emi.wgmma_num_inst_m):
                    for ki in T.unroll(emi.wgmma_num_k_atoms):
                        emi.wgmma_ss_atom(da, db, Cl, m, n, ki, pa, pb, ki > 0)   # the first K step overwrites
            emi.wgmma_commit()
            emi.wgmma_wait(0)
            emi.wgmma_fence_c(Cl)
            tx = T.get_thread_binding()
            for m in T.serial(emi.wgmma_num_inst_m):   # the m64nN accumulator's registers (warpgroup_mma.py)
                for r in T.serial(N // 2):
                    C[64 * m + 16 * (tx // 32) + (tx % 32) // 4 + 8 * ((r // 2) % 2), 8 * (r // 4) + 2 * (tx % 4) + r % 2] = \
                        Cl[m * (N // 2) + r]
    return main
