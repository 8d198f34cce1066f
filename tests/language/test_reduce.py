"""T.reduce_sum/max/min/abssum/absmax (dim, clear), T.cumsum (dim, reverse, in/out of place),
T.fill and T.clear."""
import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T

R, C = 16, 32
REF = {
    "sum": lambda x, d: x.sum(d),
    "max": lambda x, d: x.max(d),
    "min": lambda x, d: x.min(d),
    "abssum": lambda x, d: np.abs(x).sum(d),
    "absmax": lambda x, d: np.abs(x).max(d),
}
COMBINE = {"sum": np.add, "max": np.maximum, "min": np.minimum, "abssum": np.add, "absmax": np.maximum}
OPS = {"sum": T.reduce_sum, "max": T.reduce_max, "min": T.reduce_min, "abssum": T.reduce_abssum,
       "absmax": T.reduce_absmax}


def _reduce_kernel(kind, dim, clear, src_scope):
    out_len = R if dim in (1, -1) else C
    op = OPS[kind]

    @T.prim_func
    def k(A: T.Tensor((R, C), "float32"), Init: T.Tensor((out_len,), "float32"),
          O: T.Tensor((out_len,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            if src_scope == "shared":
                X = T.alloc_shared((R, C), "float32")
            else:
                X = T.alloc_fragment((R, C), "float32")
            Y = T.alloc_fragment((out_len,), "float32")
            T.copy(A, X)
            T.copy(Init, Y)
            op(X, Y, dim=dim, clear=clear)
            T.copy(Y, O)
    return k


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("clear", [True, False])
def test_reduce(kind, dim, clear):
    kern = tilelang.compile(_reduce_kernel(kind, dim, clear, "fragment"), out_idx=[2], target="cpu")
    a = np.random.randn(R, C).astype(np.float32)
    d = dim % 2
    init = np.random.randn(R if d == 1 else C).astype(np.float32)
    o = kern(a, init)
    ref = REF[kind](a, d)
    if not clear:
        ref = COMBINE[kind](ref, init)
    np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["sum", "max"])
def test_reduce_from_shared(kind):
    kern = tilelang.compile(_reduce_kernel(kind, 1, True, "shared"), out_idx=[2], target="cpu")
    a = torch.randn(R, C)
    o = kern(a, torch.zeros(R))
    ref = a.sum(1) if kind == "sum" else a.amax(1)
    torch.testing.assert_close(o, ref, rtol=1e-5, atol=1e-5)


def test_reduce_keepdim_destination_and_int():
    # destination with a kept unit dim (R, 1); integer reduction
    @T.prim_func
    def k(A: T.Tensor((R, C), "int32"), O: T.Tensor((R, 1), "int32"), P: T.Tensor((1, C), "int32")):
        with T.Kernel(1, threads=32) as bx:
            X = T.alloc_fragment((R, C), "int32")
            Y = T.alloc_fragment((R, 1), "int32")
            Z = T.alloc_fragment((1, C), "int32")
            T.copy(A, X)
            T.reduce_sum(X, Y, dim=1)
            T.reduce_max(X, Z, dim=0)
            T.copy(Y, O)
            T.copy(Z, P)
    kern = tilelang.compile(k, out_idx=[1, 2], target="cpu")
    a = np.random.randint(-100, 100, (R, C)).astype(np.int32)
    o, p = kern(a)
    np.testing.assert_array_equal(o, a.sum(1, keepdims=True))
    np.testing.assert_array_equal(p, a.max(0, keepdims=True))


def test_reduce_max_all_negative_clear():
    # clear=True must start max at -inf (not 0) and min at +inf
    @T.prim_func
    def k(A: T.Tensor((R, C), "float32"), O: T.Tensor((R,), "float32"), P: T.Tensor((R,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            X = T.alloc_fragment((R, C), "float32")
            Y = T.alloc_fragment((R,), "float32")
            Z = T.alloc_fragment((R,), "float32")
            T.copy(A, X)
            T.fill(Y, 123.0)
            T.fill(Z, -123.0)
            T.reduce_max(X, Y, dim=1, clear=True)
            T.reduce_min(X, Z, dim=1, clear=True)
            T.copy(Y, O)
            T.copy(Z, P)
    kern = tilelang.compile(k, out_idx=[1, 2], target="cpu")
    a = -np.random.rand(R, C).astype(np.float32) - 1
    o, p = kern(a)
    np.testing.assert_array_equal(o, a.max(1))
    np.testing.assert_array_equal(p, a.min(1))
    b = np.random.rand(R, C).astype(np.float32) + 1
    o, p = kern(b)
    np.testing.assert_array_equal(p, b.min(1))


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("scope", ["shared", "fragment"])
def test_cumsum_2d(dim, reverse, inplace, scope):
    alloc = T.alloc_shared if scope == "shared" else T.alloc_fragment

    @T.prim_func
    def k(A: T.Tensor((R, C), "float32"), O: T.Tensor((R, C), "float32")):
        with T.Kernel(1, threads=128) as bx:
            X = alloc((R, C), "float32")
            Y = alloc((R, C), "float32")
            T.copy(A, X)
            if inplace:
                T.cumsum(X, dim=dim, reverse=reverse)
                T.copy(X, O)
            else:
                T.cumsum(X, Y, dim=dim, reverse=reverse)
                T.copy(Y, O)
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.random.randn(R, C).astype(np.float32)
    if reverse:
        ref = np.flip(np.cumsum(np.flip(a, dim), dim), dim)
    else:
        ref = np.cumsum(a, dim)
    np.testing.assert_allclose(kern(a), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_1d_default_dim(reverse):
    L = 64

    @T.prim_func
    def k(A: T.Tensor((L,), "float32"), O: T.Tensor((L,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            X = T.alloc_shared((L,), "float32")
            T.copy(A, X)
            T.cumsum(X, reverse=reverse)
            T.copy(X, O)
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = torch.randn(L)
    ref = a.flip(0).cumsum(0).flip(0) if reverse else a.cumsum(0)
    torch.testing.assert_close(kern(a), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype,val", [("float32", 2.5), ("float16", -1.5), ("int32", 7), ("int8", -3)])
@pytest.mark.parametrize("scope", ["shared", "fragment", "local"])
def test_fill_and_clear(dtype, val, scope):
    alloc = {"shared": T.alloc_shared, "fragment": T.alloc_fragment, "local": T.alloc_local}[scope]

    @T.prim_func
    def k(O: T.Tensor((2, 8, 16), dtype)):
        with T.Kernel(1, threads=32) as bx:
            X = alloc((8, 16), dtype)
            T.fill(X, val)
            T.copy(X, O[0, :, :])
            T.clear(X)
            T.copy(X, O[1, 0:8, 0:16])
    kern = tilelang.compile(k, out_idx=[0], target="cpu")
    o = kern().numpy()   # no array arguments: a torch tensor
    ref = np.stack([np.full((8, 16), val), np.zeros((8, 16))]).astype(o.dtype)
    np.testing.assert_array_equal(o, ref)


def test_fill_slice_and_runtime_value():
    @T.prim_func
    def k(V: T.Tensor((1,), "float32"), O: T.Tensor((8, 16), "float32")):
        with T.Kernel(1, threads=32) as bx:
            X = T.alloc_fragment((8, 16), "float32")
            T.clear(X)
            T.fill(X[2:4, 0:16], V[0])
            T.fill(X[5, 3:9], 9.0)
            T.copy(X, O)
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    o = kern(np.array([4.25], np.float32))
    ref = np.zeros((8, 16), np.float32)
    ref[2:4] = 4.25
    ref[5, 3:9] = 9
    np.testing.assert_array_equal(o, ref)


def test_fill_global_region():
    @T.prim_func
    def k(O: T.Tensor((32, 16), "float32")):
        with T.Kernel(4, threads=32) as bx:
            T.fill(O[bx * 8:(bx + 1) * 8, :], bx + 0.5)
    kern = tilelang.compile(k, out_idx=[0], target="cpu")
    np.testing.assert_array_equal(kern(), np.repeat(np.arange(4) + 0.5, 8)[:, None] * np.ones((1, 16)))


def test_reduce_on_slice_and_3d():
    @T.prim_func
    def k(A: T.Tensor((2, 8, 16), "float32"), C: T.Tensor((4,), "float32"), D: T.Tensor((2, 16), "float32")):
        with T.Kernel(1, threads=32) as bx:
            X = T.alloc_fragment((2, 8, 16), "float32")
            Y = T.alloc_fragment((4,), "float32")
            Z = T.alloc_fragment((2, 16), "float32")
            T.copy(A, X)
            T.reduce_sum(X[1, 2:6, :], Y, dim=-1)
            T.reduce_max(X, Z, dim=1)
            T.copy(Y, C)
            T.copy(Z, D)
    kern = tilelang.compile(k, out_idx=[1, 2], target="cpu")
    a = np.random.randn(2, 8, 16).astype(np.float32)
    c, d = kern(a)
    np.testing.assert_allclose(c, a[1, 2:6].sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(d, a.max(1))


def test_cumsum_on_global():
    @T.prim_func
    def k(A: T.Tensor((4, 8), "float32"), C: T.Tensor((4, 8), "float32")):
        with T.Kernel(1, threads=8) as bx:
            T.cumsum(A, C, dim=1)
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.random.randn(4, 8).astype(np.float32)
    np.testing.assert_allclose(kern(a), np.cumsum(a, 1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
def test_cummax_2d(dim, reverse):
    @T.prim_func
    def k(A: T.Tensor((R, C), "float32"), O: T.Tensor((R, C), "float32")):
        with T.Kernel(1, threads=128) as bx:
            X = T.alloc_shared((R, C), "float32")
            T.copy(A, X)
            T.cummax(X, dim=dim, reverse=reverse)
            T.copy(X, O)
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.random.randn(R, C).astype(np.float32)
    if reverse:
        ref = np.flip(np.maximum.accumulate(np.flip(a, dim), dim), dim)
    else:
        ref = np.maximum.accumulate(a, dim)
    np.testing.assert_array_equal(kern(a), ref)
    assert "T.cummax(" in k.script()
    src = tilelang.compile(k, out_idx=[1], target="cuda -arch=sm_90a").get_kernel_source()
    assert "tl::max(" in src or "fmaxf(" in src or "max(" in src


def _width_kernel(op, M, width, threads, dim):
    shape, out = ((M, width), (M,)) if dim == 1 else ((width, M), (M,))

    @T.prim_func
    def k(A: T.Tensor(shape, "float32"), B: T.Tensor(out, "float32")):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment(shape, "float32")
            dst = T.alloc_fragment(out, "float32")
            T.copy(A, src)
            op(src, dst, dim=dim)
            T.copy(dst, B)
    return k


# The published package rejects reductions across a non-power-of-two number of threads
# ("logical_width ... positive power of two"); ours computes them: checked on both backends.
@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("kind", ["sum", "max"])
@pytest.mark.parametrize("M,width,threads,dim", [(1, 48, 48, 1), (4, 96, 96, 1), (1, 96, 96, 1), (2, 48, 96, 0)])
def test_reduce_across_a_non_power_of_two_thread_count(target, kind, M, width, threads, dim):
    kern = tilelang.compile(_width_kernel(OPS[kind], M, width, threads, dim), out_idx=-1, target=target)
    a = torch.randn((M, width) if dim == 1 else (width, M), device=target)
    ref = a.sum(dim) if kind == "sum" else a.amax(dim)
    torch.testing.assert_close(kern(a), ref, atol=1e-4, rtol=1e-4)
