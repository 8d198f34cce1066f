"""`MatmulTemplate`: C = A @ B (A stored K x M when `trans_A`, B stored N x K when
`trans_B`), accumulated in `accum_dtype`, plus an optional Bias[N], stored as `out_dtype`."""
# no `from __future__ import annotations`: the kernels' T.Tensor annotations read locals
from dataclasses import dataclass

from tilelang.carver.arch import TileDevice, is_tensorcore_supported_precision
from tilelang.carver.roller import simt, tensorcore
from tilelang.carver.roller.hint import IntrinInfo
from tilelang.carver.template.base import BaseTemplate, check_dtypes, check_positive_ints

# the tile of the reference kernel (`equivalent_function`); the hints are for tuned ones
REF_BLOCK_M, REF_BLOCK_N, REF_BLOCK_K, REF_THREADS = 64, 64, 32, 128


def gemm_kernel(M, N, K, trans_A, trans_B, in_dtype, out_dtype, accum_dtype, with_bias,
                block_M=REF_BLOCK_M, block_N=REF_BLOCK_N, block_K=REF_BLOCK_K, threads=REF_THREADS,
                num_stages=2):
    """A tiled GEMM over any M, N, K (edge tiles are predicated by the copies)."""
    import tilelang.language as T
    a_shape, a_tile = ((K, M), (block_K, block_M)) if trans_A else ((M, K), (block_M, block_K))
    b_shape, b_tile = ((N, K), (block_N, block_K)) if trans_B else ((K, N), (block_K, block_N))

    @T.macro
    def tile(A, B, acc, bx, by):   # acc = the (by, bx) tile of A @ B
        A_s = T.alloc_shared(a_tile, in_dtype)
        B_s = T.alloc_shared(b_tile, in_dtype)
        T.clear(acc)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
            if trans_A:
                T.copy(A[k * block_K, by * block_M], A_s)
            else:
                T.copy(A[by * block_M, k * block_K], A_s)
            if trans_B:
                T.copy(B[bx * block_N, k * block_K], B_s)
            else:
                T.copy(B[k * block_K, bx * block_N], B_s)
            T.gemm(A_s, B_s, acc, transpose_A=trans_A, transpose_B=trans_B)

    if with_bias:
        @T.prim_func
        def matmul_bias(A: T.Tensor(a_shape, in_dtype), B: T.Tensor(b_shape, in_dtype),
                        Bias: T.Tensor((N,), accum_dtype), C: T.Tensor((M, N), out_dtype)):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
                acc = T.alloc_fragment((block_M, block_N), accum_dtype)
                tile(A, B, acc, bx, by)
                bias = T.alloc_shared((block_N,), accum_dtype)
                T.copy(Bias[bx * block_N], bias)
                for i, j in T.Parallel(block_M, block_N):
                    acc[i, j] += bias[j]
                T.copy(acc, C[by * block_M, bx * block_N])
        return matmul_bias

    @T.prim_func
    def matmul(A: T.Tensor(a_shape, in_dtype), B: T.Tensor(b_shape, in_dtype),
               C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            acc = T.alloc_fragment((block_M, block_N), accum_dtype)
            tile(A, B, acc, bx, by)
            T.copy(acc, C[by * block_M, bx * block_N])
    return matmul


def gemm_hints(arch: TileDevice, M, N, K, in_dtype, accum_dtype, out_dtype, trans_B, topk, batch=1):
    """Tensor-core hints when the arch multiplies these dtypes, SIMT hints otherwise."""
    if is_tensorcore_supported_precision(in_dtype, accum_dtype, arch):
        p = tensorcore.GemmShape(M, N, K, in_dtype.bits, accum_dtype.bits, out_dtype.bits, batch)
        return tensorcore.recommend(arch, p, topk, IntrinInfo(in_dtype, accum_dtype, trans_B))
    # C[m, n] reads B along K: contiguous when B is stored N x K
    axes, extents = ("SSR", [M, N, K]) if trans_B else ("SRS", [M, K, N])
    return simt.recommend(arch, axes, extents, in_dtype.bits, topk)


@dataclass(repr=False)
class MatmulTemplate(BaseTemplate):
    M: int = None
    N: int = None
    K: int = None
    trans_A: bool = False
    trans_B: bool = True
    in_dtype: str = "float16"
    out_dtype: str = "float16"
    accum_dtype: str = "float16"
    with_bias: bool = False

    def check_parameters(self):
        check_positive_ints(self, "M", "N", "K")
        check_dtypes(self, "in_dtype", "out_dtype", "accum_dtype")

    def initialize_function(self):
        return gemm_kernel(self.M, self.N, self.K, self.trans_A, self.trans_B, self.in_dtype,
                           self.out_dtype, self.accum_dtype, self.with_bias)

    def get_hardware_aware_configs(self, arch: TileDevice = None, topk: int = 10):
        return gemm_hints(arch or self.arch, self.M, self.N, self.K, self.in_dtype,
                          self.accum_dtype, self.out_dtype, self.trans_B, topk)
