"""The CPU backend's narrow-float conversions round to nearest even, bit for bit
like numpy / ml_dtypes."""
import ml_dtypes
import numpy as np
import pytest

import tilelang
import tilelang.language as T


def _convert_kernel(n, src, dst):
    @T.prim_func
    def conv(A: T.Tensor((n,), src), B: T.Tensor((n,), dst)):
        with T.Kernel(T.ceildiv(n, 256)) as bx:
            for i in T.Parallel(256):
                if bx * 256 + i < n:
                    B[bx * 256 + i] = T.cast(A[bx * 256 + i], dst)
    return tilelang.compile(conv, out_idx=[-1], target="cpu")


def _samples(n=20000, seed=0):
    rng = np.random.default_rng(seed)
    x = np.concatenate([
        rng.standard_normal(n).astype(np.float32) * np.float32(10.0) ** rng.integers(-8, 6, n).astype(np.float32),
        np.array([0.0, -0.0, np.inf, -np.inf, 65504.0, 65520.0, 6e-8, 3e-8, 1e-45], np.float32),
    ])
    return x.astype(np.float32)


def test_float_to_half_matches_numpy():
    x = _samples()
    k = _convert_kernel(x.size, "float32", "float16")
    np.testing.assert_array_equal(k(x).view(np.uint16), x.astype(np.float16).view(np.uint16))


def test_half_to_float_is_exact():
    h = np.arange(0, 65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    h = h[~np.isnan(h)]
    k = _convert_kernel(h.size, "float16", "float32")
    np.testing.assert_array_equal(k(h), h.astype(np.float32))


def test_float_to_bfloat16_matches_ml_dtypes():
    x = _samples(seed=1)
    k = _convert_kernel(x.size, "float32", "bfloat16")
    out = k(x)
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(out.view(np.uint16), x.astype(ml_dtypes.bfloat16).view(np.uint16))


@pytest.mark.parametrize("name,maxv", [("float8_e4m3fn", 448.0), ("float8_e5m2", 57344.0)])
def test_float_to_fp8_matches_ml_dtypes_in_range(name, maxv):
    x = _samples(seed=2)
    x = x[np.isfinite(x) & (np.abs(x) <= maxv)]
    k = _convert_kernel(x.size, "float32", name)
    out = k(x)
    ref = x.astype(getattr(ml_dtypes, name))
    np.testing.assert_array_equal(out.view(np.uint8), ref.view(np.uint8))


@pytest.mark.parametrize("name,maxv", [("float8_e4m3fn", 448.0), ("float8_e5m2", 57344.0)])
def test_fp8_saturates(name, maxv):
    x = np.array([1e6, -1e6, maxv * 1.2], np.float32)
    out = _convert_kernel(x.size, "float32", name)(x).astype(np.float32)
    np.testing.assert_array_equal(out, [maxv, -maxv, maxv])


def test_fp8_to_float_is_exact():
    for name in ("float8_e4m3fn", "float8_e5m2"):
        v = np.arange(256, dtype=np.uint8).view(getattr(ml_dtypes, name))
        v = v[np.isfinite(v.astype(np.float32))]
        out = _convert_kernel(v.size, name, "float32")(v)
        np.testing.assert_array_equal(out, v.astype(np.float32))


def test_float_to_e8m0_rounds_up_and_saturates():
    # e8m0 holds 2^(v - 127): conversions round toward +inf and saturate (CUDA's
    # __nv_cvt_float2_to_e8m0x2(..., cudaRoundPosInf, __NV_SATFINITE)); inf used to give 127;
    # the sign is dropped (CUDA and torch convert |x|: -2.0 is 2^1)
    x = np.array([1.0, 1.5, 0.25, 3e38, np.inf, 0.0, -2.0, np.nan], np.float32)
    k = _convert_kernel(x.size, "float32", "float8_e8m0fnu")
    assert k(x).view(np.uint8).tolist() == [127, 128, 125, 254, 254, 0, 128, 255]
