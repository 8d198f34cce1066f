"""Loops and control flow: T.Parallel (1-3 dims), T.Pipelined, T.serial/unroll/vectorized,
range(), runtime if/elif/else and while, break/continue, compile-time Python loops,
comprehensions, conditional expressions, helper functions and T.macro."""
import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T


def _compile(f, out_idx):
    return tilelang.compile(f, out_idx=out_idx, target="cpu")


@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_parallel_dims(ndim):
    shape = {1: (64,), 2: (8, 16), 3: (2, 4, 8)}[ndim]

    @T.prim_func
    def k(A: T.Tensor(shape, "float32"), C: T.Tensor(shape, "float32")):
        with T.Kernel(1, threads=64) as bx:
            if ndim == 1:
                for i in T.Parallel(shape[0]):
                    C[i] = A[i] * 2 + i
            elif ndim == 2:
                for i, j in T.Parallel(*shape):
                    C[i, j] = A[i, j] * 2 + i * 100 + j
            else:
                for i, j, l in T.Parallel(*shape):
                    C[i, j, l] = A[i, j, l] * 2 + i * 10000 + j * 100 + l
    kern = _compile(k, [1])
    a = np.random.randn(*shape).astype(np.float32)
    idx = np.indices(shape)
    w = {1: [1], 2: [100, 1], 3: [10000, 100, 1]}[ndim]
    ref = a * 2 + sum(wi * ii for wi, ii in zip(w, idx))
    np.testing.assert_allclose(kern(a), ref, rtol=1e-6, atol=1e-5)


def _pipelined_gemm(M, N, K, pipelined, num_stages=0, order=None, stage=None):
    bm = bn = 32
    bk = 16

    @T.prim_func
    def k(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_f = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_f)
            if pipelined:
                for kk in T.Pipelined(T.ceildiv(K, bk), num_stages=num_stages, order=order, stage=stage):
                    T.copy(A[by * bm, kk * bk], A_s)
                    T.copy(B[kk * bk, bx * bn], B_s)
                    T.gemm(A_s, B_s, C_f)
            else:
                for kk in range(T.ceildiv(K, bk)):
                    T.copy(A[by * bm, kk * bk], A_s)
                    T.copy(B[kk * bk, bx * bn], B_s)
                    T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * bm, bx * bn])
    return k


@pytest.mark.parametrize("num_stages,order,stage", [(0, None, None), (1, None, None), (3, None, None),
                                                    (0, [0, 1, 2], [0, 0, 1]), (0, [1, 2, 0], [0, 0, 2]),
                                                    (2, [0, 1, 2], [1, 0, 1])])
def test_pipelined_equals_plain_loop(num_stages, order, stage):
    M, N, K = 64, 64, 80
    plain = _compile(_pipelined_gemm(M, N, K, False), [2])
    pipe = _compile(_pipelined_gemm(M, N, K, True, num_stages, order, stage), [2])
    a = torch.randn(M, K).half()
    b = torch.randn(K, N).half()
    c1, c2 = plain(a, b), pipe(a, b)
    torch.testing.assert_close(c2, c1, rtol=0, atol=0)
    torch.testing.assert_close(c2, a.float() @ b.float(), rtol=1e-3, atol=1e-3)


def test_pipelined_start_stop():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32"), C: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            s = T.alloc_var("float32", init=0.0)
            for i in T.Pipelined(3, 11, num_stages=2):
                s = s + A[i]
            C[0] = s
    kern = _compile(k, [1])
    a = np.random.randn(16).astype(np.float32)
    np.testing.assert_allclose(kern(a)[0], a[3:11].sum(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("args", [(10,), (2, 10), (1, 17, 3), (3, 14, 4), (15, 0, -2), (9, -1, -3)])
def test_serial_start_stop_step(args):
    L = 32

    @T.prim_func
    def k(C: T.Tensor((L,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            cnt = T.alloc_var("int32", init=0)
            for i in T.serial(*args):
                C[i + 8] = cnt
                cnt = cnt + 1
    kern = _compile(k, [])
    c = np.full(L, -1, np.int32)
    kern(c)
    ref = np.full(L, -1, np.int32)
    for n, i in enumerate(range(*args)):
        ref[i + 8] = n
    np.testing.assert_array_equal(c, ref)


@pytest.mark.parametrize("args", [(10,), (2, 10), (1, 17, 3)])
def test_python_range_is_runtime_loop(args):
    @T.prim_func
    def k(A: T.Tensor((32,), "float32"), C: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            s = T.alloc_var("float32", init=0.0)
            for i in range(*args):
                s += A[i] * (i + 1)
            C[0] = s
    kern = _compile(k, [1])
    a = np.random.randn(32).astype(np.float32)
    ref = sum(a[i] * (i + 1) for i in range(*args))
    np.testing.assert_allclose(kern(a)[0], ref, rtol=1e-5, atol=1e-6)


def test_range_with_runtime_bound():
    @T.prim_func
    def k(A: T.Tensor((32,), "float32"), Nn: T.Tensor((1,), "int32"), C: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=1) as bx:
            s = T.alloc_var("float32", init=0.0)
            for i in range(Nn[0]):
                s += A[i]
            C[0] = s
    kern = _compile(k, [2])
    a = np.random.randn(32).astype(np.float32)
    for n in (0, 5, 32):
        np.testing.assert_allclose(kern(a, np.array([n], np.int32))[0], a[:n].sum(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("ctor", ["unroll", "vectorized", "serial"])
def test_unroll_vectorized(ctor):
    L, blk = 64, 16
    loop = getattr(T, ctor)

    @T.prim_func
    def k(A: T.Tensor((L,), "float32"), C: T.Tensor((L,), "float32")):
        with T.Kernel(L // blk, threads=32) as bx:
            F = T.alloc_fragment((blk,), "float32")
            for i in loop(blk):
                F[i] = A[bx * blk + i] * 3.0 - 1.0
            for i in loop(blk):
                C[bx * blk + i] = F[i]
    kern = _compile(k, [1])
    a = torch.randn(L)
    torch.testing.assert_close(kern(a), a * 3 - 1)


def test_unroll_start_stop():
    @T.prim_func
    def k(C: T.Tensor((8,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.unroll(2, 6):
                C[i] = i * i
    kern = _compile(k, [])
    c = np.zeros(8, np.int32)
    kern(c)
    np.testing.assert_array_equal(c, [0, 0, 4, 9, 16, 25, 0, 0])


def test_runtime_if_elif_else():
    L = 64

    @T.prim_func
    def k(A: T.Tensor((L,), "float32"), C: T.Tensor((L,), "float32")):
        with T.Kernel(L // 16, threads=16) as bx:
            for i in T.Parallel(16):
                x = A[bx * 16 + i]
                if x > 1.0:
                    C[bx * 16 + i] = 1.0
                elif x < -1.0:
                    C[bx * 16 + i] = -1.0
                elif x > 0:
                    C[bx * 16 + i] = x * 0.5
                else:
                    C[bx * 16 + i] = x * 0.25
    kern = _compile(k, [1])
    a = (np.random.randn(L) * 2).astype(np.float32)
    ref = np.where(a > 1, 1, np.where(a < -1, -1, np.where(a > 0, a * 0.5, a * 0.25)))
    np.testing.assert_allclose(kern(a), ref, rtol=1e-6, atol=1e-5)


def test_runtime_if_on_block_index_and_scalar_param():
    @T.prim_func
    def k(A: T.Tensor((4, 8), "float32"), flag: T.int32, C: T.Tensor((4, 8), "float32")):
        with T.Kernel(4, threads=8) as bx:
            for j in T.Parallel(8):
                if bx % 2 == 0 and flag != 0:
                    C[bx, j] = A[bx, j]
                else:
                    C[bx, j] = -A[bx, j]
    kern = _compile(k, [2])
    a = np.random.randn(4, 8).astype(np.float32)
    np.testing.assert_array_equal(kern(a, 1), np.where((np.arange(4) % 2 == 0)[:, None], a, -a))
    np.testing.assert_array_equal(kern(a, 0), -a)


def test_while_runtime_condition():
    # collatz steps for each input, computed with a runtime while loop
    L = 16

    @T.prim_func
    def k(A: T.Tensor((L,), "int32"), C: T.Tensor((L,), "int32")):
        with T.Kernel(L, threads=1) as bx:
            x = T.alloc_var("int32", init=A[bx])
            n = T.alloc_var("int32", init=0)
            while x != 1:
                if x % 2 == 0:
                    x = x // 2
                else:
                    x = 3 * x + 1
                n = n + 1
            C[bx] = n
    kern = _compile(k, [1])
    a = np.random.randint(1, 100, L).astype(np.int32)

    def collatz(v):
        n = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            n += 1
        return n
    np.testing.assert_array_equal(kern(a), [collatz(int(v)) for v in a])


def test_break_continue_in_runtime_loops():
    # sum of positive entries before the first entry > 2 (for), and the same with while
    L = 32

    @T.prim_func
    def k(A: T.Tensor((4, L), "float32"), C: T.Tensor((4,), "float32"), D: T.Tensor((4,), "float32")):
        with T.Kernel(4, threads=1) as bx:
            s = T.alloc_var("float32", init=0.0)
            for i in T.serial(L):
                if A[bx, i] > 2.0:
                    break
                if A[bx, i] < 0:
                    continue
                s += A[bx, i]
            C[bx] = s
            t = T.alloc_var("float32", init=0.0)
            j = T.alloc_var("int32", init=-1)
            while j < L - 1:
                j += 1
                if A[bx, j] > 2.0:
                    break
                if A[bx, j] < 0:
                    continue
                t += A[bx, j]
            D[bx] = t
    kern = _compile(k, [1, 2])
    a = (np.random.randn(4, L) * 1.2).astype(np.float32)
    a[0, :] = np.abs(a[0, :]) * 0.1  # a row with no break
    ref = []
    for r in a:
        s = 0.0
        for v in r:
            if v > 2:
                break
            if v < 0:
                continue
            s += v
        ref.append(s)
    c, d = kern(a)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d, ref, rtol=1e-5, atol=1e-6)


def test_python_loop_over_list_unrolls():
    scales = [1.0, 2.0, 0.5]
    cols = [0, 3, 5]

    @T.prim_func
    def k(A: T.Tensor((4, 8), "float32"), C: T.Tensor((4, 3), "float32")):
        with T.Kernel(4, threads=1) as bx:
            for n, (c, s) in enumerate(zip(cols, scales)):
                C[bx, n] = A[bx, c] * s
            for c in cols:  # a Python break in a Python loop stays Python
                if c > 3:
                    break
                C[bx, 0] = C[bx, 0] + 0.0
    kern = _compile(k, [1])
    a = np.random.randn(4, 8).astype(np.float32)
    np.testing.assert_allclose(kern(a), a[:, cols] * np.array(scales, np.float32), rtol=1e-6, atol=1e-5)
    # the Python loop unrolled at compile time: no loop over `cols` in the source
    assert "3" in kern.get_kernel_source()


def test_comprehensions_and_compile_time_values():
    W = [0.25 * (i + 1) for i in range(4)]

    @T.prim_func
    def k(A: T.Tensor((16, 4), "float32"), C: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=16) as bx:
            bufs = [T.alloc_fragment((16,), "float32") for _ in range(2)]
            terms = {j: W[j] for j in range(4) if W[j] != 0.5}
            for i in T.Parallel(16):
                bufs[0][i] = sum(A[i, j] * w for j, w in terms.items())
            for i in T.Parallel(16):
                bufs[1][i] = bufs[0][i] + A[i, 1] * 0.5
            T.copy(bufs[1], C)
    kern = _compile(k, [1])
    a = np.random.randn(16, 4).astype(np.float32)
    np.testing.assert_allclose(kern(a), a @ np.array(W, np.float32), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("relu", [True, False])
def test_conditional_expressions(relu):
    @T.prim_func
    def k(A: T.Tensor((32,), "float32"), C: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(32):
                v = A[i] * (2.0 if relu else 3.0)          # Python condition: chosen at compile time
                C[i] = (v if v > 0 else v * 0.1) if relu else v  # runtime condition -> select
    kern = _compile(k, [1])
    a = np.random.randn(32).astype(np.float32)
    ref = np.where(a * 2 > 0, a * 2, a * 2 * 0.1) if relu else a * 3
    np.testing.assert_allclose(kern(a), ref, rtol=1e-6, atol=1e-5)


def test_runtime_boolean_ops_and_chained_compare():
    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), C: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                if -0.5 < A[i] < 0.5 or (A[i] > 1.5 and not A[i] > 2.0):
                    C[i] = 1
                else:
                    C[i] = 0
    kern = _compile(k, [1])
    a = (np.random.randn(64) * 1.5).astype(np.float32)
    ref = (((a > -0.5) & (a < 0.5)) | ((a > 1.5) & ~(a > 2.0))).astype(np.int32)
    np.testing.assert_array_equal(kern(a), ref)


def _plain_helper(x, scale):
    return x * scale + 1.0


@T.macro
def _scale_tile(X, n, factor):
    for i in T.Parallel(n):
        if X[i] > 0:
            X[i] = X[i] * factor
        else:
            X[i] = 0.0


def test_helper_functions_and_macro():
    L = 32

    def inner_helper(buf, j):
        return buf[j] - 0.5

    @T.prim_func
    def k(A: T.Tensor((L,), "float32"), C: T.Tensor((L,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            F = T.alloc_fragment((L,), "float32")
            T.copy(A, F)
            _scale_tile(F, L, 3.0)
            for i in T.Parallel(L):
                C[i] = _plain_helper(inner_helper(F, i), 2.0)
    kern = _compile(k, [1])
    a = np.random.randn(L).astype(np.float32)
    ref = (np.where(a > 0, a * 3, 0) - 0.5) * 2 + 1
    np.testing.assert_allclose(kern(a), ref, rtol=1e-6, atol=1e-5)


def test_macro_with_return_value_and_nested_loops():
    @T.macro
    def row_max(X, r, n):
        m = T.alloc_var("float32", init=-T.infinity("float32"))
        for j in T.serial(n):
            m = T.max(m, X[r, j])
        return m

    @T.prim_func
    def k(A: T.Tensor((8, 16), "float32"), C: T.Tensor((8,), "float32")):
        with T.Kernel(8, threads=1) as bx:
            C[bx] = row_max(A, bx, 16)
    kern = _compile(k, [1])
    a = np.random.randn(8, 16).astype(np.float32)
    np.testing.assert_array_equal(kern(a), a.max(1))


def test_grid_loop():
    @T.prim_func
    def k(A: T.Tensor((4, 6), "float32"), C: T.Tensor((4, 6), "float32")):
        with T.Kernel(1, threads=1) as bx:
            for i, j in T.grid(4, 6):
                C[i, j] = A[i, j] + i - j
    kern = _compile(k, [1])
    a = np.random.randn(4, 6).astype(np.float32)
    np.testing.assert_allclose(kern(a), a + np.arange(4)[:, None] - np.arange(6)[None, :], rtol=1e-6, atol=1e-5)


def test_python_level_while_unrolls():
    @T.prim_func
    def k(C: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            n = 0
            while n < 3:  # a Python condition: unrolled at compile time
                C[n] = n * 10
                n += 1
    kern = _compile(k, [])
    c = np.full(4, -1, np.int32)
    kern(c)
    np.testing.assert_array_equal(c, [0, 10, 20, -1])
