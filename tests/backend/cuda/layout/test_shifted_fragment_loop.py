"""A T.Parallel loop reading a shifted window of a register accumulator
(`X[i, j] = acc[i + c, j]` under a guard, as in split stores of a gemm result) keeps the
accumulator in registers: each thread runs the iterations whose element it holds."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import build

M, N, K, SPLIT = 64, 64, 32, 2


def split_store():
    @T.prim_func
    def k(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((M, K), "float16")
            b = T.alloc_shared((K, N), "float16")
            acc = T.alloc_fragment((M, N), "float32")
            part = T.alloc_shared((M // SPLIT, N), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, acc, clear_accum=True)
            for s in range(SPLIT):
                for i, j in T.Parallel(M, N):
                    if i < M // SPLIT:
                        part[i, j] = acc[i + s * (M // SPLIT), j]
                T.copy(part, C[s * (M // SPLIT):(s + 1) * (M // SPLIT), :])
    return k


@needs_nvrtc
def test_shifted_window_keeps_the_accumulator_in_registers():
    art = build(split_store())
    assert "* acc = reinterpret_cast" not in art.source   # not in shared memory
    assert "continue;" in art.source


def test_shifted_window_on_cpu():
    kern = tilelang.compile(split_store(), target="cpu")
    a = np.random.rand(M, K).astype(np.float16)
    b = np.random.rand(K, N).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    kern(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)


@pytest.mark.gpu
def test_shifted_window_on_gpu():
    import torch
    kern = tilelang.compile(split_store(), target="cuda")
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.zeros(M, N, device="cuda", dtype=torch.float32)
    kern(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
