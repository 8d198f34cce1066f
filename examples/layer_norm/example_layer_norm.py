"""LayerNorm over the rows of X with an affine weight and bias:

    Y = (X - mean) * rsqrt(var + eps) * W + B       (biased variance, like torch)

Each block handles `block_M` rows in three sweeps over column chunks:
  1. row sums -> mean   (zero padding past N adds nothing)
  2. sum of squared deviations -> variance (padding is masked out explicitly)
  3. normalise, scale, shift and store.
"""
import argparse
import os

import torch

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def layer_norm(M, N, block_M=32, block_N=64, eps=1e-5, dtype=T.float32, accum_dtype=T.float32, threads=128):
    num_chunks = (N + block_N - 1) // block_N

    @T.prim_func
    def layer_norm_kernel(
            X: T.Tensor((M, N), dtype),
            W: T.Tensor((N,), dtype),
            B: T.Tensor((N,), dtype),
            Y: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, block_N), accum_dtype)
            y = T.alloc_fragment((block_M, block_N), accum_dtype)
            w = T.alloc_fragment((block_N,), accum_dtype)
            b = T.alloc_fragment((block_N,), accum_dtype)
            mean = T.alloc_fragment((block_M,), accum_dtype)
            var = T.alloc_fragment((block_M,), accum_dtype)
            rstd = T.alloc_fragment((block_M,), accum_dtype)

            # 1. mean
            T.clear(mean)
            for k in T.serial(num_chunks):
                T.copy(X[bx * block_M, k * block_N], x)
                T.reduce_sum(x, mean, dim=1, clear=False)
            for i in T.Parallel(block_M):
                mean[i] = mean[i] / N

            # 2. variance
            T.clear(var)
            for k in T.serial(num_chunks):
                T.copy(X[bx * block_M, k * block_N], x)
                for i, j in T.Parallel(block_M, block_N):
                    y[i, j] = T.if_then_else(k * block_N + j < N, (x[i, j] - mean[i]) * (x[i, j] - mean[i]), 0)
                T.reduce_sum(y, var, dim=1, clear=False)
            for i in T.Parallel(block_M):
                rstd[i] = T.rsqrt(var[i] / N + eps)

            # 3. normalise
            for k in T.serial(num_chunks):
                T.copy(X[bx * block_M, k * block_N], x)
                T.copy(W[k * block_N], w)
                T.copy(B[k * block_N], b)
                for i, j in T.Parallel(block_M, block_N):
                    y[i, j] = (x[i, j] - mean[i]) * rstd[i] * w[j] + b[j]
                T.copy(y, Y[bx * block_M, k * block_N])

    return layer_norm_kernel


def ref_program(X, W, B, eps=1e-5):
    y = torch.nn.functional.layer_norm(X.float(), (X.shape[-1],), W.float(), B.float(), eps)
    return y.to(X.dtype)


def default_device():
    if os.environ.get("TILELANG_DEFAULT_TARGET", "auto") != "cpu" and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def main(M=256, N=256, bench=True):
    kernel = layer_norm(M, N)
    device = default_device()
    x = torch.randn(M, N, device=device) * 2 + 0.5
    w = torch.randn(N, device=device)
    b = torch.randn(N, device=device)
    y = kernel(x, w, b)
    torch.testing.assert_close(y, ref_program(x, w, b), rtol=1e-4, atol=1e-4)
    print("LayerNorm matches torch.")

    profiler = kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)
    profiler.assert_allclose(ref_program, rtol=1e-4, atol=1e-4)
    if bench:
        print(f"Latency: {profiler.do_bench(warmup=1, rep=3):.3f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--m", type=int, default=256)
    parser.add_argument("--n", type=int, default=256)
    args = parser.parse_args()
    main(args.m, args.n)
