"""GEMV, y = A @ x with A [N, K] and x [K].

Each block computes `block_N` outputs. It walks K in chunks of `block_K`:
the chunk of A and x is multiplied elementwise into a fragment and
`T.reduce_sum(..., clear=False)` folds it into the per-row accumulator.
"""
import argparse
import os

import torch

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def gemv(N, K, block_N=32, block_K=64, dtype=T.float16, accum_dtype=T.float32, threads=128):

    @T.prim_func
    def gemv_kernel(
            A: T.Tensor((N, K), dtype),
            x: T.Tensor((K,), dtype),
            y: T.Tensor((N,), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), threads=threads) as bn:
            A_shared = T.alloc_shared((block_N, block_K), dtype)
            x_shared = T.alloc_shared((block_K,), dtype)
            prod = T.alloc_fragment((block_N, block_K), accum_dtype)
            acc = T.alloc_fragment((block_N,), accum_dtype)

            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                # Past the edges the tiles read zeros, contributing nothing.
                T.copy(A[bn * block_N, ko * block_K], A_shared)
                T.copy(x[ko * block_K], x_shared)
                for i, k in T.Parallel(block_N, block_K):
                    prod[i, k] = T.cast(A_shared[i, k], accum_dtype) * T.cast(x_shared[k], accum_dtype)
                T.reduce_sum(prod, acc, dim=1, clear=False)
            T.copy(acc, y[bn * block_N])

    return gemv_kernel


def ref_program(A, x):
    return (A.float() @ x.float()).to(A.dtype)


TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def default_device():
    if os.environ.get("TILELANG_DEFAULT_TARGET", "auto") != "cpu" and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def main(N=256, K=256, dtype="float16", bench=True):
    kernel = gemv(N, K, dtype=dtype)
    device = default_device()
    a = torch.randn(N, K, device=device).to(TORCH_DTYPES[dtype])
    x = torch.randn(K, device=device).to(TORCH_DTYPES[dtype])
    y = kernel(a, x)
    tol = 1e-4 if dtype == "float32" else 1e-2
    torch.testing.assert_close(y, ref_program(a, x), rtol=tol, atol=tol)
    print("GEMV matches torch.")

    profiler = kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)
    profiler.assert_allclose(ref_program, rtol=tol, atol=tol)
    if bench:
        print(f"Latency: {profiler.do_bench(warmup=1, rep=3):.3f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--k", type=int, default=256)
    parser.add_argument("--dtype", choices=list(TORCH_DTYPES), default="float16")
    args = parser.parse_args()
    main(args.n, args.k, args.dtype)
