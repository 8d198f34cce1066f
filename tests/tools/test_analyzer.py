"""Analyzer: FLOPs and global bytes counted from the tile IR, and the roofline time."""
import pytest

import tilelang.language as T
from tilelang.carver.arch import CUDA
from tilelang.tools import Analyzer
from tilelang.tools.analyzer import DEVICES, DeviceFigures


def gemm(M=256, N=128, K=512, bm=64, bn=64, bk=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            As = T.alloc_shared((bm, bk), "float16")
            Bs = T.alloc_shared((bn, bk), "float16")
            Cl = T.alloc_fragment((bm, bn), "float32")
            T.clear(Cl)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], As)
                T.copy(B[bx * bn, k * bk], Bs)
                T.gemm(As, Bs, Cl, transpose_B=True)
            for i, j in T.Parallel(bm, bn):
                C[by * bm + i, bx * bn + j] = Cl[i, j]
    return main


def test_gemm_flops_and_bytes():
    M, N, K, bm, bn, bk = 256, 128, 512, 64, 64, 32
    r = Analyzer.analysis(gemm(M, N, K, bm, bn, bk), "H200")
    assert r.total_flops == 2 * M * N * K
    blocks, iters = (M // bm) * (N // bn), K // bk
    loads = blocks * iters * (bm * bk + bn * bk) * 2     # the A and B tiles, fp16
    stores = M * N * 4                                    # C, fp32, one element store each
    assert r.total_global_bytes == loads + stores
    fig = DEVICES["H200"]
    assert r.compute_time == pytest.approx(r.total_flops / (fig.tensor_tflops * 1e12))
    assert r.memory_time == pytest.approx(r.total_global_bytes / (fig.bandwidth_GBps * 1e9))
    assert r.estimated_time == max(r.compute_time, r.memory_time)
    assert r.bound == "memory" and r.device == "H200" and r.expected_bandwidth_GBps == 4800.0


def test_devices_and_call_shapes():
    f = gemm()
    # the published call shape with a carver device: sm_90 without a named GPU is an H100
    r = Analyzer(f, CUDA("cuda -arch=sm_90a")).ir_pass().calculate()
    assert r.device in ("H100", "H200")
    custom = Analyzer.analysis(f, DeviceFigures("toy", 0.001, 1000.0))
    assert custom.bound == "compute" and custom.estimated_time == pytest.approx(custom.total_flops / 1e9)
    with pytest.raises(ValueError, match="unknown device"):
        Analyzer.analysis(f, "Z80")
    with pytest.raises(TypeError, match="PrimFunc"):
        Analyzer(42, "H100")


def test_eager_get_tir_without_tensors_as_the_published_example_calls_it():
    import tilelang
    M = N = K = 256

    @tilelang.jit
    def kernel(A, B, block_M=None, block_N=None, block_K=None):
        A: T.Tensor((M, K), T.float16)
        B: T.Tensor((N, K), T.float16)
        C = T.empty((M, N), T.float16)
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            As = T.alloc_shared((block_M, block_K), T.float16)
            Bs = T.alloc_shared((block_N, block_K), T.float16)
            Cl = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(Cl)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], As)
                T.copy(B[bx * block_N, k * block_K], Bs)
                T.gemm(As, Bs, Cl, transpose_B=True)
            T.copy(Cl, C[by * block_M, bx * block_N])
        return C

    r = Analyzer.analysis(kernel.get_tir(block_M=64, block_N=64, block_K=32), CUDA("cuda -arch=sm_90a"))
    assert r.total_flops == 2 * M * N * K
