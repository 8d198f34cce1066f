"""Row reductions over X [M, N]: out[i] = sum_j X[i, j]  and  out[i] = max_j X[i, j].

Each block owns `block_M` rows and folds column chunks of width `block_N` into
a per-row accumulator with `T.reduce_* (..., clear=False)`.
"""
import argparse
import os

import torch

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def row_sum(M, N, block_M=32, block_N=64, dtype=T.float32, accum_dtype=T.float32, threads=128):
    num_chunks = (N + block_N - 1) // block_N

    @T.prim_func
    def row_sum_kernel(
            X: T.Tensor((M, N), dtype),
            Out: T.Tensor((M,), dtype),
    ):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, block_N), accum_dtype)
            acc = T.alloc_fragment((block_M,), accum_dtype)
            T.clear(acc)
            for k in T.serial(num_chunks):
                # Columns past N are read as zero and do not change the sum.
                T.copy(X[bx * block_M, k * block_N], x)
                T.reduce_sum(x, acc, dim=1, clear=False)
            T.copy(acc, Out[bx * block_M])

    return row_sum_kernel


@tilelang.jit(out_idx=[-1])
def row_max(M, N, block_M=32, block_N=64, dtype=T.float32, accum_dtype=T.float32, threads=128):
    num_chunks = (N + block_N - 1) // block_N

    @T.prim_func
    def row_max_kernel(
            X: T.Tensor((M, N), dtype),
            Out: T.Tensor((M,), dtype),
    ):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, block_N), accum_dtype)
            acc = T.alloc_fragment((block_M,), accum_dtype)
            T.fill(acc, -T.infinity(accum_dtype))
            for k in T.serial(num_chunks):
                T.copy(X[bx * block_M, k * block_N], x)
                # Padding columns would read as zero, which could win the max: mask them.
                for i, j in T.Parallel(block_M, block_N):
                    x[i, j] = T.if_then_else(k * block_N + j < N, x[i, j], -T.infinity(accum_dtype))
                T.reduce_max(x, acc, dim=1, clear=False)
            T.copy(acc, Out[bx * block_M])

    return row_max_kernel


def ref_sum(X):
    return X.float().sum(dim=-1).to(X.dtype)


def ref_max(X):
    return X.max(dim=-1).values


def default_device():
    if os.environ.get("TILELANG_DEFAULT_TARGET", "auto") != "cpu" and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def main(M=256, N=256, bench=True):
    x = torch.randn(M, N, device=default_device()) - 4.0  # all-negative rows exercise the max masking
    sum_kernel = row_sum(M, N)
    max_kernel = row_max(M, N)
    torch.testing.assert_close(sum_kernel(x), ref_sum(x), rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(max_kernel(x), ref_max(x), rtol=0, atol=0)
    print("Row sum and row max match torch.")

    for kernel, ref in ((sum_kernel, ref_sum), (max_kernel, ref_max)):
        profiler = kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)
        profiler.assert_allclose(ref, rtol=1e-4, atol=1e-3)
        if bench:
            print(f"Latency: {profiler.do_bench(warmup=1, rep=3):.3f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--m", type=int, default=256)
    parser.add_argument("--n", type=int, default=256)
    args = parser.parse_args()
    main(args.m, args.n)
