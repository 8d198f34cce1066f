"""Reductions of per-thread arrays (backend/cuda/ops/local_reduce.py) and 16-bit elements
combined two at a time (ops/reduce_pairs.py, include/tl_cuda/reduce_pair.h)."""
import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build, sass_ops

OPS = {"sum": T.reduce_sum, "max": T.reduce_max, "min": T.reduce_min, "abssum": T.reduce_abssum,
       "absmax": T.reduce_absmax}


def _per_thread_kernel(kind, dt, threads, nan_propagate=False):
    """Every thread reduces its own 8x4 array over dim 0 and writes its 4 results."""
    kw = {"nan_propagate": True} if nan_propagate else {}

    @T.prim_func
    def k(A: T.Tensor((threads, 8, 4), dt), B: T.Tensor((threads, 4), dt)):
        with T.Kernel(1, threads=threads) as bx:
            tx = T.get_thread_binding()
            src = T.alloc_local((8, 4), dt)
            dst = T.alloc_local((4,), dt)
            for i in T.serial(8):
                for j in T.serial(4):
                    src[i, j] = A[tx, i, j]
            OPS[kind](src, dst, dim=0, **kw)
            for j in T.serial(4):
                B[tx, j] = dst[j]
    return k


def _ref(kind, a, dim):
    x = a.float()
    r = {"sum": lambda: x.sum(dim), "max": lambda: x.amax(dim), "min": lambda: x.amin(dim),
         "abssum": lambda: x.abs().sum(dim), "absmax": lambda: x.abs().amax(dim)}[kind]()
    return r.to(a.dtype)


def _run(target, kind, dt, threads=128):
    torch.manual_seed(0)
    kern = tilelang.compile(_per_thread_kernel(kind, dt, threads), out_idx=-1, target=target)
    a = torch.randn(threads, 8, 4).to(getattr(torch, dt)).to(target)
    torch.testing.assert_close(kern(a), _ref(kind, a, 1), atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32"])
def test_per_thread_reduce_cpu(kind, dt):
    _run("cpu", kind, dt)


# every thread of a 128-thread block reduced its own array: on the GPU the warps used to
# split the outputs among themselves (each thread got one of them)
@pytest.mark.gpu
@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32"])
def test_per_thread_reduce_gpu(kind, dt):
    _run("cuda", kind, dt)


@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_per_thread_nan(kind, target):
    """A NaN is skipped by default and wins with nan_propagate=True (pairs as scalars)."""
    a = torch.arange(128 * 32, dtype=torch.float32).reshape(128, 8, 4).to(torch.float16).to(target)
    a[3, 5, 2] = float("nan")
    plain = tilelang.compile(_per_thread_kernel(kind, "float16", 128), out_idx=-1, target=target)(a)
    nan = tilelang.compile(_per_thread_kernel(kind, "float16", 128, True), out_idx=-1, target=target)(a)
    assert not torch.isnan(plain).any()
    assert torch.isnan(nan[3, 2]) and torch.isnan(nan).sum() == 1


@pytest.mark.parametrize("kind,fn", [("sum", "tl::add2"), ("max", "tl::max2"), ("min", "tl::min2"),
                                     ("absmax", "tl::max2"), ("abssum", "tl::add2")])
def test_per_thread_pairs_in_source(kind, fn):
    src = build(_per_thread_kernel(kind, "float16", 1)).source
    assert fn in src
    if kind in ("sum", "abssum"):   # 16-bit sums accumulate in float32: float pairs
        assert "float2 tl_p" in src and "tl::to_float2" in src


def test_nan_pairs_use_nan_intrinsics():
    src = build(_per_thread_kernel("max", "bfloat16", 1, True)).source
    assert "tl::max2_nan" in src and "__hmax_nan(" in src


@needs_sass
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_per_thread_max_is_packed_in_sass(dt, arch):
    ops = sass_ops(build(_per_thread_kernel("max", dt, 1), arch))
    assert ops["HMNMX2"] + ops["VHMNMX"] >= 2, ops   # no per-element HMNMX2 of .H0_H0 halves only
    assert ops["HMNMX2"] + ops["VHMNMX"] <= 20, ops   # 4 outputs of 8 elements: pairs, not 32 maxima
    assert ops["LDL"] == 0 and ops["STL"] == 0       # the arrays stay in registers


def _tile_kernel(kind, dt, nan_propagate):
    @T.prim_func
    def k(A: T.Tensor((128, 128), dt), B: T.Tensor((128,), dt)):
        with T.Kernel(1, threads=256):
            src = T.alloc_fragment((128, 128), dt)
            dst = T.alloc_fragment((128,), dt)
            T.copy(A, src)
            OPS[kind](src, dst, dim=1, nan_propagate=nan_propagate)
            T.copy(dst, B)
    return k


@pytest.mark.parametrize("kind,dt,fn", [("max", "float16", "tl::max2_nan"), ("min", "bfloat16", "tl::min2_nan"),
                                        ("absmax", "float16", "tl::max2_nan")])
def test_register_tile_pairs_nan(kind, dt, fn):
    src = build(_tile_kernel(kind, dt, True)).source
    assert fn in src and ("MaxOpNan" in src or "MinOpNan" in src)


@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("kind", ["max", "min", "absmax"])
@pytest.mark.parametrize("nan_propagate", [False, True])
def test_register_tile_pairs_results(target, dt, kind, nan_propagate):
    torch.manual_seed(1)
    a = torch.randn(128, 128).to(getattr(torch, dt)).to(target)
    a[5, 77] = float("nan")
    b = tilelang.compile(_tile_kernel(kind, dt, nan_propagate), out_idx=-1, target=target)(a)
    ref = _ref(kind, torch.where(torch.isnan(a), torch.full_like(a, {"max": -1e4, "min": 1e4, "absmax": 0.0}[kind]), a), 1)
    if nan_propagate:
        ref[5] = float("nan")
    torch.testing.assert_close(b, ref, atol=0, rtol=0, equal_nan=True)
