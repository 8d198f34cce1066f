"""Tiled GEMM, C = op(A) @ op(B), with optional fused ReLU epilogue.

Layouts:
  NN: A is [M, K], B is [K, N]
  NT: A is [M, K], B is [N, K]   (trans_B)
  TN: A is [K, M], B is [K, N]   (trans_A)

Inputs may be float16 / bfloat16 / float32; accumulation is always float32 and
C has the input dtype.
"""
import argparse
import os

import torch

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def matmul(M, N, K, block_M=64, block_N=64, block_K=32, trans_A=False, trans_B=False,
           dtype=T.float16, accum_dtype=T.float32, relu=False, num_stages=2, threads=128, swizzle_panel=0):
    A_shape = (K, M) if trans_A else (M, K)
    B_shape = (N, K) if trans_B else (K, N)
    A_tile = (block_K, block_M) if trans_A else (block_M, block_K)
    B_tile = (block_N, block_K) if trans_B else (block_K, block_N)

    @T.prim_func
    def gemm_kernel(
            A: T.Tensor(A_shape, dtype),
            B: T.Tensor(B_shape, dtype),
            C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            # panels of `swizzle_panel` block rows run together (L2 reuse); 0: launch order
            T.use_swizzle(panel_size=swizzle_panel, enable=swizzle_panel > 0)
            A_shared = T.alloc_shared(A_tile, dtype)
            B_shared = T.alloc_shared(B_tile, dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                # Tiles that run past the matrix edge read zeros, which do not
                # change the dot products.
                if trans_A:
                    T.copy(A[ko * block_K, by * block_M], A_shared)
                else:
                    T.copy(A[by * block_M, ko * block_K], A_shared)
                if trans_B:
                    T.copy(B[bx * block_N, ko * block_K], B_shared)
                else:
                    T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_A=trans_A, transpose_B=trans_B)

            if relu:
                for i, j in T.Parallel(block_M, block_N):
                    C_local[i, j] = T.max(C_local[i, j], 0)

            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm_kernel


def ref_program(A, B, trans_A=False, trans_B=False, relu=False):
    a = A.float().T if trans_A else A.float()
    b = B.float().T if trans_B else B.float()
    c = a @ b
    if relu:
        c = torch.relu(c)
    return c.to(A.dtype)


TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def default_device():
    if os.environ.get("TILELANG_DEFAULT_TARGET", "auto") != "cpu" and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def make_inputs(M, N, K, trans_A, trans_B, dtype, device=None):
    device = device or default_device()
    tdt = TORCH_DTYPES[str(dtype)] if not isinstance(dtype, torch.dtype) else dtype
    a = torch.randn(*((K, M) if trans_A else (M, K)), device=device).to(tdt)
    b = torch.randn(*((N, K) if trans_B else (K, N)), device=device).to(tdt)
    return a, b


def main(M=256, N=256, K=256, layout="NN", dtype="float16", relu=False, bench=True):
    trans_A, trans_B = layout[0] == "T", layout[1] == "T"
    kernel = matmul(M, N, K, 64, 64, 32, trans_A=trans_A, trans_B=trans_B, dtype=dtype, relu=relu)

    a, b = make_inputs(M, N, K, trans_A, trans_B, dtype)
    c = kernel(a, b)
    ref = ref_program(a, b, trans_A, trans_B, relu)
    # float32 gemms run as TF32 on CUDA tensor cores.
    tol = (1e-3 if a.device.type == "cpu" else 5e-2) if dtype == "float32" else 1e-2
    torch.testing.assert_close(c.float(), ref.float(), atol=tol, rtol=tol)
    print(f"GEMM {layout} {dtype} relu={relu}: kernel matches torch.")

    profiler = kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)
    profiler.assert_allclose(lambda x, y: ref_program(x, y, trans_A, trans_B, relu), atol=tol, rtol=tol)
    print("Profiler check passed.")
    if bench:
        latency = profiler.do_bench(warmup=1, rep=3)
        print(f"Latency: {latency:.3f} ms ({2.0 * M * N * K / latency * 1e-9:.3f} TFLOPS)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--M", type=int, default=256)
    parser.add_argument("--N", type=int, default=256)
    parser.add_argument("--K", type=int, default=256)
    parser.add_argument("--layout", choices=["NN", "NT", "TN"], default="NN")
    parser.add_argument("--dtype", choices=list(TORCH_DTYPES), default="float16")
    parser.add_argument("--relu", action="store_true")
    args = parser.parse_args()
    main(args.M, args.N, args.K, args.layout, args.dtype, args.relu)
