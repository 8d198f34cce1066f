"""GEMM written in the eager style.

The decorated function *is* the kernel: its tensor parameters are annotated in
the body, `T.const` names the sizes that are read off the arguments, the output
is allocated with `T.empty` and returned. Calling it with tensors specialises,
compiles (cached per shape / argument set) and runs it.
"""
import argparse
import os

import torch

import tilelang
import tilelang.language as T


@tilelang.jit
def matmul(A, B, block_M=64, block_N=64, block_K=32, dtype=T.float16, accum_dtype=T.float32):
    M, N, K = T.const("M N K")

    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    C = T.empty((M, N), dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), dtype)
        B_shared = T.alloc_shared((block_K, block_N), dtype)
        C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

        T.clear(C_local)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
            T.copy(A[by * block_M, ko * block_K], A_shared)
            T.copy(B[ko * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)

        T.copy(C_local, C[by * block_M, bx * block_N])

    return C


def ref_program(A, B):
    return (A.float() @ B.float()).to(A.dtype)


def default_device():
    if os.environ.get("TILELANG_DEFAULT_TARGET", "auto") != "cpu" and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def main(M=256, N=256, K=256, bench=True):
    device = default_device()
    a = torch.randn(M, K, device=device).half()
    b = torch.randn(K, N, device=device).half()

    # Eager call: compiles for these shapes on first use, then runs.
    c = matmul(a, b)
    torch.testing.assert_close(c, ref_program(a, b), rtol=1e-2, atol=1e-2)
    print("Eager GEMM matches torch.")

    # Ahead-of-time: bind the T.const sizes by name and get a JITKernel.
    kernel = matmul.compile(M=M, N=N, K=K, block_M=64, block_N=64, block_K=32)
    torch.testing.assert_close(kernel(a, b), ref_program(a, b), rtol=1e-2, atol=1e-2)
    if bench:
        profiler = kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)
        print(f"Latency: {profiler.do_bench(warmup=1, rep=3):.3f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--M", type=int, default=256)
    parser.add_argument("--N", type=int, default=256)
    parser.add_argument("--K", type=int, default=256)
    args = parser.parse_args()
    main(args.M, args.N, args.K)
