"""GEMMs written warp by warp (TensorCoreIntrinEmitter) on the CPU reference: every
storage order, accumulator type and store form gives A @ B; misuse is a typed error."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir.errors import TileLangError
from tilelang.cuda.intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitter
from tests.language.warp_mma_kernels import warp_mma_gemm


def _check(M, N, K, dtype="float16", accum="float32", out="float32", a_trans=False, b_trans=True, **kw):
    rng = np.random.default_rng(0)
    if dtype == "int8":
        a = rng.integers(-8, 8, (M, K)).astype(np.int8)
        b = rng.integers(-8, 8, (K, N)).astype(np.int8)
        ref = a.astype(np.int64) @ b.astype(np.int64)
    else:
        a = rng.standard_normal((M, K)).astype(np.float16)
        b = rng.standard_normal((K, N)).astype(np.float16)
        ref = a.astype(np.float64) @ b.astype(np.float64)
    A = np.ascontiguousarray(a.T) if a_trans else a
    B = np.ascontiguousarray(b.T) if b_trans else b
    f = warp_mma_gemm(M, N, K, dtype=dtype, accum=accum, out=out, a_trans=a_trans, b_trans=b_trans, **kw)
    k = tilelang.compile(f, target="cpu")
    C = np.zeros((M, N), np.dtype(out))
    k(A, B, C)
    if dtype == "int8":
        np.testing.assert_array_equal(C, ref)
    else:
        np.testing.assert_allclose(C.astype(np.float64), ref, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("a_trans,b_trans", [(False, True), (False, False), (True, True), (True, False)])
def test_storage_orders(a_trans, b_trans):
    _check(128, 128, 96, a_trans=a_trans, b_trans=b_trans)


@pytest.mark.parametrize("store", ["4d", "2d", "global"])
def test_store_forms(store):
    _check(128, 192, 64, store=store)


@pytest.mark.parametrize("dtype,accum,out", [("float16", "float16", "float16"), ("float16", "float32", "float32")])
def test_mma_atoms_equal_mma(dtype, accum, out):
    # mma_atom(i, j) over T.grid(mma_num_inst_m, mma_num_inst_n) is mma()
    _check(128, 128, 64, dtype=dtype, accum=accum, out=out, atoms=True)


def test_mma_atom_index_out_of_range():
    em = TensorCoreIntrinEmitter(block_row_warps=2, block_col_warps=2, warp_row_tiles=32, warp_col_tiles=32,
                                 chunk=32)
    assert (em.mma_num_inst_m, em.mma_num_inst_n) == (em.warp_rows, em.warp_cols) == (2, 2)

    with pytest.raises(TileLangError, match="inst_m_idx = 2 is outside 0..1"):
        @T.prim_func
        def main(C: T.Tensor((4,), "float16")):
            with T.Kernel(1, threads=128):
                Al = T.alloc_local((em.warp_rows * em.local_size_a,), "float16")
                Bl = T.alloc_local((em.warp_cols * em.local_size_b,), "float16")
                Cl = T.alloc_local((em.warp_rows * em.warp_cols * em.local_size_out,), "float16")
                em.mma_atom(Al, Bl, Cl, 2, 0)


def test_m_first_warp_order_and_narrow_atoms():
    _check(128, 96, 64, wct=24, m_first=True, store="2d")


def test_fp16_accumulator_and_int8():
    _check(64, 64, 64, accum="float16", out="float16", brw=1, bcw=2, wrt=64)
    _check(128, 128, 128, dtype="int8", accum="int32", out="int32", chunk=64)


def test_published_attributes():
    em = TensorCoreIntrinEmitter(a_dtype=T.float16, b_dtype=T.float16, accum_dtype=T.float32, b_transposed=True,
                                 block_row_warps=2, block_col_warps=2, warp_row_tiles=64, warp_col_tiles=64,
                                 chunk=32)
    assert (em.warp_rows, em.warp_cols, em.local_size_a, em.local_size_b, em.local_size_out) == (4, 4, 8, 8, 8)
    assert (em.micro_size_x, em.micro_size_y, em.micro_size_k, em.threads) == (16, 16, 16, 128)
    assert em.mma_prefix == "m16n8k16" and em.a_dtype_abbrv == "fp16"
    lane, warp_n, warp_m = em.extract_thread_binding(37 + 64)
    assert (lane, warp_m, warp_n) == (5, 1, 1)
    assert TensorCoreIntrinEmitter(a_dtype="int8", b_dtype="int8", accum_dtype="int32", warp_row_tiles=16,
                                   warp_col_tiles=16, chunk=32).micro_size_k == 32


def _kernel(body, threads=128):
    em = TensorCoreIntrinEmitter(a_dtype="float16", b_dtype="float16", accum_dtype="float32", b_transposed=True,
                                 block_row_warps=2, block_col_warps=2, warp_row_tiles=32, warp_col_tiles=32,
                                 chunk=16)

    @T.prim_func
    def f(C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            As = T.alloc_shared((64, 16), "float16")
            Al = T.alloc_local((16,), "float16")
            Cl = T.alloc_local((32,), "float32")
            body(em, As, Al, Cl, C)
    return f


def test_errors():
    with pytest.raises(TileLangError, match="T.alloc_local"):
        _kernel(lambda em, As, Al, Cl, C: em.ldmatrix_a(As, As, 0))
    with pytest.raises(TileLangError, match="holds 16 elements"):
        _kernel(lambda em, As, Al, Cl, C: em.mma(Al, Al, Al))
    with pytest.raises(TileLangError, match="reduce_k"):
        TensorCoreIntrinEmitter(reduce_k=2, warp_row_tiles=16, warp_col_tiles=16)
    with pytest.raises(TileLangError, match="warp_row_tiles"):
        TensorCoreIntrinEmitter(warp_row_tiles=8)
    wrong_threads = _kernel(lambda em, As, Al, Cl, C: em.ldmatrix_a(Al, As, 0), threads=256)
    with pytest.raises(TileLangError, match="built for 128 threads"):
        tilelang.compile(wrong_threads, target="cpu")


def test_cpu_rejects_indexing_one_threads_registers():
    def body(em, As, Al, Cl, C):
        em.stmatrix(Cl, C)
        Cl[0] = 1.0
    with pytest.raises(TileLangError, match="registers of every thread"):
        tilelang.compile(_kernel(body), target="cpu")


def test_ir_prints_the_ops():
    f = warp_mma_gemm(64, 64, 32, wrt=32, wct=32, chunk=32)
    text = f.script() if hasattr(f, "script") else str(f)
    for name in ("T.warp_mma_load(", "T.warp_mma(", "T.warp_mma_store(", "operand='A'"):
        assert name in text
