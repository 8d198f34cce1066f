"""Row softmax, Y[i, :] = softmax(X[i, :]).

Each block owns `block_M` rows and walks the row in chunks of `block_N`
columns twice:
  pass 1: online max / sum  (m_new = max(m, max(chunk));
          s = s * 2^((m - m_new) * log2e) + sum(2^((x - m_new) * log2e)))
  pass 2: Y = 2^((x - m) * log2e) / s
Columns past N are masked to -inf so they never contribute.
"""
import argparse
import os

import torch

import tilelang
import tilelang.language as T

LOG2E = 1.44269504088896


@tilelang.jit(out_idx=[-1])
def softmax(M, N, block_M=32, block_N=64, dtype=T.float32, accum_dtype=T.float32, threads=128):
    num_chunks = (N + block_N - 1) // block_N

    @T.prim_func
    def softmax_kernel(
            X: T.Tensor((M, N), dtype),
            Y: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, block_N), accum_dtype)
            y = T.alloc_fragment((block_M, block_N), accum_dtype)
            row_max = T.alloc_fragment((block_M,), accum_dtype)
            row_max_prev = T.alloc_fragment((block_M,), accum_dtype)
            row_sum = T.alloc_fragment((block_M,), accum_dtype)
            chunk_sum = T.alloc_fragment((block_M,), accum_dtype)

            T.fill(row_max, -T.infinity(accum_dtype))
            T.fill(row_sum, 0)

            for k in T.serial(num_chunks):
                T.copy(X[bx * block_M, k * block_N], x)
                for i, j in T.Parallel(block_M, block_N):
                    x[i, j] = T.if_then_else(k * block_N + j < N, x[i, j], -T.infinity(accum_dtype))
                T.copy(row_max, row_max_prev)
                T.reduce_max(x, row_max, dim=1, clear=False)
                for i, j in T.Parallel(block_M, block_N):
                    x[i, j] = T.exp2((x[i, j] - row_max[i]) * LOG2E)
                T.reduce_sum(x, chunk_sum, dim=1)
                for i in T.Parallel(block_M):
                    row_sum[i] = row_sum[i] * T.exp2((row_max_prev[i] - row_max[i]) * LOG2E) + chunk_sum[i]

            for k in T.serial(num_chunks):
                T.copy(X[bx * block_M, k * block_N], x)
                for i, j in T.Parallel(block_M, block_N):
                    y[i, j] = T.exp2((x[i, j] - row_max[i]) * LOG2E) / row_sum[i]
                T.copy(y, Y[bx * block_M, k * block_N])

    return softmax_kernel


def ref_program(X):
    return torch.softmax(X.float(), dim=-1).to(X.dtype)


def default_device():
    if os.environ.get("TILELANG_DEFAULT_TARGET", "auto") != "cpu" and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def main(M=256, N=256, bench=True):
    kernel = softmax(M, N)
    x = torch.randn(M, N, device=default_device()) * 3
    y = kernel(x)
    torch.testing.assert_close(y, ref_program(x), rtol=1e-4, atol=1e-5)
    print("Softmax matches torch.")

    profiler = kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)
    profiler.assert_allclose(ref_program, rtol=1e-4, atol=1e-5)
    if bench:
        print(f"Latency: {profiler.do_bench(warmup=1, rep=3):.3f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--m", type=int, default=256)
    parser.add_argument("--n", type=int, default=256)
    args = parser.parse_args()
    main(args.m, args.n)
