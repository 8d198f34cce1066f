"""Scalar math: T.ceildiv, T.max/min, T.if_then_else, T.infinity, T.cast and the
elementwise intrinsics (exp, log, ..., and the fast `T.__exp` forms) against numpy."""
import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T

L = 256


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name -> (T function, numpy reference, input generator)
POS = lambda: np.random.rand(L).astype(np.float32) * 10 + 0.01  # noqa: E731
ANY = lambda: (np.random.randn(L) * 3).astype(np.float32)  # noqa: E731
SMALL = lambda: (np.random.randn(L) * 2).astype(np.float32)  # noqa: E731
UNARY = {
    "exp": (lambda x: T.exp(x), np.exp, SMALL),
    "exp2": (lambda x: T.exp2(x), np.exp2, SMALL),
    "log": (lambda x: T.log(x), np.log, POS),
    "log2": (lambda x: T.log2(x), np.log2, POS),
    "log10": (lambda x: T.log10(x), np.log10, POS),
    "rsqrt": (lambda x: T.rsqrt(x), lambda x: 1 / np.sqrt(x), POS),
    "sqrt": (lambda x: T.sqrt(x), np.sqrt, POS),
    "tanh": (lambda x: T.tanh(x), np.tanh, ANY),
    "sigmoid": (lambda x: T.sigmoid(x), _sigmoid, ANY),
    "abs": (lambda x: T.abs(x), np.abs, ANY),
    "floor": (lambda x: T.floor(x), np.floor, ANY),
    "ceil": (lambda x: T.ceil(x), np.ceil, ANY),
    "sin": (lambda x: T.sin(x), np.sin, ANY),
    "cos": (lambda x: T.cos(x), np.cos, ANY),
    "erf": (lambda x: T.erf(x), lambda x: torch.erf(torch.from_numpy(x)).numpy(), ANY),
    "__exp": (lambda x: T.__exp(x), np.exp, SMALL),
    "__exp2": (lambda x: T.__exp2(x), np.exp2, SMALL),
    "__exp10": (lambda x: T.__exp10(x), lambda x: np.power(10.0, x), SMALL),
    "__log": (lambda x: T.__log(x), np.log, POS),
    "__log2": (lambda x: T.__log2(x), np.log2, POS),
    "__log10": (lambda x: T.__log10(x), np.log10, POS),
    "__tanh": (lambda x: T.__tanh(x), np.tanh, ANY),
    "__sin": (lambda x: T.__sin(x), np.sin, ANY),
    "__cos": (lambda x: T.__cos(x), np.cos, ANY),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_intrinsics(name):
    fn, ref, gen = UNARY[name]

    @T.prim_func
    def k(A: T.Tensor((L,), "float32"), C: T.Tensor((L,), "float32")):
        with T.Kernel(L // 64, threads=64) as bx:
            for i in T.Parallel(64):
                C[bx * 64 + i] = fn(A[bx * 64 + i])
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = gen()
    np.testing.assert_allclose(kern(a), ref(a).astype(np.float32), rtol=1e-5, atol=1e-6)


def test_abs_integer():
    @T.prim_func
    def k(A: T.Tensor((L,), "int32"), C: T.Tensor((L,), "int32")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(L):
                C[i] = T.abs(A[i])
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.random.randint(-1000, 1000, L).astype(np.int32)
    np.testing.assert_array_equal(kern(a), np.abs(a))


@pytest.mark.parametrize("a,b", [(10, 3), (9, 3), (1, 64), (0, 5)])
def test_ceildiv_python_and_runtime(a, b):
    assert T.ceildiv(a, b) == -(-a // b)

    @T.prim_func
    def k(X: T.Tensor((2,), "int32"), C: T.Tensor((2,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            C[0] = T.ceildiv(X[0], X[1])
            C[1] = T.ceildiv(X[0], b)
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    np.testing.assert_array_equal(kern(np.array([a, b], np.int32)), [-(-a // b)] * 2)


def test_max_min_if_then_else_infinity():
    @T.prim_func
    def k(A: T.Tensor((L,), "float32"), B: T.Tensor((L,), "float32"), C: T.Tensor((5, L), "float32")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(L):
                C[0, i] = T.max(A[i], B[i])
                C[1, i] = T.min(A[i], B[i], 0.5)
                C[2, i] = T.if_then_else(A[i] > B[i], A[i] - B[i], T.float32(0))
                C[3, i] = T.if_then_else(A[i] > 0, T.infinity("float32"), -T.infinity(T.float32))
                C[4, i] = T.max(A[i], -T.infinity("float32"))
    kern = tilelang.compile(k, out_idx=[2], target="cpu")
    a = np.random.randn(L).astype(np.float32)
    b = np.random.randn(L).astype(np.float32)
    c = kern(a, b)
    np.testing.assert_array_equal(c[0], np.maximum(a, b))
    np.testing.assert_array_equal(c[1], np.minimum(np.minimum(a, b), 0.5))
    np.testing.assert_allclose(c[2], np.where(a > b, a - b, 0), rtol=1e-6, atol=1e-5)
    np.testing.assert_array_equal(c[3], np.where(a > 0, np.inf, -np.inf))
    np.testing.assert_array_equal(c[4], a)


def test_python_level_max_min():
    # T.max / T.min on Python ints fold at compile time
    assert T.max(3, 7) == 7 and T.min(3, 7) == 3
    assert T.if_then_else(True, 1, 2) == 1


@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("float32", "float16"), ("float32", "bfloat16"),
                                     ("int32", "float32"), ("float32", "int8"), ("int32", "int8")])
def test_cast(src, dst):
    tdt = {"float32": torch.float32, "int32": torch.int32, "float16": torch.float16,
           "bfloat16": torch.bfloat16, "int8": torch.int8}

    @T.prim_func
    def k(A: T.Tensor((L,), src), C: T.Tensor((L,), dst), D: T.Tensor((L,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(L):
                C[i] = T.cast(A[i], dst)
                D[i] = T.Cast("float32", T.cast(A[i], dst)) * 2
    kern = tilelang.compile(k, out_idx=[1, 2], target="cpu")
    if src == "int32":
        a = torch.randint(-100, 100, (L,), dtype=torch.int32)
    else:
        a = torch.randn(L) * 50
    c, d = kern(a)
    assert c.dtype == tdt[dst]
    ref = a.to(tdt[dst])
    torch.testing.assert_close(c, ref, rtol=0, atol=0)
    torch.testing.assert_close(d, ref.float() * 2, rtol=0, atol=0)


def test_float_integer_division_and_modulo():
    # `//` and `%` on integers follow Python (floor) semantics, also for negative values
    @T.prim_func
    def k(A: T.Tensor((L,), "int32"), C: T.Tensor((2, L), "int32")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(L):
                C[0, i] = A[i] // 7
                C[1, i] = A[i] % 7
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.random.randint(-100, 100, L).astype(np.int32)
    c = kern(a)
    np.testing.assert_array_equal(c[0], a // 7)
    np.testing.assert_array_equal(c[1], a % 7)


def test_pow_and_expr_arithmetic():
    @T.prim_func
    def k(A: T.Tensor((L,), "float32"), C: T.Tensor((L,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(L):
                C[i] = T.pow(A[i], 1.5) + A[i] / 4 - 1.0
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.random.rand(L).astype(np.float32) * 4
    np.testing.assert_allclose(kern(a), np.power(a, 1.5) + a / 4 - 1, rtol=1e-5, atol=1e-6)


def test_math_on_fp16_values():
    # intrinsics applied to half values compute in float and store back as half
    @T.prim_func
    def k(A: T.Tensor((L,), "float16"), C: T.Tensor((L,), "float16")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(L):
                C[i] = T.exp(A[i]) * T.sigmoid(A[i])
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = torch.randn(L).half()
    ref = (torch.exp(a.float()) * torch.sigmoid(a.float())).half()
    torch.testing.assert_close(kern(a), ref, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool", "float8_e4m3fn"])
def test_fast_math_rejects_non_float_inputs(dtype):
    # the published package raises TypeError here; we compiled an integer __expf before
    from tilelang.compat.tvm import tirx
    with pytest.raises(TypeError, match=rf"T\.__exp only supports floating-point inputs, but got {dtype}"):
        T.__exp(tirx.Var("v", dtype))


def test_fast_math_on_doubles_is_exact_on_cuda():
    # __expf on a double would round it to float first
    @T.prim_func
    def k(A: T.Tensor((32,), "float64"), C: T.Tensor((32,), "float64")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(32):
                C[i] = T.__exp(A[i])
    src = tilelang.compile(k, target="cuda -arch=sm_90a").get_kernel_source()
    assert "__expf" not in src and "exp(" in src


def test_bit_scans_ffs_and_fns():
    @T.prim_func
    def k(A: T.Tensor((4,), "int64"), M: T.Tensor((4,), "uint32"), C: T.Tensor((4,), "int32"),
          D: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(4):
                C[i] = T.__ffs(A[i])
                D[i] = T.cast(T.__fns(M[i], 2, i - 1), "int32")
    kern = tilelang.compile(k, out_idx=[2, 3], target="cpu")
    a = np.array([0, 1, 0x80, 1 << 40], np.int64)
    m = np.array([0b10011, 0b1000, 0b111000, 0b110100], np.uint32)
    c, d = kern(a, m)
    np.testing.assert_array_equal(c, [0, 1, 8, 41])
    # PTX fns: offset -1 the first set bit at or below bit 2; 0 bit 2 itself when set;
    # 1, 2 the first and second set bits at or above bit 2
    np.testing.assert_array_equal(d, [1, -1, 3, 4])


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2", "float16"])
def test_clamp_keywords_and_8_bit_floats_compile_for_cuda(dtype):
    # the published keywords (min_val/max_val); 8-bit floats had no tl::max/min on CUDA
    @T.prim_func
    def k(A: T.Tensor((64,), dtype), B: T.Tensor((64,), dtype)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                B[i] = T.clamp(A[i], min_val=-1.0, max_val=1.0)
    tilelang.compile(k, target="cuda -arch=sm_90a")
    cpu = tilelang.compile(k, out_idx=[1], target="cpu")
    x = np.linspace(-3, 3, 64).astype(np.float32)
    np.testing.assert_allclose(cpu(x.astype(T.dtype(dtype).as_numpy())).astype(np.float32), np.clip(x, -1, 1),
                               atol=0.13)
