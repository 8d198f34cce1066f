"""RMSNorm over the rows of X:  Y = X * rsqrt(mean(X^2, -1) + eps) * W.

Each block handles `block_M` rows. Pass 1 accumulates the sum of squares over
column chunks (zero padding past N adds nothing); pass 2 scales and writes.
"""
import argparse
import os

import torch

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def rms_norm(M, N, block_M=32, block_N=64, eps=1e-6, dtype=T.float32, accum_dtype=T.float32, threads=128):
    num_chunks = (N + block_N - 1) // block_N

    @T.prim_func
    def rms_norm_kernel(
            X: T.Tensor((M, N), dtype),
            W: T.Tensor((N,), dtype),
            Y: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, block_N), accum_dtype)
            sq = T.alloc_fragment((block_M, block_N), accum_dtype)
            w = T.alloc_fragment((block_N,), accum_dtype)
            y = T.alloc_fragment((block_M, block_N), accum_dtype)
            sum_sq = T.alloc_fragment((block_M,), accum_dtype)
            inv_rms = T.alloc_fragment((block_M,), accum_dtype)

            T.clear(sum_sq)
            for k in T.serial(num_chunks):
                T.copy(X[bx * block_M, k * block_N], x)
                for i, j in T.Parallel(block_M, block_N):
                    sq[i, j] = x[i, j] * x[i, j]
                T.reduce_sum(sq, sum_sq, dim=1, clear=False)

            for i in T.Parallel(block_M):
                inv_rms[i] = T.rsqrt(sum_sq[i] / N + eps)

            for k in T.serial(num_chunks):
                T.copy(X[bx * block_M, k * block_N], x)
                T.copy(W[k * block_N], w)
                for i, j in T.Parallel(block_M, block_N):
                    y[i, j] = x[i, j] * inv_rms[i] * w[j]
                T.copy(y, Y[bx * block_M, k * block_N])

    return rms_norm_kernel


def ref_program(X, W, eps=1e-6):
    x = X.float()
    y = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * W.float()
    return y.to(X.dtype)


def default_device():
    if os.environ.get("TILELANG_DEFAULT_TARGET", "auto") != "cpu" and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def main(M=256, N=256, bench=True):
    kernel = rms_norm(M, N)
    device = default_device()
    x = torch.randn(M, N, device=device)
    w = torch.randn(N, device=device)
    y = kernel(x, w)
    torch.testing.assert_close(y, ref_program(x, w), rtol=1e-4, atol=1e-4)
    print("RMSNorm matches torch.")

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
