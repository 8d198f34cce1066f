"""GEMMs written with the per-thread tensor-core intrinsics (T.ptx_wgmma_ss/rs with
descriptors, T.ptx_ldmatrix + T.ptx_mma), shared by the compile and GPU tests.

wgmma operands are K-major (A: M x K, B: N x K, C = A @ B^T). Shared tiles use one
of the two canonical layouts the descriptor can describe:
- "interleave" (no swizzle): [K/8][rows][8], each 8-row x 16-byte core matrix
  contiguous; LBO = rows * 16 bytes (next core matrix along K), SBO = 128 bytes
  (next 8 rows); a K step of 16 advances 2 * rows units of 16 bytes;
- "sw128": 64-column strips of rows x 128 bytes whose 16-byte chunks are XOR-ed with
  row % 8 (1024-byte aligned); LBO unused (1), SBO = 1024 bytes; a K step of 16
  advances 32 bytes, the next strip rows * 128 bytes.
The m64nN accumulator: thread t of warp w holds register r at row
16 w + (t % 32) / 4 + 8 ((r / 2) % 2), column 8 (r / 4) + 2 (t % 4) + r % 2."""
import tilelang.language as T

_TORCH = {"float16": "fp16", "bfloat16": "bf16"}


def _smem_index(layout, rows, r, k):
    """Position of element (r, k) of a K-major rows x K tile in the canonical layout."""
    if layout == "interleave":
        return (k // 8) * rows * 8 + r * 8 + k % 8
    return (k // 64) * rows * 64 + r * 64 + T.bitwise_xor((k % 64) // 8, r % 8) * 8 + k % 8


def _desc_args(layout, rows):
    """(swizzle mode, LBO >> 4, SBO >> 4) of a rows x K tile."""
    return (0, rows * 16 // 16, 128 // 16) if layout == "interleave" else (1, 1, 1024 // 16)


def _k_step(layout, rows, ki):
    """Descriptor advance (units of 16 bytes) of K step ki (16 elements of 16 bits)."""
    if layout == "interleave":
        return ki * 2 * rows
    return (ki // 4) * rows * 8 + (ki % 4) * 2


def wgmma_ss_gemm(N=64, K=256, BK=64, layout="interleave", dtype="float16", init_once=False):
    """C (64 x N, float32) = A (64 x K) @ B (N x K)^T, one warpgroup, K in tiles of BK
    loaded into the same shared buffers. The descriptors are built after each load,
    or once before the loop (`init_once`: the wgmma reads the tiles through them, and
    the compiler still places the barriers)."""
    M = 64
    ab = _TORCH[dtype]

    @T.prim_func
    def wgmma_ss(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M * BK,), dtype)
            B_s = T.alloc_shared((N * BK,), dtype)
            C_l = T.alloc_local((N // 2,), "float32")
            desc_a = T.alloc_wgmma_desc()
            desc_b = T.alloc_wgmma_desc()
            tx = T.get_thread_binding()
            if init_once:
                T.initialize_wgmma_descriptor(desc_a, A_s.access_ptr("r"), *_desc_args(layout, M))
                T.initialize_wgmma_descriptor(desc_b, B_s.access_ptr("r"), *_desc_args(layout, N))
            for kt in T.serial(K // BK):
                for i, k in T.Parallel(M, BK):
                    A_s[_smem_index(layout, M, i, k)] = A[i, kt * BK + k]
                for j, k in T.Parallel(N, BK):
                    B_s[_smem_index(layout, N, j, k)] = B[j, kt * BK + k]
                if not init_once:
                    T.initialize_wgmma_descriptor(desc_a, A_s.access_ptr("r"), *_desc_args(layout, M))
                    T.initialize_wgmma_descriptor(desc_b, B_s.access_ptr("r"), *_desc_args(layout, N))
                T.warpgroup_fence_operand(C_l, num_regs=N // 2)
                T.warpgroup_arrive()
                for ki in T.unroll(BK // 16):
                    T.ptx_wgmma_ss("float32", f"m64n{N}k16", True, True, ab, ab, "fp32",
                                   desc_a.data, _k_step(layout, M, ki), desc_b.data, _k_step(layout, N, ki),
                                   C_l.data, 0, kt * (BK // 16) + ki > 0, True, True)
                T.warpgroup_commit_batch()
                T.warpgroup_wait(0)
                T.warpgroup_fence_operand(C_l, num_regs=N // 2)
            w, lane = tx // 32, tx % 32
            for r in T.unroll(N // 2):
                C[16 * w + lane // 4 + 8 * ((r // 2) % 2), 8 * (r // 4) + 2 * (lane % 4) + r % 2] = C_l[r]
    return wgmma_ss


def wgmma_rs_gemm(N=64, K=64):
    """C (64 x N) = A (64 x K, registers) @ B (N x K)^T, B in the 128-byte swizzle."""
    M = 64

    @T.prim_func
    def wgmma_rs(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            B_s = T.alloc_shared((N * K,), "float16")
            A_l = T.alloc_local((K // 2,), "float16")
            C_l = T.alloc_local((N // 2,), "float32")
            desc_b = T.alloc_wgmma_desc()
            tx = T.get_thread_binding()
            w, lane = tx // 32, tx % 32
            for j, k in T.Parallel(N, K):
                B_s[_smem_index("sw128", N, j, k)] = B[j, k]
            # A in the accumulator pattern: registers 8 ki .. 8 ki + 7 hold K step ki
            for i in T.unroll(K // 2):
                A_l[i] = A[16 * w + lane // 4 + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * (lane % 4) + i % 2]
            T.initialize_wgmma_descriptor(desc_b, B_s.access_ptr("r"), *_desc_args("sw128", N))
            T.warpgroup_fence_operand(C_l, num_regs=N // 2)
            T.warpgroup_arrive()
            for ki in T.unroll(K // 16):
                T.ptx_wgmma_rs("float32", f"m64n{N}k16", True, "fp16", "fp16", "fp32", A_l.data, ki * 8,
                               desc_b.data, _k_step("sw128", N, ki), C_l.data, 0, ki > 0, True, True)
            T.warpgroup_commit_batch()
            T.warpgroup_wait(0)
            T.warpgroup_fence_operand(C_l, num_regs=N // 2)
            for r in T.unroll(N // 2):
                C[16 * w + lane // 4 + 8 * ((r // 2) % 2), 8 * (r // 4) + 2 * (lane % 4) + r % 2] = C_l[r]
    return wgmma_rs


def mma_gemm(K=64):
    """C (16 x 16, float32) = A (16 x K) @ B (16 x K)^T with one warp: ldmatrix.x4 of A
    and of two 8-column B atoms, two m16n8k16 per K step."""

    @T.prim_func
    def mma(A: T.Tensor((16, K), "float16"), B: T.Tensor((16, K), "float16"), C: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=32) as bx:
            A_s = T.alloc_shared((16, K), "float16")
            B_s = T.alloc_shared((16, K), "float16")
            A_l = T.alloc_local((8,), "float16")
            B_l = T.alloc_local((8,), "float16")
            C_l = T.alloc_local((8,), "float32")
            tx = T.get_thread_binding()
            T.copy(A, A_s)
            T.copy(B, B_s)
            for i in T.unroll(8):
                C_l[i] = 0
            for ki in T.unroll(K // 16):
                ra, ca = T.get_ldmatrix_offset("A", tx, 0, K, "float16", False)
                T.ptx_ldmatrix(False, 4, T.access_ptr(A_s[ra, ki * 16 + ca], "r"), T.access_ptr(A_l[0], "w"))
                rb, cb = T.get_ldmatrix_offset("B", tx, 0, K, "float16", True)
                T.ptx_ldmatrix(False, 4, T.access_ptr(B_s[rb, ki * 16 + cb], "r"), T.access_ptr(B_l[0], "w"))
                for j in T.unroll(2):
                    T.ptx_mma("float32", "m16n8k16", "row", "col", "fp16", "fp16", "fp32",
                              A_l.data, 0, B_l.data, j * 4, C_l.data, j * 4, False)
            for i in T.unroll(8):
                r, c = T.mma_store_index_map(tx, i)
                C[r, c] = C_l[i]
    return mma
