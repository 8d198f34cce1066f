"""Split-K GEMM: C += A @ B where the K dimension is cut into `split_k` slices.

Grid: (N tiles, M tiles, split_k). The block for slice z multiplies
A[:, z-th K slice] by B[z-th K slice, :] into a float32 fragment and adds it
into C with `T.atomic_add`, so C must be float32 and zero-initialised by the
caller (C is an input, no `out_idx`).

`atomic="tile"` issues one tile-level atomic add; `atomic="element"` adds
element by element inside a `T.Parallel` loop.
"""
import argparse
import os

import torch

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=None)
def matmul_splitk(M, N, K, block_M=64, block_N=64, block_K=32, split_k=4, atomic="tile", dtype=T.float16,
                  accum_dtype=T.float32, out_dtype=T.float32, threads=128):
    assert atomic in ("tile", "element"), atomic
    # K elements per split, rounded up to whole K tiles so slices never overlap.
    k_tiles = (K + block_K - 1) // block_K
    tiles_per_split = (k_tiles + split_k - 1) // split_k
    split_size = tiles_per_split * block_K

    @T.prim_func
    def splitk_kernel(
            A: T.Tensor((M, K), dtype),
            B: T.Tensor((K, N), dtype),
            C: T.Tensor((M, N), out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k, threads=threads) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

            T.clear(C_local)
            for ko in T.Pipelined(tiles_per_split, num_stages=2):
                # K positions past the end read as zero.
                T.copy(A[by * block_M, bz * split_size + ko * block_K], A_shared)
                T.copy(B[bz * split_size + ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)

            if atomic == "tile":
                T.atomic_add(C[by * block_M, bx * block_N], C_local)
            else:
                for i, j in T.Parallel(block_M, block_N):
                    if by * block_M + i < M:
                        if bx * block_N + j < N:
                            T.atomic_add(C[by * block_M + i, bx * block_N + j], C_local[i, j])

    return splitk_kernel


def ref_program(A, B):
    return A.float() @ B.float()


def default_device():
    if os.environ.get("TILELANG_DEFAULT_TARGET", "auto") != "cpu" and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def main(M=256, N=256, K=512, split_k=4, atomic="tile", bench=True):
    kernel = matmul_splitk(M, N, K, split_k=split_k, atomic=atomic)
    device = default_device()
    a = torch.randn(M, K, device=device).half()
    b = torch.randn(K, N, device=device).half()
    c = torch.zeros(M, N, device=device, dtype=torch.float32)
    kernel(a, b, c)
    torch.testing.assert_close(c, ref_program(a, b), rtol=1e-2, atol=1e-2)
    print(f"Split-K GEMM (split_k={split_k}, atomic={atomic}) matches torch.")
    if bench:
        profiler = kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)
        print(f"Latency: {profiler.do_bench(warmup=1, rep=3):.3f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--M", type=int, default=256)
    parser.add_argument("--N", type=int, default=256)
    parser.add_argument("--K", type=int, default=512)
    parser.add_argument("--split_k", type=int, default=4)
    parser.add_argument("--atomic", choices=["tile", "element"], default="tile")
    args = parser.parse_args()
    main(args.M, args.N, args.K, args.split_k, args.atomic)
