import numpy as np
import pytest
import torch

import tilelang
from tilelang.profiler import TensorSupplyType, do_bench
from tests.kernels import gemm_func


@pytest.fixture(scope="module")
def gemm():
    return tilelang.compile(gemm_func(M=96, N=64, K=64), out_idx=[-1], target="cpu")


def test_assert_allclose_passes_and_fails(gemm):
    prof = gemm.get_profiler(TensorSupplyType.Normal)
    prof.assert_allclose(lambda A, B: (A.float() @ B.float()).half(), atol=1e-2, rtol=1e-2)
    with pytest.raises(AssertionError, match="differ"):
        prof.assert_allclose(lambda A, B: (A.float() @ B.float() + 1).half(), atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("supply", list(TensorSupplyType))
def test_supply_types(gemm, supply):
    prof = gemm.get_profiler(supply)
    a, b = prof._get_inputs()
    assert a.shape == (96, 64) and a.dtype == torch.float16
    if supply == TensorSupplyType.Zero:
        assert float(a.abs().sum()) == 0
    if supply == TensorSupplyType.One:
        assert float(a.sum()) == a.numel()
    if supply == TensorSupplyType.Integer:
        assert torch.equal(a, a.round())


def test_do_bench_cpu(gemm):
    ms = gemm.get_profiler().do_bench(warmup=2, rep=5)
    assert 0 < ms < 10_000
    assert do_bench(lambda: sum(range(100)), warmup=1, rep=2, device="cpu") > 0
