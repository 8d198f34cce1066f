"""plan/copy_forms.py beyond copies: the form of every cooperative nest (a fill, an
element-wise loop) and the nests the pass makes of the tile ops the CUDA pipeline kept
(a T.gemm without a tensor-core form -> its SIMT loop; a T.tma_copy -> bulk copies on
its mbarrier, or its copy nest). Checked on the printed IR before and after the pass."""
import re

import tilelang.language as T
# the printed IR before and after plan_copy_forms, its notes on T.Parallel nests
from tests.backend.cuda.plan.test_copy_forms import _before_after, _notes
from tests.backend.cuda import kernels_ws as W


def fills(M=256, N=192):
    @T.prim_func
    def f(G: T.Tensor((M, N), "float16"), H: T.Tensor((M, N), "float32")):
        with T.Kernel(N // 64, M // 64, threads=128) as (bx, by):
            S = T.alloc_shared((64, 64), "float16")
            T.fill(S, 1.5)
            T.fill(G[by * 64:(by + 1) * 64, bx * 64:(bx + 1) * 64], 2.0)
            for i, j in T.Parallel(64, 64):
                H[by * 64 + i, bx * 64 + j] = S[i, j] * 2.0
    return f


def int8_gemm(M=64, N=64, K=64):
    """int8 operands with a 64 x 64 x 64 tile: on sm_80 the kernel plan gives it no
    tensor-core form (the SIMT loop)."""
    @T.prim_func
    def f(A: T.Tensor((M, K), "int8"), B: T.Tensor((K, N), "int8"), C: T.Tensor((M, N), "int32")):
        with T.Kernel(1, 1, threads=128) as (bx, by):
            As = T.alloc_shared((M, K), "int8")
            Bs = T.alloc_shared((K, N), "int8")
            Cs = T.alloc_shared((M, N), "int32")
            T.clear(Cs)
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, Cs)
            T.copy(Cs, C)
    return f


def test_fills_and_element_wise_loops_get_their_form():
    before, after = _before_after(fills())
    assert _notes(before) == []
    assert _notes(after) == ["fill -> vector x8 (16 B)", "fill -> vector x8 (16 B)", "loop -> vector x4 (16 B)"]
    # the kernel plan printed with the IR lists them after the copies
    assert re.search(r"# other loops:\n *#   fill S \(line \d+\): vector x8 \(16 B\)\n *#   fill G \(line \d+\): "
                     r"vector x8 \(16 B\)\n *#   loop S -> H \(line \d+\): vector x4 \(16 B\)", after), after


def test_a_gemm_without_a_tensor_core_form_becomes_its_simt_loop():
    before, after = _before_after(int8_gemm(), "sm_80")
    gemm_stmt = re.compile(r"^ *T\.gemm\(As, Bs, Cs", re.M)   # (not the plan's comment about it)
    assert gemm_stmt.search(before) and not gemm_stmt.search(after)
    assert "# SIMT gemm -> scalar" in after
    # the plan, printed with the kernel, still lists the gemm with its form
    assert "#   T.gemm(As, Bs, Cs): SIMT loop (no tensor-core form fits)" in after
    # the loop accumulates A[i, k] * B[k, j] in a per-thread register
    assert re.search(r"gacc\[0\] = gacc\[0\] \+ T\.Cast\(\"int32\", As\[gi, gk\]\) \* "
                     r"T\.Cast\(\"int32\", Bs\[gk, gj\]\)", after), after


def test_tma_copy_is_cp_async_on_its_mbarrier_by_default():
    # the range's threads count the barrier's arrivals: cp.async, each thread's pending
    # arrival completing with its copies (ops/cp_async_mbarrier.py)
    before, after = _before_after(W.ws_gemm_tma(256, 256, 256))
    assert before.count("T.tma_copy(") == 8
    assert after.count("# -> T.tma_copy as cp.async arriving on its mbarrier x8 (16 B)") == 8


def test_tma_copy_falls_back_to_its_copy_nest(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_CP_ASYNC_MBARRIER", "0")
    before, after = _before_after(W.ws_gemm_tma(256, 256, 256))
    assert before.count("T.tma_copy(") == 8 and "T.tma_copy(" not in after
    # each is a copy the pass planned as any copy (no cp.async + wait: printed as before)
    assert _notes(after).count("copy -> vector x8 (16 B)") == 8


def test_tma_copy_opt_in_is_issued_in_bulk(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_TMA_COPY", "1")
    before, after = _before_after(W.ws_gemm_tma(256, 256, 256))
    assert before.count("T.tma_copy(") == 8 and "  # ->" not in before
    assert after.count("# -> TMA load (T.tma_copy, on its mbarrier)") == 8


def test_t_vectorized_loops_get_their_vector_width():
    from tests.backend.cuda.ops.test_vectorized_loops import strided_copy
    notes = re.compile(r"T\.vectorized\(128\):  # (.*)")
    for (sa, sb), want in (((128, 128), ["copy -> vector x4 (16 B)"]), ((130, 132), ["copy -> vector x2 (8 B)"]),
                           ((129, 128), [])):
        before, after = _before_after(strided_copy(128, 128, sa, sb))
        assert notes.findall(before) == [] and notes.findall(after) == want, (sa, sb)


def swizzled_tile_atomic():
    @T.prim_func
    def f(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32"),
          out: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((64, 64), "float16")
            b = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, clear_accum=True)
            T.copy(c, C)
            T.atomic_add(out, a, use_tma=True)
    return f


def test_a_use_tma_atomic_is_one_bulk_reduction_or_its_threads_atomics():
    from tests.backend.cuda.ops.test_tma_reduce import _tile_kernel
    before, after = _before_after(_tile_kernel("float32"))
    assert "T.atomic_add(out, s, use_tma=True)\n" in before
    assert "T.atomic_add(out, s, use_tma=True)  # -> TMA reduction (one bulk add of the tile)" in after
    # a tile in wgmma's sw128 layout, which no tensor map of the reduction describes: the threads' atomics
    before, after = _before_after(swizzled_tile_atomic())
    assert "T.atomic_add(out, a, use_tma=True)\n" in before
    assert "use_tma=True" not in after and "# loop -> " in after


def partial_warp_sum(n=48):
    @T.prim_func
    def f(A: T.Tensor((8, 64), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=n):
            s = T.alloc_shared((8, 64), "float32")
            r = T.alloc_shared((8,), "float32")
            T.copy(A, s)
            T.reduce_sum(s, r, dim=1)
            T.copy(r, B)
    return f


def test_a_reduction_on_a_block_of_partial_warps_becomes_its_loop():
    before, after = _before_after(partial_warp_sum(48))
    assert "T.reduce_sum(" in before and "T.reduce_sum(" not in after
    # the reference loop over the rows, planned as any cooperative nest
    assert any(n.startswith("loop -> ") for n in _notes(after)), _notes(after)
    _, whole = _before_after(partial_warp_sum(64))   # whole warps: the warp reduction, kept
    assert "T.reduce_sum(" in whole
