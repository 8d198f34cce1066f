"""T.copy: region forms, scope pairs, dtype conversion, out-of-bounds predication,
1-D / 3-D buffers, unit dimensions squeezed."""
import numpy as np
import pytest
import torch

import tilelang
import tilelang.language as T

M, N, BM, BN = 64, 96, 16, 32


def _tile_copy(form):
    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(N // BN, M // BM, threads=128) as (bx, by):
            S = T.alloc_shared((BM, BN), "float32")
            if form == "start":
                T.copy(A[by * BM, bx * BN], S)
                T.copy(S, C[by * BM, bx * BN])
            elif form == "slice":
                T.copy(A[by * BM:(by + 1) * BM, bx * BN:(bx + 1) * BN], S)
                T.copy(S, C[by * BM:(by + 1) * BM, bx * BN:(bx + 1) * BN])
            else:  # mixed: slice in, start index out
                T.copy(A[by * BM:by * BM + BM, bx * BN:bx * BN + BN], S)
                T.copy(S, C[by * BM, bx * BN])
    return k


@pytest.mark.parametrize("form", ["start", "slice", "mixed"])
def test_region_forms(form):
    kern = tilelang.compile(_tile_copy(form), out_idx=[1], target="cpu")
    a = np.random.randn(M, N).astype(np.float32)
    np.testing.assert_array_equal(kern(a), a)


def test_whole_buffer_form():
    @T.prim_func
    def k(A: T.Tensor((BM, BN), "float32"), C: T.Tensor((BM, BN), "float32")):
        with T.Kernel(1, threads=32) as bx:
            S = T.alloc_shared((BM, BN), "float32")
            F = T.alloc_fragment((BM, BN), "float32")
            T.copy(A, S)
            T.copy(S, F)
            for i, j in T.Parallel(BM, BN):
                F[i, j] = F[i, j] * 3.0
            T.copy(F, C)
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = torch.randn(BM, BN)
    torch.testing.assert_close(kern(a), a * 3)


SCOPES = ["shared", "fragment", "local"]


def _alloc(scope, shape, dtype):
    return {"shared": T.alloc_shared, "fragment": T.alloc_fragment, "local": T.alloc_local}[scope](shape, dtype)


@pytest.mark.parametrize("s1", SCOPES)
@pytest.mark.parametrize("s2", SCOPES)
def test_scope_pairs(s1, s2):
    # global -> s1 -> s2 -> global; an elementwise op on s2 so the chain is observable
    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(N // BN, M // BM, threads=128) as (bx, by):
            X = _alloc(s1, (BM, BN), "float32")
            Y = _alloc(s2, (BM, BN), "float32")
            T.copy(A[by * BM, bx * BN], X)
            T.copy(X, Y)
            for i, j in T.Parallel(BM, BN):
                Y[i, j] = Y[i, j] + i * 1000 + j
            T.copy(Y, C[by * BM, bx * BN])
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.random.randn(M, N).astype(np.float32)
    ii, jj = np.meshgrid(np.arange(M) % BM, np.arange(N) % BN, indexing="ij")
    np.testing.assert_allclose(kern(a), a + ii * 1000 + jj, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("src_dt,mid_dt,dst_dt", [
    ("float32", "float16", "float32"),
    ("float16", "float32", "float16"),
    ("float32", "bfloat16", "float32"),
    ("float32", "int32", "float32"),
    ("int32", "float32", "float16"),
])
def test_dtype_converting_copy(src_dt, mid_dt, dst_dt):
    @T.prim_func
    def k(A: T.Tensor((M, N), src_dt), C: T.Tensor((M, N), dst_dt)):
        with T.Kernel(N // BN, M // BM, threads=128) as (bx, by):
            S = T.alloc_shared((BM, BN), mid_dt)
            F = T.alloc_fragment((BM, BN), dst_dt)
            T.copy(A[by * BM, bx * BN], S)
            T.copy(S, F)
            T.copy(F, C[by * BM, bx * BN])
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    tdt = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
           "int32": torch.int32}
    if src_dt == "int32":
        a = torch.randint(-50, 50, (M, N), dtype=torch.int32)
    else:
        a = (torch.randn(M, N) * 20).to(tdt[src_dt])
    c = kern(a)
    assert c.dtype == tdt[dst_dt]
    if mid_dt == "int32":
        ref = a.float().trunc()  # float -> int conversion truncates toward zero (C semantics)
    else:
        ref = a.to(tdt[mid_dt])
    ref = ref.to(tdt[dst_dt])
    torch.testing.assert_close(c, ref, rtol=0, atol=0)


@pytest.mark.parametrize("Mr,Nr", [(70, 33), (17, 100), (5, 7)])
def test_oob_loads_read_zero(Mr, Nr):
    # a ragged input: each block copies its tile (predicated) into shared and writes the
    # whole tile to a padded output, so the out-of-range part must be zeros
    gm, gn = -(-Mr // BM), -(-Nr // BN)

    @T.prim_func
    def k(A: T.Tensor((Mr, Nr), "float32"), C: T.Tensor((gm * BM, gn * BN), "float32")):
        with T.Kernel(gn, gm, threads=128) as (bx, by):
            S = T.alloc_shared((BM, BN), "float32")
            T.copy(A[by * BM, bx * BN], S)
            T.copy(S, C[by * BM, bx * BN])
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.random.randn(Mr, Nr).astype(np.float32) + 5
    c = kern(a)
    ref = np.zeros((gm * BM, gn * BN), np.float32)
    ref[:Mr, :Nr] = a
    np.testing.assert_array_equal(c, ref)


@pytest.mark.parametrize("Mr,Nr", [(70, 33), (17, 100), (5, 7)])
def test_oob_stores_skipped(Mr, Nr):
    # every block writes a full tile of values (1 + global index); stores outside must be skipped:
    # no wrap-around into the next row, nothing past the end of the tensor
    gm, gn = -(-Mr // BM), -(-Nr // BN)

    @T.prim_func
    def k(C: T.Tensor((Mr, Nr), "float32")):
        with T.Kernel(gn, gm, threads=128) as (bx, by):
            F = T.alloc_fragment((BM, BN), "float32")
            for i, j in T.Parallel(BM, BN):
                F[i, j] = (by * BM + i) * 1000 + bx * BN + j + 1
            T.copy(F, C[by * BM, bx * BN])
    kern = tilelang.compile(k, target="cpu")
    big = np.full((Mr + BM + 1, Nr), -7.0, np.float32)
    c = big[:Mr]  # contiguous view: memory after it belongs to `big`
    kern(c)
    ii, jj = np.meshgrid(np.arange(Mr), np.arange(Nr), indexing="ij")
    np.testing.assert_array_equal(big[:Mr], ii * 1000 + jj + 1)
    assert (big[Mr:] == -7.0).all(), "stores past the last row were not skipped"


def test_oob_dynamic_tail_gemm_like():
    # ragged K loop: the last tile is partially outside; zeros make the sum exact
    Mr, K, BK = 20, 50, 16

    @T.prim_func
    def k(A: T.Tensor((Mr, K), "float32"), C: T.Tensor((Mr,), "float32")):
        with T.Kernel(T.ceildiv(Mr, BM), threads=64) as bx:
            S = T.alloc_shared((BM, BK), "float32")
            acc = T.alloc_fragment((BM,), "float32")
            part = T.alloc_fragment((BM,), "float32")
            T.clear(acc)
            for kk in T.serial(T.ceildiv(K, BK)):
                T.copy(A[bx * BM, kk * BK], S)
                T.reduce_sum(S, part, dim=1)
                for i in T.Parallel(BM):
                    acc[i] += part[i]
            T.copy(acc, C[bx * BM])
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.random.randn(Mr, K).astype(np.float32)
    np.testing.assert_allclose(kern(a), a.sum(1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("L,blk", [(256, 64), (100, 32)])
def test_1d_copy(L, blk):
    @T.prim_func
    def k(A: T.Tensor((L,), "float32"), C: T.Tensor((L,), "float32")):
        with T.Kernel(T.ceildiv(L, blk), threads=64) as bx:
            S = T.alloc_shared((blk,), "float32")
            F = T.alloc_fragment((blk,), "float32")
            T.copy(A[bx * blk:(bx + 1) * blk], S)
            T.copy(S, F)
            for i in T.Parallel(blk):
                F[i] = -F[i]
            T.copy(F, C[bx * blk])
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = torch.randn(L)
    torch.testing.assert_close(kern(a), -a)


@pytest.mark.parametrize("Bt,H,D", [(2, 8, 16), (3, 4, 32)])
def test_3d_copy(Bt, H, D):
    @T.prim_func
    def k(A: T.Tensor((Bt, H, D), "float16"), C: T.Tensor((Bt, H, D), "float32")):
        with T.Kernel(Bt, threads=64) as b:
            S = T.alloc_shared((1, H, D), "float16")
            F = T.alloc_fragment((H, D), "float32")
            T.copy(A[b:b + 1, 0:H, 0:D], S)
            T.copy(S[0, :, :], F)
            for i, j in T.Parallel(H, D):
                F[i, j] = F[i, j] * 2
            T.copy(F, C[b, 0:H, 0:D])
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = torch.randn(Bt, H, D).half()
    torch.testing.assert_close(kern(a), a.float() * 2)


def test_3d_whole_buffer_copy():
    @T.prim_func
    def k(A: T.Tensor((2, 4, 8), "float32"), C: T.Tensor((2, 4, 8), "float32")):
        with T.Kernel(1, threads=32) as b:
            S = T.alloc_shared((2, 4, 8), "float32")
            T.copy(A, S)
            T.copy(S, C)
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.random.randn(2, 4, 8).astype(np.float32)
    np.testing.assert_array_equal(kern(a), a)


@pytest.mark.parametrize("K,BK", [(128, 32), (96, 32)])
def test_squeezed_unit_dims(K, BK):
    # A[by, k*BK : k*BK+BK] (a 1 x BK region) into a 1-D shared buffer, and back out
    # into a row of a 2-D output; also a (BK,) fragment into a [1, BK] region
    R = 4

    @T.prim_func
    def k(A: T.Tensor((R, K), "float32"), C: T.Tensor((R, K), "float32")):
        with T.Kernel(R, threads=32) as by:
            S = T.alloc_shared((BK,), "float32")
            F = T.alloc_fragment((BK,), "float32")
            for kk in T.serial(K // BK):
                T.copy(A[by, kk * BK:kk * BK + BK], S)
                T.copy(S, F)
                for i in T.Parallel(BK):
                    F[i] = F[i] + kk
                T.copy(F, C[by:by + 1, kk * BK:(kk + 1) * BK])
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.random.randn(R, K).astype(np.float32)
    np.testing.assert_allclose(kern(a), a + (np.arange(K) // BK)[None, :], rtol=1e-6, atol=1e-5)


def test_column_region_squeezed():
    # a column A[r0:r0+BM, c] (BM x 1) into a 1-D fragment
    @T.prim_func
    def k(A: T.Tensor((M, 8), "float32"), C: T.Tensor((8, M), "float32")):
        with T.Kernel(8, M // BM, threads=32) as (bx, by):
            F = T.alloc_fragment((BM,), "float32")
            T.copy(A[by * BM:(by + 1) * BM, bx], F)
            T.copy(F, C[bx, by * BM:(by + 1) * BM])
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.random.randn(M, 8).astype(np.float32)
    np.testing.assert_array_equal(kern(a), a.T)


def test_copy_shape_mismatch_is_clear_error():
    with pytest.raises(tilelang.TileLangError, match="shapes do not match"):
        @T.prim_func
        def k(A: T.Tensor((64, 64), "float32"), C: T.Tensor((64, 64), "float32")):
            with T.Kernel(1, threads=32) as bx:
                S = T.alloc_shared((32, 32), "float32")
                T.copy(A[0:16, 0:32], S)
                T.copy(S, C[0, 0])
        tilelang.compile(k, out_idx=[1], target="cpu")


def test_global_to_global_copy():
    @T.prim_func
    def k(A: T.Tensor((8, 16), "float32"), C: T.Tensor((8, 16), "float32")):
        with T.Kernel(2, threads=32) as bx:
            T.copy(A[bx * 4:bx * 4 + 4, :], C[bx * 4:bx * 4 + 4, :])
    kern = tilelang.compile(k, out_idx=[1], target="cpu")
    a = np.random.randn(8, 16).astype(np.float32)
    np.testing.assert_array_equal(kern(a), a)


def test_copy_between_two_elements_moves_one_element():
    # `T.copy(A[i], B[j])` (the published tests): both sides are one element
    @T.prim_func
    def k(A: T.Tensor((8,), "int32"), B: T.Tensor((8,), "int32")):
        with T.Kernel(8, threads=1) as bx:
            idx = T.alloc_local([1], "int32")
            T.copy(A[bx], idx[0])
            T.copy(idx[0], B[7 - bx])
    a = np.arange(8, dtype=np.int32)
    b = np.zeros(8, np.int32)
    tilelang.compile(k, target="cpu")(a, b)
    np.testing.assert_array_equal(b, a[::-1])
    tilelang.compile(k, target="cuda -arch=sm_90a")
