"""Dtypes: bfloat16, float8_e4m3fn, float8_e5m2 (torch tensors and numpy ml_dtypes arrays),
int8/int16/int32/int64/uint8, bool; outputs come back in the caller's array type and dtype."""
import ml_dtypes
import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T

L = 128

FLOATS = {
    # name: (torch dtype, numpy/ml_dtypes dtype)
    "float16": (torch.float16, np.float16),
    "bfloat16": (torch.bfloat16, ml_dtypes.bfloat16),
    "float8_e4m3fn": (torch.float8_e4m3fn, ml_dtypes.float8_e4m3fn),
    "float8_e5m2": (torch.float8_e5m2, ml_dtypes.float8_e5m2),
    "float32": (torch.float32, np.float32),
    "float64": (torch.float64, np.float64),
}
INTS = {
    "int8": (torch.int8, np.int8),
    "int16": (torch.int16, np.int16),
    "int32": (torch.int32, np.int32),
    "int64": (torch.int64, np.int64),
    "uint8": (torch.uint8, np.uint8),
}


def _scale_kernel(dtype):
    # C = A * 2 computed in float32, plus a verbatim copy D = A
    @T.prim_func
    def k(A: T.Tensor((L,), dtype), C: T.Tensor((L,), dtype), D: T.Tensor((L,), dtype),
          F: T.Tensor((L,), "float32")):
        with T.Kernel(2, threads=64) as bx:
            S = T.alloc_shared((64,), dtype)
            T.copy(A[bx * 64], S)
            T.copy(S, D[bx * 64])
            for i in T.Parallel(64):
                F[bx * 64 + i] = T.cast(S[i], "float32")
                C[bx * 64 + i] = T.cast(T.cast(S[i], "float32") * 2, dtype)
    return tilelang.compile(k, out_idx=[1, 2, 3], target="cpu")


@pytest.mark.parametrize("dtype", list(FLOATS))
@pytest.mark.parametrize("kind", ["torch", "numpy"])
def test_float_dtypes(dtype, kind):
    tdt, ndt = FLOATS[dtype]
    kern = _scale_kernel(dtype)
    x = np.clip(np.random.randn(L) * 4, -100, 100).astype(np.float32)
    if kind == "torch":
        a = torch.from_numpy(x).to(tdt)
        c, d, f = kern(a)
        for out in (c, d):
            assert isinstance(out, torch.Tensor) and out.dtype == tdt and out.shape == (L,)
        assert f.dtype == torch.float32
        torch.testing.assert_close(f, a.float(), rtol=0, atol=0)
        assert torch.equal(d.view(torch.uint8) if d.element_size() == 1 else d, 
                           a.view(torch.uint8) if a.element_size() == 1 else a)
        torch.testing.assert_close(c.float(), (a.float() * 2).to(tdt).float(), rtol=0, atol=0)
    else:
        a = x.astype(ndt)
        c, d, f = kern(a)
        for out in (c, d):
            assert isinstance(out, np.ndarray) and out.dtype == np.dtype(ndt) and out.shape == (L,)
        np.testing.assert_array_equal(f, a.astype(np.float32))
        np.testing.assert_array_equal(d.view(np.uint8) if d.itemsize == 1 else d,
                                      a.view(np.uint8) if a.itemsize == 1 else a)
        np.testing.assert_array_equal(c.astype(np.float32), (a.astype(np.float32) * 2).astype(ndt).astype(np.float32))


def test_fp8_saturating_cases_match_ml_dtypes():
    # values near the fp8 range limits and ties: conversion from float32 must round like ml_dtypes
    vals = np.array([0, 1, -1, 0.5, 1.0625, 1.125, 1.1875, 240, 448, 300, 0.001, -0.013671875, 57344, 3.3],
                    np.float32)

    @T.prim_func
    def k(A: T.Tensor((16,), "float32"), C: T.Tensor((16,), "float8_e4m3fn"), D: T.Tensor((16,), "float8_e5m2")):
        with T.Kernel(1, threads=16) as bx:
            for i in T.Parallel(16):
                C[i] = A[i]
                D[i] = A[i]
    kern = tilelang.compile(k, out_idx=[1, 2], target="cpu")
    a = np.zeros(16, np.float32)
    a[:len(vals)] = vals
    a[len(vals):] = [2.75, -6.5][:16 - len(vals)]
    # keep within the finite range of e4m3fn (no NaN comparisons)
    a4 = np.clip(a, -448, 448)
    c, d = kern(a4)
    np.testing.assert_array_equal(c.astype(np.float32), a4.astype(ml_dtypes.float8_e4m3fn).astype(np.float32))
    np.testing.assert_array_equal(d.astype(np.float32), a4.astype(ml_dtypes.float8_e5m2).astype(np.float32))


@pytest.mark.parametrize("dtype", list(INTS))
@pytest.mark.parametrize("kind", ["torch", "numpy"])
def test_int_dtypes(dtype, kind):
    tdt, ndt = INTS[dtype]
    info = np.iinfo(ndt)

    @T.prim_func
    def k(A: T.Tensor((L,), dtype), B: T.Tensor((L,), dtype), C: T.Tensor((L,), dtype),
          M: T.Tensor((L,), dtype)):
        with T.Kernel(2, threads=64) as bx:
            F = T.alloc_fragment((64,), dtype)
            T.copy(A[bx * 64], F)
            for i in T.Parallel(64):
                C[bx * 64 + i] = F[i] + B[bx * 64 + i]
                M[bx * 64 + i] = T.max(F[i], B[bx * 64 + i])
    kern = tilelang.compile(k, out_idx=[2, 3], target="cpu")
    lo, hi = max(info.min, -1000) // 2, min(info.max, 1000) // 2
    a = np.random.randint(lo, hi + 1, L).astype(ndt)
    b = np.random.randint(lo, hi + 1, L).astype(ndt)
    if dtype == "int64":
        a[0] = 2 ** 40  # a value that does not fit in 32 bits
        b[0] = 3
    if kind == "torch":
        c, m = kern(torch.from_numpy(a), torch.from_numpy(b))
        assert isinstance(c, torch.Tensor) and c.dtype == tdt
        c, m = c.numpy(), m.numpy()
    else:
        c, m = kern(a, b)
        assert isinstance(c, np.ndarray) and c.dtype == np.dtype(ndt)
    np.testing.assert_array_equal(c, (a + b).astype(ndt))
    np.testing.assert_array_equal(m, np.maximum(a, b))


def test_uint8_wraparound():
    @T.prim_func
    def k(A: T.Tensor((L,), "uint8"), C: T.Tensor((L,), "uint8")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(L):
                C[i] = A[i] + T.uint8(200)
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.random.randint(0, 256, L).astype(np.uint8)
    np.testing.assert_array_equal(kern(a), (a.astype(np.int64) + 200) % 256)


@pytest.mark.parametrize("kind", ["torch", "numpy"])
def test_bool(kind):
    @T.prim_func
    def k(A: T.Tensor((L,), "float32"), Mk: T.Tensor((L,), "bool"), C: T.Tensor((L,), "float32"),
          P: T.Tensor((L,), "bool")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(L):
                C[i] = T.if_then_else(Mk[i], A[i], T.float32(0))
                P[i] = A[i] > 0
    kern = tilelang.compile(k, out_idx=[2, 3], target="cpu")
    a = np.random.randn(L).astype(np.float32)
    mk = np.random.rand(L) > 0.5
    if kind == "torch":
        c, p = kern(torch.from_numpy(a), torch.from_numpy(mk))
        assert p.dtype == torch.bool
        c, p = c.numpy(), p.numpy()
    else:
        c, p = kern(a, mk)
        assert p.dtype == np.bool_
    np.testing.assert_array_equal(c, np.where(mk, a, 0))
    np.testing.assert_array_equal(p, a > 0)


def test_dtype_mismatch_is_clear_error():
    @T.prim_func
    def k(A: T.Tensor((L,), "float16"), C: T.Tensor((L,), "float16")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(L):
                C[i] = A[i]
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    with pytest.raises(tilelang.TileLangError, match="float16"):
        kern(np.zeros(L, np.float32))


def test_dtype_names_and_aliases():
    assert T.float is T.float32 and T.half is T.float16
    assert T.float8_e4m3 is T.float8_e4m3fn
    assert T.dtype("bfloat16") is T.bfloat16
    for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2"):
        assert str(getattr(T, name)) == name


def test_dtype_constructor_takes_torch_and_numpy_dtypes():
    import numpy as np
    import torch
    import tilelang.language as T
    assert T.dtype(torch.float16) == T.float16
    assert T.dtype(np.float32) == T.float32
    assert T.dtype(T.bfloat16) is T.bfloat16


@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_infinity_in_fp8_e5m2_is_infinite(target):
    # the conversion from float saturates (satfinite); the literal is e5m2's own infinity
    import torch

    @T.prim_func
    def k(A: T.Tensor((3,), "float8_e5m2")):
        with T.Kernel(1, threads=32):
            A[0] = T.infinity("float8_e5m2")
            A[1] = -T.infinity("float8_e5m2")
            A[2] = T.cast(1e10, "float8_e5m2")
    out = tilelang.compile(k, out_idx=-1, target=target)().float().cpu().tolist()
    assert out == [float("inf"), float("-inf"), 57344.0]
