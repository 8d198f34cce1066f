"""Elementwise add, C = A + B, on 2-D tiles.

Each block stages a (block_M x block_N) tile of A and B in shared memory, adds
them with a `T.Parallel` loop into a register fragment and writes the tile back.
Tiles hanging over the matrix edge are handled by `T.copy`.
"""
import argparse
import os

import torch

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def elementwise_add(M, N, block_M=32, block_N=64, in_dtype=T.float32, out_dtype=T.float32, threads=128):

    @T.prim_func
    def add_kernel(
            A: T.Tensor((M, N), in_dtype),
            B: T.Tensor((M, N), in_dtype),
            C: T.Tensor((M, N), out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), in_dtype)
            B_shared = T.alloc_shared((block_M, block_N), in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), out_dtype)

            T.copy(A[by * block_M, bx * block_N], A_shared)
            T.copy(B[by * block_M, bx * block_N], B_shared)
            for i, j in T.Parallel(block_M, block_N):
                C_local[i, j] = A_shared[i, j] + B_shared[i, j]
            T.copy(C_local, C[by * block_M, bx * block_N])

    return add_kernel


def ref_program(A, B):
    return A + B


def default_device():
    if os.environ.get("TILELANG_DEFAULT_TARGET", "auto") != "cpu" and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def main(M=256, N=256, bench=True):
    kernel = elementwise_add(M, N)
    device = default_device()
    a = torch.randn(M, N, device=device)
    b = torch.randn(M, N, device=device)
    c = kernel(a, b)
    torch.testing.assert_close(c, ref_program(a, b), rtol=1e-5, atol=1e-5)
    print("Elementwise add matches torch.")

    profiler = kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)
    profiler.assert_allclose(ref_program, rtol=1e-5, atol=1e-5)
    if bench:
        print(f"Latency: {profiler.do_bench(warmup=1, rep=3):.3f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--m", type=int, default=256)
    parser.add_argument("--n", type=int, default=256)
    args = parser.parse_args()
    main(args.m, args.n)
