"""Quickstart: an FP16 GEMM with FP32 accumulation and a fused ReLU epilogue.

The kernel factory below returns a plain `T.prim_func`; `tilelang.compile`
turns it into a callable `JITKernel` (the target comes from
TILELANG_DEFAULT_TARGET, "auto" by default).
"""
import argparse
import os

import torch

import tilelang
import tilelang.language as T


def matmul_relu(M, N, K, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float32):

    @T.prim_func
    def main(
            A: T.Tensor((M, K), dtype),
            B: T.Tensor((K, N), dtype),
            C: T.Tensor((M, N), dtype),
    ):
        # One block per (block_M x block_N) output tile; bx walks N, by walks M.
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

            T.clear(C_local)

            # March along K; the copies of step k+1 may overlap the gemm of step k.
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)

            # Fused epilogue: ReLU on the accumulator, element by element.
            for i, j in T.Parallel(block_M, block_N):
                C_local[i, j] = T.max(C_local[i, j], 0)

            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def ref_program(A, B):
    return torch.relu(A.float() @ B.float()).to(A.dtype)


def default_device():
    if os.environ.get("TILELANG_DEFAULT_TARGET", "auto") != "cpu" and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def main(M=256, N=256, K=256, block_M=64, block_N=64, block_K=32, bench=True):
    func = matmul_relu(M, N, K, block_M, block_N, block_K)

    # Outputs are selected by parameter index: C (index 2) is allocated and returned.
    kernel = tilelang.compile(func, out_idx=[2])

    device = default_device()
    a = torch.randn(M, K, device=device, dtype=torch.float16)
    b = torch.randn(K, N, device=device, dtype=torch.float16)
    c = kernel(a, b)
    torch.testing.assert_close(c, ref_program(a, b), rtol=1e-2, atol=1e-2)
    print("Kernel output matches the reference.")

    profiler = kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)
    profiler.assert_allclose(ref_program, rtol=1e-2, atol=1e-2)
    print("Profiler check passed.")
    if bench:
        latency = profiler.do_bench(warmup=1, rep=3)
        print(f"Latency: {latency:.3f} ms")
    return kernel


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--M", type=int, default=256)
    parser.add_argument("--N", type=int, default=256)
    parser.add_argument("--K", type=int, default=256)
    args = parser.parse_args()
    main(args.M, args.N, args.K)
