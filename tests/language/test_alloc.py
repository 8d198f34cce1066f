"""Allocation: alloc_shared / fragment / local / var (init, reassignment, x[0]) and
alloc_global workspaces shared by two T.Kernels in one function."""
import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T


@pytest.mark.parametrize("scope", ["shared", "fragment", "local"])
@pytest.mark.parametrize("dtype,np_dtype", [("float32", np.float32), ("float16", np.float16), ("int32", np.int32)])
def test_alloc_scopes_roundtrip(scope, dtype, np_dtype):
    M, N, bm = 32, 16, 8
    alloc = {"shared": T.alloc_shared, "fragment": T.alloc_fragment, "local": T.alloc_local}[scope]

    @T.prim_func
    def k(A: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(M // bm, threads=32) as bx:
            buf = alloc((bm, N), dtype)
            for i, j in T.Parallel(bm, N):
                buf[i, j] = A[bx * bm + i, j] + A[bx * bm + i, j]
            for i, j in T.Parallel(bm, N):
                C[bx * bm + i, j] = buf[i, j] - 1
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = (np.random.rand(M, N) * 10).astype(np_dtype)
    c = kern(a)
    assert c.dtype == np_dtype
    np.testing.assert_allclose(c.astype(np.float64), (a + a - 1).astype(np.float64), rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("init", [0, 5, -3])
def test_alloc_var_init_and_reassign(init):
    N = 16

    @T.prim_func
    def k(A: T.Tensor((4, N), "int32"), C: T.Tensor((4,), "int32")):
        with T.Kernel(4, threads=32) as bx:
            x = T.alloc_var("int32", init=init)
            for i in T.serial(N):
                x = x + A[bx, i]
            x = x * 2
            C[bx] = x
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.random.randint(-10, 10, (4, N)).astype(np.int32)
    np.testing.assert_array_equal(kern(a), (init + a.sum(1)) * 2)


def test_alloc_var_indexed_form_and_float():
    N = 8

    @T.prim_func
    def k(A: T.Tensor((N,), "float32"), C: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            acc = T.alloc_var("float32")
            acc[0] = 1.0
            cnt = T.alloc_var(T.int32, 0)
            for i in T.serial(N):
                acc[0] = acc[0] * A[i]
                if A[i] > 0:
                    cnt[0] += 1
            C[0] = acc[0]
            C[1] = cnt
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = torch.rand(N) + 0.5
    a[2] = -a[2]
    c = kern(a)
    torch.testing.assert_close(c[0], torch.prod(a), rtol=1e-5, atol=1e-6)
    assert int(c[1]) == int((a > 0).sum())


def test_alloc_var_annotated_assignment():
    # `x: T.int32 = value` declares a runtime scalar variable
    @T.prim_func
    def k(A: T.Tensor((8,), "int32"), C: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            m: T.int32 = -1000
            for i in T.serial(8):
                m = T.max(m, A[i])
            C[0] = m
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.random.randint(-100, 100, 8).astype(np.int32)
    assert kern(a)[0] == a.max()


def test_alloc_local_1d_accumulator():
    M, N = 16, 32

    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), C: T.Tensor((M,), "float32")):
        with T.Kernel(M, threads=32) as bx:
            acc = T.alloc_local((1,), "float32")
            acc[0] = 0.0
            for j in T.serial(N):
                acc[0] += A[bx, j] * A[bx, j]
            C[bx] = acc[0]
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.random.randn(M, N).astype(np.float32)
    np.testing.assert_allclose(kern(a), (a * a).sum(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("M,N,bm", [(64, 32, 16), (48, 8, 16)])
def test_alloc_global_workspace_two_kernels(M, N, bm):
    # kernel 1 writes per-block partial sums into a workspace; kernel 2 reads them
    nb = M // bm

    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), C: T.Tensor((N,), "float32")):
        ws = T.alloc_global((nb, N), "float32")
        with T.Kernel(nb, threads=64) as bx:
            tile = T.alloc_fragment((bm, N), "float32")
            part = T.alloc_fragment((N,), "float32")
            T.copy(A[bx * bm, 0], tile)
            T.reduce_sum(tile, part, dim=0)
            T.copy(part, ws[bx, 0:N])
        with T.Kernel(1, threads=64) as bx:
            w = T.alloc_fragment((nb, N), "float32")
            o = T.alloc_fragment((N,), "float32")
            T.copy(ws, w)
            T.reduce_sum(w, o, dim=0)
            T.copy(o, C)
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.random.randn(M, N).astype(np.float32)
    np.testing.assert_allclose(kern(a), a.sum(0), rtol=1e-4, atol=1e-4)
    # the workspace is fresh per call (second call gives the same answer)
    np.testing.assert_allclose(kern(a * 2), 2 * a.sum(0), rtol=1e-4, atol=1e-4)


def test_alloc_global_inside_kernel_is_error():
    with pytest.raises(tilelang.TileLangError, match="alloc_global"):
        @T.prim_func
        def k(C: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1) as bx:
                ws = T.alloc_global((4,), "float32")
                C[0] = ws[0]
        tilelang.compile(k, out_idx=[0], target="cpu")


def test_alloc_var_rejects_an_initializer_its_dtype_cannot_hold():
    import pytest
    with pytest.raises(ValueError, match="exceeds maximum of float32"):
        @T.prim_func
        def k(A: T.Tensor((1,), "float32")):
            with T.Kernel(1):
                v = T.alloc_var(T.float32, init=1e300)
                A[0] = v
