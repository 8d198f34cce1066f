"""GEMM as an implicit kernel: no `T.Kernel`.

Tiles are allocated at the top level of the prim_func. The structured
`T.Parallel(..., "SSR")` loop says how the tile loop nest maps to hardware:
the two "S" (spatial) loops become the block grid, the "R" (reduction) loop
runs sequentially inside each block. Every block starts with a zeroed
fragment, accumulates its K tiles and finally writes its own tile of C with
`T.copy(C_local, C)` (C's dims must then be multiples of the tile; otherwise
the block's slice C[i * block_M:(i + 1) * block_M, ...] is named explicitly).

Note: the structured `T.Parallel(..., "SSR")` form is an extension of this
implementation; published TileLang (0.1.15) rejects the structure string.
"""
import argparse
import os

import torch

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def matmul_implicit(M, N, K, block_M=64, block_N=64, block_K=32, dtype=T.float16, accum_dtype=T.float32):

    @T.prim_func
    def implicit_gemm(
            A: T.Tensor((M, K), dtype),
            B: T.Tensor((K, N), dtype),
            C: T.Tensor((M, N), dtype),
    ):
        A_shared = T.alloc_shared((block_M, block_K), dtype)
        B_shared = T.alloc_shared((block_K, block_N), dtype)
        C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

        for i, j, k in T.Parallel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), T.ceildiv(K, block_K), "SSR"):
            T.copy(A[i * block_M, k * block_K], A_shared)
            T.copy(B[k * block_K, j * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)

        if M % block_M == 0 and N % block_N == 0:
            # Whole-tensor destination: each block writes its own (i, j) tile.
            T.copy(C_local, C)
        else:
            # Ragged edges: name the block's slice so the copy is predicated.
            T.copy(C_local, C[i * block_M:(i + 1) * block_M, j * block_N:(j + 1) * block_N])

    return implicit_gemm


def ref_program(A, B):
    return (A.float() @ B.float()).to(A.dtype)


def default_device():
    if os.environ.get("TILELANG_DEFAULT_TARGET", "auto") != "cpu" and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def main(M=256, N=256, K=256, bench=True):
    kernel = matmul_implicit(M, N, K)
    device = default_device()
    a = torch.randn(M, K, device=device).half()
    b = torch.randn(K, N, device=device).half()
    c = kernel(a, b)
    torch.testing.assert_close(c, ref_program(a, b), rtol=1e-2, atol=1e-2)
    print("Implicit-kernel GEMM matches torch.")

    profiler = kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)
    profiler.assert_allclose(ref_program, rtol=1e-2, atol=1e-2)
    if bench:
        print(f"Latency: {profiler.do_bench(warmup=1, rep=3):.3f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--M", type=int, default=256)
    parser.add_argument("--N", type=int, default=256)
    parser.add_argument("--K", type=int, default=256)
    args = parser.parse_args()
    main(args.M, args.N, args.K)
