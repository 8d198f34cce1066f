"""Eager style: `@tilelang.jit` on a kernel body with T.const sizes, in-body T.Tensor
annotations, T.empty outputs; compiled once per distinct shape."""
import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T


@tilelang.jit(target="cpu")
def add_scale(A, B, scale=2.0, block=32):
    M, N = T.const("M, N")
    A: T.Tensor((M, N), T.float32)
    B: T.Tensor((M, N), T.float32)
    C = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
        for i, j in T.Parallel(block, block):
            if by * block + i < M and bx * block + j < N:
                C[by * block + i, bx * block + j] = (A[by * block + i, bx * block + j] +
                                                     B[by * block + i, bx * block + j]) * scale
    return C


@tilelang.jit(target="cpu")
def gemm_eager(A, B, block_M=32, block_N=32, block_K=16, dtype=T.float16):
    M, N, K = T.const("M N K")
    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    C = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_s = T.alloc_shared((block_M, block_K), dtype)
        B_s = T.alloc_shared((block_K, block_N), dtype)
        C_f = T.alloc_fragment((block_M, block_N), T.float32)
        T.clear(C_f)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
            T.copy(A[by * block_M, ko * block_K], A_s)
            T.copy(B[ko * block_K, bx * block_N], B_s)
            T.gemm(A_s, B_s, C_f)
        T.copy(C_f, C[by * block_M, bx * block_N])
    return C


@tilelang.jit(target="cpu")
def row_stats(X):
    R, L = T.const("R, L")
    X: T.Tensor((R, L), T.float32)
    S = T.empty((R,), T.float32)
    Mx = T.empty((R,), T.float32)
    with T.Kernel(R, threads=32) as r:
        t = T.alloc_fragment((L,), T.float32)
        s = T.alloc_fragment((1,), T.float32)
        m = T.alloc_fragment((1,), T.float32)
        T.copy(X[r, 0:L], t)
        T.reduce_sum(t, s, dim=0)
        T.reduce_max(t, m, dim=0)
        S[r] = s[0]
        Mx[r] = m[0]
    return S, Mx


def test_eager_elementwise_numpy_and_torch():
    a = np.random.randn(40, 70).astype(np.float32)
    b = np.random.randn(40, 70).astype(np.float32)
    c = add_scale(a, b)
    assert isinstance(c, np.ndarray) and c.shape == (40, 70)
    np.testing.assert_allclose(c, (a + b) * 2, rtol=1e-6)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    tc = add_scale(ta, tb, scale=0.5)
    assert isinstance(tc, torch.Tensor)
    torch.testing.assert_close(tc, (ta + tb) * 0.5)


@pytest.mark.parametrize("M,N,K", [(64, 64, 32), (50, 33, 40)])
def test_eager_gemm(M, N, K):
    a = torch.randn(M, K).half()
    b = torch.randn(K, N).half()
    torch.testing.assert_close(gemm_eager(a, b), a.float() @ b.float(), rtol=1e-3, atol=1e-3)


def test_eager_gemm_bf16_param():
    a = torch.randn(32, 16).bfloat16()
    b = torch.randn(16, 32).bfloat16()
    torch.testing.assert_close(gemm_eager(a, b, dtype=T.bfloat16), a.float() @ b.float(), rtol=1e-3, atol=1e-3)


def test_eager_multiple_outputs():
    x = np.random.randn(6, 24).astype(np.float32)
    s, m = row_stats(x)
    np.testing.assert_allclose(s, x.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(m, x.max(1))


def test_eager_cache_once_per_shape():
    @tilelang.jit(target="cpu")
    def neg(A):
        N = T.const("N")
        A: T.Tensor((N,), T.float32)
        B = T.empty((N,), T.float32)
        with T.Kernel(T.ceildiv(N, 16), threads=16) as bx:
            for i in T.Parallel(16):
                if bx * 16 + i < N:
                    B[bx * 16 + i] = -A[bx * 16 + i]
        return B

    assert len(neg.cache) == 0
    a = np.random.randn(48).astype(np.float32)
    np.testing.assert_array_equal(neg(a), -a)
    assert len(neg.cache) == 1
    entry = next(iter(neg.cache.values()))
    a2 = np.random.randn(48).astype(np.float32)
    np.testing.assert_array_equal(neg(a2), -a2)
    assert len(neg.cache) == 1  # same shape: no recompilation
    assert next(iter(neg.cache.values())) is entry
    np.testing.assert_array_equal(neg(torch.from_numpy(a2)).numpy(), -a2)  # torch tensor, same shape
    n_after_torch = len(neg.cache)
    b = np.random.randn(100).astype(np.float32)
    np.testing.assert_array_equal(neg(b), -b)  # new shape compiles anew
    assert len(neg.cache) == n_after_torch + 1
    np.testing.assert_array_equal(neg(a), -a)  # and the old one is still cached
    assert len(neg.cache) == n_after_torch + 1


def test_eager_cache_distinguishes_scalar_args():
    n0 = len(add_scale.cache)
    a = np.ones((8, 8), np.float32)
    np.testing.assert_array_equal(add_scale(a, a, scale=3.0), np.full((8, 8), 6, np.float32))
    np.testing.assert_array_equal(add_scale(a, a, scale=4.0), np.full((8, 8), 8, np.float32))
    assert len(add_scale.cache) == n0 + 2
    np.testing.assert_array_equal(add_scale(a, a, scale=3.0), np.full((8, 8), 6, np.float32))
    assert len(add_scale.cache) == n0 + 2


def test_eager_dtype_mismatch_error():
    a = np.zeros((8, 8), np.float16)
    with pytest.raises(tilelang.TileLangError, match="dtype"):
        add_scale(a, a)


def test_eager_shape_mismatch_error():
    with pytest.raises(tilelang.TileLangError):
        add_scale(np.zeros((8, 8), np.float32), np.zeros((8, 9), np.float32))


def test_eager_get_tir_and_compile():
    a = torch.randn(32, 16).half()
    b = torch.randn(16, 32).half()
    kern = gemm_eager.compile(a, b)
    torch.testing.assert_close(kern(a, b), a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    assert gemm_eager.get_tir(a, b) is not None


def test_eager_annotation_in_signature():
    # tensor annotations may also sit in the signature
    @tilelang.jit(target="cpu")
    def double(A: T.Tensor((16, 8), T.float32)):
        B = T.empty((16, 8), T.float32)
        with T.Kernel(1, threads=32) as bx:
            for i, j in T.Parallel(16, 8):
                B[i, j] = A[i, j] * 2
        return B

    a = np.random.randn(16, 8).astype(np.float32)
    np.testing.assert_array_equal(double(a), a * 2)


def test_classic_jit_factory_caches_per_args():
    @tilelang.jit(out_idx=[-1], target="cpu")
    def scale(N, s):
        @T.prim_func
        def k(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                for i in T.Parallel(N):
                    B[i] = A[i] * s
        return k

    k1 = scale(16, 2.0)
    assert scale(16, 2.0) is k1
    k2 = scale(16, 3.0)
    assert k2 is not k1
    a = np.random.randn(16).astype(np.float32)
    np.testing.assert_allclose(k1(a), a * 2, rtol=1e-6)
    np.testing.assert_allclose(k2(a), a * 3, rtol=1e-6)


def test_dtype_annotated_parameters_are_runtime_scalars():
    """`A: T.ptr` takes a tensor's address, `n: T.int32` a runtime count: one compile for
    every value (the published eager semantics)."""
    @tilelang.jit(target="cpu")
    def fill_prefix(A: T.ptr, n: T.int32, N: int = 64):
        X = T.make_tensor(A, (N,), T.float32)
        with T.Kernel(1, threads=32):
            for i in T.serial(N):
                if i < n:
                    X[i] = 1.0 * n

    a = torch.zeros(64)
    fill_prefix(a, 5)
    fill_prefix(a, 3)
    assert len(fill_prefix.cache) == 1
    ref = torch.zeros(64)
    ref[:5] = 5
    ref[:3] = 3
    assert torch.equal(a, ref)


def test_positional_calls_take_the_fast_key_and_still_specialize():
    @tilelang.jit(target="cpu")
    def scale_by(A, k, flag):
        N = T.const("N")
        A: T.Tensor((N,), T.float32)
        B = T.empty((N,), T.float32)
        with T.Kernel(1, threads=32):
            for i in T.Parallel(N):
                B[i] = A[i] * k + (1.0 if flag else 0.0)
        return B

    a = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(scale_by(a, 2, False), a * 2)
    np.testing.assert_array_equal(scale_by(a, 2, False), a * 2)
    assert len(scale_by.cache) == 1 and len(scale_by._fast) == 1
    np.testing.assert_array_equal(scale_by(a, 3, False), a * 3)           # another constant
    np.testing.assert_array_equal(scale_by(a, 2, True), a * 2 + 1)        # True is not 1 here
    np.testing.assert_array_equal(scale_by(a[:4].copy(), 2, False), a[:4] * 2)   # another shape
    np.testing.assert_array_equal(scale_by(torch.from_numpy(a), 2, False).numpy(), a * 2)
    np.testing.assert_array_equal(scale_by(A=a, k=2, flag=False), a * 2)  # by name: the full key
    assert len(scale_by.cache) == 4   # numpy and torch arrays of one shape share a kernel


def test_positional_torch_calls_key_on_shape_dtype_and_strides():
    """The positional key of torch tensors (read inline, eager.py): another shape, dtype
    or stride layout is another specialization; an nn.Parameter and a scalar keep theirs."""
    @tilelang.jit(target="cpu")
    def twice(A, k):
        M, N = T.const("M N")
        A: T.Tensor((M, N), T.float32)
        B = T.empty((M, N), T.float32)
        with T.Kernel(1, threads=32):
            for i, j in T.Parallel(M, N):
                B[i, j] = A[i, j] * 2.0 + k
        return B

    a = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    for _ in range(2):
        torch.testing.assert_close(twice(a, 1), a * 2 + 1)
    assert len(twice.cache) == 1 and len(twice._fast) == 1
    torch.testing.assert_close(twice(a.t().contiguous(), 1), a.t() * 2 + 1)   # (6, 4): its own kernel
    assert len(twice.cache) == 2
    with pytest.raises(Exception, match="not contiguous"):
        twice(a.t(), 1)   # the same shape with other strides: not the contiguous kernel's key
    torch.testing.assert_close(twice(a + 1, 1), a * 2 + 3)          # a new tensor, same key
    torch.testing.assert_close(twice(torch.nn.Parameter(a), 0).detach(), a * 2)
    assert len(twice.cache) == 4   # k=0 is another constant
    with pytest.raises(Exception, match="float"):
        twice(a.double(), 1)   # a dtype the kernel was not written for: its error, not a wrong key hit


@tilelang.jit(target="cpu")
def scale_by_fn(x, fn):
    """Parameters may take any name, including ones our tracer uses internally (`fn`);
    a tfloat32 annotation takes float32 data (tf32 is stored as float32)."""
    N = T.const("N")
    x: T.Tensor((N,), T.float32)
    fn: T.Tensor((N,), T.tfloat32)
    y = T.empty((N,), T.float32)
    with T.Kernel(1, threads=32):
        for i in T.Parallel(N):
            y[i] = x[i] * fn[i]
    return y


def test_parameter_named_fn_and_tfloat32_data():
    x = torch.arange(8, dtype=torch.float32)
    w = torch.full((8,), 0.5, dtype=torch.float32)
    torch.testing.assert_close(scale_by_fn(x, w), x * 0.5)
