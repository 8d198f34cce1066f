"""`T.vectorized` copy loops become vector loads/stores where alignment provably holds
(ops/vector_copy.py), on the stride-1 dimension of strided tensors too; elsewhere they stay
element by element."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.helpers import build


def strided_copy(N, M, stride_a, stride_b):
    @T.prim_func
    def k(A: T.StridedTensor[(N, M), (1, stride_a), T.float32],
          B: T.StridedTensor[(N, M), (1, stride_b), T.float32]):
        with T.Kernel(M // 128, threads=128) as bx:
            tx = T.get_thread_binding(0)
            col = bx * 128 + tx
            for row in T.vectorized(N):
                B[row, col] = A[row, col]
    return k


@pytest.mark.parametrize("sa,sb,vec", [(128, 128, "float4"), (130, 132, "float2"), (132, 136, "float4"),
                                       (129, 128, None)])
def test_vector_width_follows_the_strides(sa, sb, vec):
    src = build(strided_copy(128, 128, sa, sb)).source
    if vec:
        assert f"reinterpret_cast<{vec}*>" in src
    else:
        assert "reinterpret_cast<float" not in src and "reinterpret_cast<uint" not in src


def test_strided_copy_on_the_cpu_reference():
    base_a = np.random.rand(128, 132).astype("float32")
    base_b = np.zeros((128, 136), "float32")
    a = np.lib.stride_tricks.as_strided(base_a, (128, 128), (4, 132 * 4))
    b = np.lib.stride_tricks.as_strided(base_b, (128, 128), (4, 136 * 4))
    k = tilelang.compile(strided_copy(128, 128, 132, 136), target="cpu")
    k(a, b)
    np.testing.assert_array_equal(a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("sa,sb", [(128, 128), (130, 132), (129, 128)])
def test_strided_copy_on_the_gpu(sa, sb):
    torch = pytest.importorskip("torch")
    base_a = torch.randn(sa, 128, device="cuda")
    base_b = torch.zeros(sb, 128, device="cuda")
    a = torch.as_strided(base_a, (128, 128), (1, sa))
    b = torch.as_strided(base_b, (128, 128), (1, sb))
    tilelang.compile(strided_copy(128, 128, sa, sb), target="cuda")(a, b)
    torch.testing.assert_close(a, b, atol=0, rtol=0)


def _region_alias():
    @T.prim_func
    def k(A: T.Tensor((16, 16), "float32")):
        for _bx in T.thread_binding(1, thread="blockIdx.x"):
            for _tx in T.thread_binding(128, thread="threadIdx.x"):
                b = A[0, 0:4]
                A[0, 4:8] = b
    return k


def test_a_named_region_is_one_vector_variable():
    """`b = A[0, 0:4]; A[0, 4:8] = b`: one 16-byte load into the float4 `b`, one store."""
    src = build(_region_alias()).source
    assert "float4 b = *reinterpret_cast<const float4*>(&A[" in src
    assert "*reinterpret_cast<float4*>(&A[(i0 + 4)]) = b;" in src


def test_a_named_region_on_the_cpu_reference():
    a = np.arange(256, dtype=np.float32).reshape(16, 16)
    ref = a.copy()
    ref[0, 4:8] = ref[0, 0:4]
    tilelang.compile(_region_alias(), target="cpu")(a)
    np.testing.assert_array_equal(a, ref)


def gemv_tile(N=1024, K=1024, vec=8, offset=0):
    """A thread's row strip of a GEMV (the published fp16xint4 GEMV's shape): its slice of
    x and of a row of W into per-thread arrays, then a dot product."""
    @T.prim_func
    def k(X: T.Tensor((K,), "float16"), W: T.Tensor((N, K), "float16"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(N, threads=32) as bx:
            tx = T.get_thread_binding(0)
            xl = T.alloc_local((vec,), "float16")
            wl = T.alloc_local((vec,), "float16")
            acc = T.alloc_local((1,), "float32")
            acc[0] = 0.0
            for ko in T.serial(K // (32 * vec)):
                for v in T.vectorized(vec):
                    xl[v] = X[ko * 32 * vec + tx * vec + v]
                for v in T.vectorized(vec):
                    wl[v] = W[bx, ko * 32 * vec + tx * vec + v + offset]
                for v in T.serial(vec):
                    acc[0] += T.cast(xl[v], "float32") * T.cast(wl[v], "float32")
            for off in [16, 8, 4, 2, 1]:
                acc[0] += T.shfl_xor(acc[0], off)
            if tx == 0:
                Y[bx] = acc[0]
    return k


def test_per_thread_arrays_take_whole_vectors():
    src = build(gemv_tile()).source
    assert "__align__(16) half xl[8];" in src and "__align__(16) half wl[8];" in src
    assert "*reinterpret_cast<uint4*>(&xl[v]) = *reinterpret_cast<const uint4*>(&X[" in src
    assert "*reinterpret_cast<uint4*>(&wl[v_1]) = *reinterpret_cast<const uint4*>(&W[" in src
    # a misaligned source stays element by element
    src = build(gemv_tile(N=64, K=1024 + 1, offset=1)).source
    assert "&wl[v_1]) = *reinterpret_cast" not in src and "half wl[8];" in src


@pytest.mark.gpu
def test_gemv_with_vector_loads_into_registers():
    import torch
    kern = tilelang.compile(gemv_tile(), target="cuda")
    x = torch.randn(1024, dtype=torch.float16, device="cuda")
    w = torch.randn(1024, 1024, dtype=torch.float16, device="cuda")
    y = torch.empty(1024, dtype=torch.float32, device="cuda")
    kern(x, w, y)
    torch.testing.assert_close(y, w.float() @ x.float(), rtol=1e-3, atol=1e-2)
