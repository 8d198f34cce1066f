"""ops/vector_copy.py `in_bounds_source`: a zero-filling cp.async (a tile copy whose rows or
columns may pass the tensor's end) keeps its source address inside the tensor by indexing
each guarded dimension `(its bound) ? i : 0`, not by selecting the whole pointer
(`pred ? &A[...] : A`), which the compiler recomputed for every copy of every iteration
(DeepSeek mHC's gemm: 833 -> 730 instructions an iteration a warp). Only where the guard
does not change with an enclosing loop (a ragged row count, not a ragged K): else there is
nothing to hoist and the pointer select stays."""
import pytest

import tilelang
import tilelang.language as T
from tilelang.ir import expr as E
from tilelang.ir.buffer import Buffer
from tilelang.backend.cuda.ops.vector_copy import in_bounds_source
from tests.backend.cuda.conftest import needs_nvrtc


def _load():
    A = Buffer("A", (E.Var("n", "int32"), 256), "float16")
    i, j = E.Var("i", "int32"), E.Var("j", "int32")
    return A, i, j, E.BufferLoad(A, [i, j])


def test_each_guarded_dimension_indexes_zero_when_its_bound_fails():
    A, i, j, load = _load()
    sel = E.binop("&&", E.binop("<", i, A.shape[0]), E.binop(">=", j, 0))
    out = in_bounds_source(load, sel)
    assert out.buffer is A
    assert isinstance(out.indices[0], E.Select) and out.indices[0].t is i
    assert E.const_int_value(out.indices[0].f) == 0
    assert isinstance(out.indices[1], E.Select) and out.indices[1].t is j


def test_an_unguarded_dimension_keeps_its_index():
    A, i, j, load = _load()
    out = in_bounds_source(load, E.binop("<", i, A.shape[0]))
    assert isinstance(out.indices[0], E.Select) and out.indices[1] is j


def test_a_condition_that_is_no_bound_keeps_the_pointer_select():
    A, i, j, load = _load()
    assert in_bounds_source(load, E.binop("<", i, E.IntImm(7, "int32"))) is None   # not A's extent
    assert in_bounds_source(load, E.binop("&&", E.binop("<", i, A.shape[0]), E.binop("<", j, i))) is None


def ragged_rowsum(rows=32, cols=256, k=4, threads=128):
    n = T.dynamic("n")

    @T.prim_func
    def main(A: T.Tensor((n, cols * k), "float16"), B: T.Tensor((n, cols), "float32")):
        with T.Kernel(T.ceildiv(n, rows), threads=threads) as bx:
            acc = T.alloc_fragment((rows, cols), "float32")
            T.clear(acc)
            for ko in T.Pipelined(k, num_stages=2):
                s = T.alloc_shared((rows, cols), "float16")
                T.copy(A[bx * rows, ko * cols], s)
                for i, j in T.Parallel(rows, cols):
                    acc[i, j] += s[i, j]
            T.copy(acc, B[bx * rows, 0])
    return main


@needs_nvrtc
def test_the_ragged_tile_copy_reads_no_pointer_select():
    src = tilelang.compile(ragged_rowsum(), target="cuda -arch=sm_90a").get_kernel_source()
    copies = [ln for ln in src.splitlines() if "cp_async_gs_conditional" in ln]
    assert copies and all("? (const void*)" not in ln for ln in copies), copies
    assert all("< n) ? ((bx * 32) + " in ln for ln in copies), copies


def ragged_k(rows=32, cols=256, m=1000, threads=128):
    @T.prim_func
    def main(A: T.Tensor((rows, m), "float16"), B: T.Tensor((rows, cols), "float32")):
        with T.Kernel(1, threads=threads):
            acc = T.alloc_fragment((rows, cols), "float32")
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(m, cols), num_stages=2):
                s = T.alloc_shared((rows, cols), "float16")
                T.copy(A[0, ko * cols], s)
                for i, j in T.Parallel(rows, cols):
                    acc[i, j] += s[i, j]
            T.copy(acc, B)
    return main


@needs_nvrtc
def test_a_guard_the_loop_changes_keeps_the_pointer_select():
    src = tilelang.compile(ragged_k(), target="cuda -arch=sm_90a").get_kernel_source()
    copies = [ln for ln in src.splitlines() if "cp_async_gs_conditional" in ln]
    assert copies and all("? (const void*)" in ln for ln in copies), copies


@pytest.mark.gpu
@pytest.mark.parametrize("n", [70, 32, 5])
def test_ragged_rowsum_matches_torch(n):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    a = torch.randn(n, 1024, device="cuda").half()
    b = torch.full((n, 256), float("nan"), device="cuda")
    tilelang.compile(ragged_rowsum(), target="cuda")(a, b)
    torch.testing.assert_close(b, a.float().view(n, 4, 256).sum(1), rtol=1e-3, atol=1e-3)
