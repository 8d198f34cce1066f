"""`python -m tilelang`: the main job. Compiles a GEMM on the default target (the GPU
if one is present, else the CPU), checks it against torch/numpy and times it."""
from __future__ import annotations

import argparse
import time

import numpy as np

import tilelang
import tilelang.language as T
import tilelang.profiler


def matmul(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float", num_stages=3, threads=128):
    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])
    return gemm


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=None, help="M = N = K (default: 4096 on GPU, 512 on CPU)")
    ap.add_argument("--target", default="auto")
    args = ap.parse_args(argv)
    try:
        target = tilelang.determine_target(args.target)
    except tilelang.TileLangError as e:
        ap.error(f"--target {args.target}: {e.message}")
    if target.kind == "cuda":
        from tilelang.backend.registry import cuda_available
        if not cuda_available():
            ap.error(f"--target {args.target}: no CUDA GPU is visible on this machine (leave --target out "
                     "to run on the CPU)")
    n = args.size or (4096 if target.kind == "cuda" else 512)
    t0 = time.perf_counter()
    # a tile configuration that suits each target (the GPU one was picked by the autotuner)
    cfg = dict(block_M=128, block_N=256, block_K=64, num_stages=4, threads=256) if target.kind == "cuda" else \
        dict(block_M=128, block_N=128, block_K=32)
    kernel = tilelang.compile(matmul(n, n, n, **cfg), out_idx=[-1], target=target)
    t_compile = time.perf_counter() - t0
    profiler = kernel.get_profiler(tilelang.TensorSupplyType.Normal)
    profiler.assert_allclose(lambda A, B: (A.float() @ B.float()).to(A.dtype) if hasattr(A, "float")
                             else (A.astype(np.float32) @ B.astype(np.float32)).astype(A.dtype),
                             atol=1e-2, rtol=1e-2)
    ms = profiler.do_bench()
    tflops = 2 * n ** 3 / (ms * 1e-3) / 1e12
    print(f"target: {target}")
    print(f"GEMM {n}x{n}x{n} fp16: correct (matches the reference within 1e-2)")
    print(f"compile: {t_compile * 1e3:.0f} ms{' (cache hit)' if kernel.cache_hit else ''}")
    print(f"time: {ms:.3f} ms  ({tflops:.3f} TFLOP/s)")
    if target.kind == "cuda":
        import torch
        a, b = profiler._get_inputs()
        t_ref = tilelang.profiler.do_bench(lambda: a @ b)
        print(f"torch.matmul (cuBLAS): {t_ref:.3f} ms  -> ratio {t_ref / ms:.2f}x")


if __name__ == "__main__":
    main()
