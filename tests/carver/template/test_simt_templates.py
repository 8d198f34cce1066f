"""GEMV, elementwise and general-reduction templates: reference kernels on the CPU, hints."""
import numpy as np
import pytest
import torch

import tilelang
from tilelang import carver
from tilelang.carver.arch import CUDA

ARCH = CUDA("cuda -arch=sm_90a")


def test_gemv():
    t = carver.GEMVTemplate(N=100, K=70, in_dtype="float16", out_dtype="float32",
                            accum_dtype="float32").with_arch(ARCH)
    kern = tilelang.compile(t.equivalent_function(), out_idx=[-1], target="cpu")
    a, b = torch.randn(1, 70).half(), torch.randn(100, 70).half()
    torch.testing.assert_close(kern(a, b), a.float() @ b.float().T, rtol=1e-3, atol=1e-3)
    assert t.recommend_hints(topk=20)


@pytest.mark.parametrize("shape", [[1024], [3, 5, 70]])
def test_elementwise(shape):
    t = carver.ElementwiseTemplate(shape=shape, dtype="float32").with_arch(ARCH)
    kern = tilelang.compile(t.equivalent_function(), out_idx=[-1], target="cpu")
    a = np.random.randn(*shape).astype(np.float32)
    np.testing.assert_allclose(kern(a), a + 1)
    assert t.recommend_hints(topk=20)


@pytest.mark.parametrize("structure,shape", [("SSR", [4, 6, 50]), ("SRS", [4, 50, 6]),
                                             ("SS", [5, 7]), ("RS", [33, 3])])
def test_general_reduction(structure, shape):
    t = carver.GeneralReductionTemplate(structure=structure, shape=shape, dtype="float32").with_arch(ARCH)
    kern = tilelang.compile(t.equivalent_function(), out_idx=[-1], target="cpu")
    a = np.random.randn(*shape).astype(np.float32)
    axes = tuple(i for i, c in enumerate(structure) if c == "R")
    np.testing.assert_allclose(kern(a), a.sum(axis=axes) if axes else a, rtol=1e-5, atol=1e-5)
    assert t.recommend_hints(topk=20)
