"""T.atomic_add / atomic_max / atomic_min on global elements from many blocks, and
atomic_add of a whole tile region."""
import re

import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.ir.errors import TileLangError
from tests.tf32 import tf32


@pytest.mark.parametrize("kind", ["add", "max", "min"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_atomic_scalar_many_blocks(kind, dtype):
    # 64 blocks x 16 elements each hit one of 4 output slots
    nb, per, slots = 64, 16, 4
    op = {"add": T.atomic_add, "max": T.atomic_max, "min": T.atomic_min}[kind]

    @T.prim_func
    def k(A: T.Tensor((nb, per), dtype), O: T.Tensor((slots,), dtype)):
        with T.Kernel(nb, threads=32) as bx:
            for i in T.serial(per):
                op(O[(bx + i) % slots], A[bx, i])
    kern = tilelang.compile(k, target="cpu")
    if dtype == "int32":
        a = np.random.randint(-1000, 1000, (nb, per)).astype(np.int32)
    else:
        a = (np.random.randint(-1000, 1000, (nb, per)) / 8).astype(np.float32)  # exact sums in any order
    init = {"add": 0, "max": -10**6, "min": 10**6}[kind]
    ref = np.full(slots, init, np.int64 if dtype == "int32" else np.float64)
    for b in range(nb):
        for i in range(per):
            s = (b + i) % slots
            ref[s] = {"add": ref[s] + a[b, i], "max": max(ref[s], a[b, i]), "min": min(ref[s], a[b, i])}[kind]
    for _ in range(3):  # repeated runs: the result does not depend on the block order
        o = np.full(slots, init, a.dtype)
        kern(a, o)
        np.testing.assert_array_equal(o, ref.astype(a.dtype))


def test_atomic_add_histogram_torch():
    N, bins, blk = 4096, 10, 128

    @T.prim_func
    def k(X: T.Tensor((N,), "int32"), H: T.Tensor((bins,), "int32")):
        with T.Kernel(N // blk, threads=128) as bx:
            for i in T.serial(blk):
                T.atomic_add(H[X[bx * blk + i]], 1)
    kern = tilelang.compile(k, target="cpu")
    x = torch.randint(0, bins, (N,), dtype=torch.int32)
    h = torch.zeros(bins, dtype=torch.int32)
    kern(x, h)
    torch.testing.assert_close(h, torch.bincount(x, minlength=bins).to(torch.int32))


@pytest.mark.parametrize("src_scope", ["fragment", "shared"])
def test_atomic_add_tile_region(src_scope):
    # split-K: every block adds its partial (bm x bn) tile to the output with one atomic_add
    M, N, K, bm, bn, bk = 32, 32, 128, 16, 16, 32
    splits = K // bk

    @T.prim_func
    def k(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(N // bn, M // bm, splits, threads=128) as (bx, by, bz):
            A_s = T.alloc_shared((bm, bk), "float32")
            B_s = T.alloc_shared((bk, bn), "float32")
            C_f = T.alloc_fragment((bm, bn), "float32")
            T.copy(A[by * bm, bz * bk], A_s)
            T.copy(B[bz * bk, bx * bn], B_s)
            T.gemm(A_s, B_s, C_f, clear_accum=True)
            if src_scope == "shared":
                C_s = T.alloc_shared((bm, bn), "float32")
                T.copy(C_f, C_s)
                T.atomic_add(C[by * bm:(by + 1) * bm, bx * bn:(bx + 1) * bn], C_s)
            else:
                T.atomic_add(C[by * bm, bx * bn], C_f)
    kern = tilelang.compile(k, target="cpu")
    a = torch.randn(M, K)
    b = torch.randn(K, N)
    c = torch.ones(M, N)
    kern(a, b, c)
    torch.testing.assert_close(c, 1 + tf32(a) @ tf32(b), rtol=1e-4, atol=1e-4)   # a TF32 gemm


def test_atomic_max_tile_region():
    nb, L = 8, 64

    @T.prim_func
    def k(A: T.Tensor((nb, L), "float32"), O: T.Tensor((L,), "float32")):
        with T.Kernel(nb, threads=64) as bx:
            F = T.alloc_fragment((L,), "float32")
            T.copy(A[bx, 0:L], F)
            T.atomic_max(O[0:L], F)
    kern = tilelang.compile(k, target="cpu")
    a = np.random.randn(nb, L).astype(np.float32)
    o = np.full(L, -np.inf, np.float32)
    kern(a, o)
    np.testing.assert_array_equal(o, a.max(0))


def test_atomic_add_return_prev():
    @T.prim_func
    def k(C: T.Tensor((1,), "int32"), P: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            for i in T.serial(4):
                P[i] = T.atomic_add(C[0], 1, return_prev=True)
    kern = tilelang.compile(k, target="cpu")
    c = np.zeros(1, np.int32)
    p = np.zeros(4, np.int32)
    kern(c, p)
    assert list(p) == [0, 1, 2, 3] and c[0] == 4


def test_atomic_addx4_and_x2_add_consecutive_elements():
    # T.atomic_addx4(C[i, j], V[k, l]) adds V[k, l:l+4] into C[i, j:j+4]
    @T.prim_func
    def k(V: T.Tensor((4, 16), "float32"), C: T.Tensor((2, 16), "float32")):
        with T.Kernel(4, threads=32) as bx:
            s = T.alloc_shared((16,), "float32")
            T.copy(V[bx, :], s)
            for j in T.Parallel(4):
                T.atomic_addx4(C[0, j * 4], s[j * 4])
            for j in T.Parallel(8):
                T.atomic_addx2(C[1, j * 2], V[bx, j * 2])
    kern = tilelang.compile(k, target="cpu")
    v = np.random.rand(4, 16).astype(np.float32)
    c = np.zeros((2, 16), np.float32)
    kern(v, c)
    np.testing.assert_allclose(c[0], v.sum(0), rtol=1e-5)
    np.testing.assert_allclose(c[1], v.sum(0), rtol=1e-5)


def test_atomic_addx4_return_prev_discarded_still_adds():
    @T.prim_func
    def k(C: T.Tensor((4,), "float32")):
        with T.Kernel(1) as bx:
            T.atomic_addx4(C[0], 1.0, return_prev=True)
    c = torch.zeros(4)
    tilelang.compile(k, target="cpu")(c)
    assert c.tolist() == [1.0] * 4


def test_bitwise_atomics_cpu_and_cuda_source():
    import numpy as np
    import pytest
    import tilelang
    import tilelang.language as T

    @T.prim_func
    def bits(Flags: T.Tensor((64,), "int32"), Out: T.Tensor((3,), "int32")):
        with T.Kernel(4) as bx:
            for i in T.Parallel(16):
                T.atomic_or(Out[0], Flags[bx * 16 + i])
                T.atomic_and(Out[1], Flags[bx * 16 + i])
                T.atomic_xor(Out[2], Flags[bx * 16 + i])
    kern = tilelang.compile(bits, target="cpu")
    flags = (1 << (np.arange(64) % 31)).astype(np.int32)
    out = np.array([0, -1, 0], np.int32)
    kern(flags, out)
    assert out[0] == np.bitwise_or.reduce(flags)
    assert out[1] == np.bitwise_and.reduce(flags)
    assert out[2] == np.bitwise_xor.reduce(flags)
    try:
        src = tilelang.compile(bits, target="cuda -arch=sm_90a").get_kernel_source()
    except ImportError:
        return
    assert "AtomicOr(" in src and "AtomicXor(" in src

    with pytest.raises(tilelang.TileLangError, match="integer destination"):
        @T.prim_func
        def bad(X: T.Tensor((4,), "float32")):
            with T.Kernel(1):
                T.atomic_or(X[0], 1.0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_atomic_max_min_with_memory_orders_compile_for_cuda(dtype):
    # half/bf16/double max and min had no CUDA overload; memory_order was ignored
    @T.prim_func
    def k(A: T.Tensor((64,), dtype), B: T.Tensor((64,), dtype), C: T.Tensor((64,), dtype)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                T.atomic_max(B[i], A[i], memory_order="relaxed")
                T.atomic_min(C[i], A[i], memory_order="release")
    src = tilelang.compile(k, target="cuda -arch=sm_90a").get_kernel_source()
    assert re.search(r"AtomicMin\(&C\[i\], \([^;]*, 3\);", src) and "AtomicMax(&B[i]" in src
    a = np.linspace(-2, 2, 64).astype(T.dtype(dtype).as_numpy())
    b = np.zeros(64, a.dtype)
    c = np.zeros(64, a.dtype)
    tilelang.compile(k, target="cpu")(a, b, c)
    np.testing.assert_array_equal(b, np.maximum(a, 0))
    np.testing.assert_array_equal(c, np.minimum(a, 0))


def test_atomic_load_store_and_their_memory_orders():
    @T.prim_func
    def k(A: T.Tensor((4,), "int32"), B: T.Tensor((4,), "int32")):
        with T.Kernel(threads=1):   # no grid: one block
            for i in T.serial(4):
                T.atomic_store(B[i], T.atomic_load(A[i], memory_order="acquire") + 1, memory_order="release")
    a = np.arange(4, dtype=np.int32)
    b = np.zeros(4, np.int32)
    tilelang.compile(k, target="cpu")(a, b)
    np.testing.assert_array_equal(b, a + 1)
    src = tilelang.compile(k, target="cuda -arch=sm_90a").get_kernel_source()
    assert "AtomicLoad(&A[i], 2)" in src and re.search(r"AtomicStore\(&B\[i\], .*, 3\)", src)
    for bad_load, bad_store in (("release", "acquire"), ("acq_rel", "consume")):
        with pytest.raises(ValueError, match="atomic_load does not support memory_order"):
            @T.prim_func
            def k1(A: T.Tensor((4,), "int32")):
                with T.Kernel(1):
                    A[0] = T.atomic_load(A[1], memory_order=bad_load)
        with pytest.raises(ValueError, match="atomic_store does not support memory_order"):
            @T.prim_func
            def k2(A: T.Tensor((4,), "int32")):
                with T.Kernel(1):
                    T.atomic_store(A[0], 1, memory_order=bad_store)


@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("form", ["slice", "let", "ramp", "x4", "element"])
def test_vector_atomic_add_returns_each_lanes_previous_value(target, form):
    n = 4 if form == "x4" else 2

    @T.prim_func
    def k(Dst: T.Tensor((n,), "float32"), Val: T.Tensor((n,), "float32"), Prev: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=64):
            if form == "slice":
                Prev[0:2] = T.atomic_addx2(Dst[0:2], Val[0:2], return_prev=True)
            elif form == "let":
                dst = Dst[0:2]
                Prev[0:2] = T.atomic_addx2(dst, Val[0:2], return_prev=True)
            elif form == "ramp":
                Prev[0:2] = T.atomic_addx2(Dst[T.Ramp(0, 1, 2)], Val[T.Ramp(0, 1, 2)], return_prev=True)
            elif form == "x4":
                Prev[0:4] = T.atomic_addx4(Dst[0:4], Val[0:4], return_prev=True)
            else:
                Prev[0:2] = T.atomic_addx2(Dst[0], Val[0], return_prev=True)

    kern = tilelang.compile(k, target=target)
    d = torch.arange(n, dtype=torch.float32, device=target) + 1
    p = torch.zeros(n, device=target)
    kern(d, torch.full((n,), 10.0, device=target), p)
    assert p.tolist() == [float(i + 1) for i in range(n)]
    assert d.tolist() == [float(i + 11) for i in range(n)]   # one add per lane, not one per thread


def test_ramp_with_a_stride_is_a_clear_error():
    with pytest.raises(TileLangError, match="only stride 1"):
        T.Ramp(0, 2, 4)


@pytest.mark.parametrize("target", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_vector_atomic_add_into_a_sliced_destination(target):
    @T.prim_func
    def k(idx: T.Tensor((8,), "int32"), val: T.Tensor((8, 4), "float32"), dst: T.Tensor((4, 4), "float32")):
        with T.Kernel(1, threads=8):
            for t in T.Parallel(8):
                T.atomic_addx4(dst[idx[t], 0:4], val[t, 0:4])

    idx = torch.tensor([0, 1, 2, 3, 0, 1, 2, 3], dtype=torch.int32, device=target)
    val = torch.randn(8, 4, device=target)
    dst = torch.zeros(4, 4, device=target)
    tilelang.compile(k, target=target)(idx, val, dst)
    torch.testing.assert_close(dst, val[:4] + val[4:])
