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
