"""Element-wise statements in T.vectorized / T.Parallel loops run V lanes at a time
(backend/cuda/ops/vector_compute.py): one vector load per operand that steps with the
loop, one load per vector for an operand whose index is the same over the vector
(`C[row, col // K]`), lane-wise arithmetic, one vector store."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.backend.cuda.host.nvrtc import nvrtc_available, sass
from tests.backend.cuda.helpers import build

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC not installed")


def scale_by_group(N, M, K, dtype="float32"):
    @T.prim_func
    def k(A: T.Tensor((N, M), dtype), B: T.Tensor((N, M), dtype), C: T.Tensor((N, M // K), dtype)):
        with T.Kernel(N // 128, threads=128) as bx:
            row = bx * 128 + T.get_thread_binding(0)
            for col in T.vectorized(M):
                B[row, col] = A[row, col] * C[row, col // K]
    return k


def parallel_axpy(N, dtype="float32"):
    @T.prim_func
    def k(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype), Z: T.Tensor((N,), dtype)):
        with T.Kernel(N // 512, threads=128) as bx:
            for i in T.Parallel(512):
                Z[bx * 512 + i] = X[bx * 512 + i] * 2.0 + Y[bx * 512 + i]
    return k


def block_level_fill():
    @T.prim_func
    def k(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=128):
            for i in T.vectorized(8):
                A[i] = T.infinity("float32")
    return k


def sequential_dependence():
    @T.prim_func
    def k(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.vectorized(4):
                A[i + 4 * T.get_thread_binding(0)] = A[4 * T.get_thread_binding(0)] + 1.0
    return k


def _ops(src_or_art):
    return sorted(set(re.findall(r"(LDG\S*|STG\S*)", sass(src_or_art.binary))))


@needs_nvrtc
@pytest.mark.parametrize("K,vec", [(4, "float4"), (8, "float4"), (2, "float2"), (6, "float2")])
def test_group_invariant_operand_is_read_once_per_vector(K, vec):
    art = build(scale_by_group(128, 384, K))
    assert f"const {vec} " in art.source and f"*reinterpret_cast<{vec}*>(&B[" in art.source
    width = 128 if vec == "float4" else 64
    ops = _ops(art)
    assert f"STG.E.{width}" in ops and any(o.startswith(f"LDG.E.{width}") for o in ops)


@needs_nvrtc
def test_parallel_elementwise_is_vectorized():
    art = build(parallel_axpy(4096))
    assert art.source.count("*reinterpret_cast<const float4*>") == 2
    assert "STG.E.128" in _ops(art)
    art = build(parallel_axpy(4096, "float16"))
    assert art.source.count("*reinterpret_cast<const uint4*>") == 2   # 8 halves a vector


@needs_nvrtc
def test_block_level_vector_store_runs_on_thread_0():
    src = build(block_level_fill()).source
    assert "if (tl_tid == 0) {" in src and "*reinterpret_cast<float4*>(&A[i]) = " in src


@needs_nvrtc
def test_a_lane_reading_an_earlier_lanes_store_stays_scalar():
    src = build(sequential_dependence()).source
    assert "float4" not in src


def test_cpu_reference():
    a = np.arange(128, dtype=np.float32)
    tilelang.compile(sequential_dependence(), target="cpu")(a)
    np.testing.assert_array_equal(a[:8], [1, 2, 2, 2, 5, 6, 6, 6])

    a = np.random.rand(128, 384).astype("float32")
    c = np.random.rand(128, 96).astype("float32")
    b = np.zeros_like(a)
    tilelang.compile(scale_by_group(128, 384, 4), target="cpu")(a, b, c)
    np.testing.assert_allclose(b, a * np.repeat(c, 4, axis=1), rtol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("K", [2, 4, 6, 8])
def test_group_invariant_operand_on_the_gpu(K):
    import torch
    a = torch.randn(128, 384, device="cuda")
    c = torch.randn(128, 384 // K, device="cuda")
    b = torch.zeros_like(a)
    tilelang.compile(scale_by_group(128, 384, K), target="cuda")(a, b, c)
    torch.testing.assert_close(b, a * c.repeat_interleave(K, dim=1), atol=0, rtol=0)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_parallel_elementwise_on_the_gpu(dtype):
    import torch
    t = getattr(torch, dtype)
    x, y = torch.randn(4096, device="cuda", dtype=t), torch.randn(4096, device="cuda", dtype=t)
    z = torch.zeros_like(x)
    tilelang.compile(parallel_axpy(4096, dtype), target="cuda")(x, y, z)
    torch.testing.assert_close(z, x * 2 + y, atol=1e-2 if dtype == "float16" else 1e-6, rtol=1e-3)


@pytest.mark.gpu
def test_block_level_fill_and_dependence_on_the_gpu():
    import torch
    a = torch.zeros(8, device="cuda")
    tilelang.compile(block_level_fill(), target="cuda")(a)
    assert torch.isinf(a).all()
    a = torch.arange(128, device="cuda", dtype=torch.float32)
    ref = a.clone().view(32, 4)
    ref[:] = ref[:, :1] + torch.tensor([1.0, 2.0, 2.0, 2.0], device="cuda")   # lanes 1-3 read lane 0's store
    tilelang.compile(sequential_dependence(), target="cuda")(a)
    torch.testing.assert_close(a, ref.view(-1))
