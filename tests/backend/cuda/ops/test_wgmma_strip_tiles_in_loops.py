"""Strip tiles whose first column is a loop variable's multiple (ops/wgmma.py strip_tile,
`_first_column`): `Q_s[:, j * 64:(j + 1) * 64]` in a `T.unroll` loop over K tiles (the
published hand warp-specialized FlashMLA). The strip rule holds when every term is a
multiple of the strip width and the loop's range keeps the strip inside the buffer; the
operand offset is then c0 * R elements. A `T.tma_copy` into such a strip is one TMA box
per strip (ops/tma.py `_column_strip`, TILELANG_CUDA_TMA_COPY=1)."""
import pytest

import tilelang.language as T
from tilelang.arith.simplify import simplify
from tilelang.backend.cuda.ops.wgmma import operand_offset, strip_tile
from tilelang.backend.cuda.plan.copy_forms import plan_copy_forms
from tilelang.backend.cuda.plan.plan_kernels import plan_kernels
from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk, substitute
from tests.backend.cuda.plan.around import around, lines_with

F16 = "float16"


def k_tiles(steps, start, cols=256):
    @T.prim_func
    def main(Q: T.Tensor((64, cols), F16), S_: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            Q_s = T.alloc_shared((64, cols), F16)
            acc = T.alloc_fragment((64, 64), "float32")
            T.copy(Q, Q_s)
            T.clear(acc)
            for j in T.unroll(steps):
                T.gemm(Q_s[:, j * start:j * start + 64], Q_s[:, j * start:j * start + 64], acc, transpose_B=True)
            T.copy(acc, S_)
    return main


def _gemm_and_ranges(func):
    gemms, ranges = [], {}
    walk(func.body, lambda n: gemms.append(n) if isinstance(n, TO.Gemm) else None)
    walk(func.body, lambda n: ranges.__setitem__(id(n.var), (0, E.const_int_value(n.extent) - 1))
         if isinstance(n, S.For) else None)
    return gemms[0], ranges


@pytest.mark.parametrize("steps, start, ok", [(4, 64, True), (3, 128, False), (2, 32, False), (4, 128, False)])
def test_strip_rule_over_the_loop_range(steps, start, ok):
    # (3, 128): the last strip starts at 256, past the 256 columns; (2, 32): column 32 is
    # inside a strip; (4, 128): 384 + 64 > 256
    g, ranges = _gemm_and_ranges(k_tiles(steps, start))
    assert strip_tile(g.A, ranges) is ok
    assert not strip_tile(g.A)   # without the loop's range nothing bounds j


def test_offset_of_a_loop_strip_is_its_first_column_times_the_rows():
    g, ranges = _gemm_and_ranges(k_tiles(4, 64))
    off = simplify(operand_offset(g.A))
    j = next(v for v in _vars(g.A.starts[-1]))
    for jv in range(4):
        assert E.const_int_value(simplify(substitute(off, {j: E.IntImm(jv)}))) == jv * 64 * 64


def _vars(e):
    from tilelang.ir.visitor import collect_vars
    return collect_vars(e)


def test_the_gemm_is_a_wgmma_on_the_strip():
    plan = around(k_tiles(4, 64), plan_kernels)[1]
    assert lines_with(plan, "#   T.gemm(Q_s, Q_s, acc): wgmma m64n64k16, A from shared"), plan


def tma_strips():
    @T.prim_func
    def main(KV: T.Tensor((64, 256), F16), S_: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            KV_s = T.alloc_shared((64, 256), F16)
            acc = T.alloc_fragment((64, 64), "float32")
            bar = T.alloc_barrier(arrive_count=[128] * 4)
            for j in T.unroll(4):
                T.tma_copy(KV[:, j * 64:(j + 1) * 64], KV_s[:, j * 64:(j + 1) * 64], barrier=bar[j])
                T.barrier_arrive(bar[j])
            for j in T.unroll(4):
                T.barrier_wait(bar[j], 0)
                T.wgmma_gemm(KV_s[:, j * 64:(j + 1) * 64], KV_s[:, j * 64:(j + 1) * 64], acc, transpose_B=True,
                             clear_accum=(j == 0))
            T.copy(acc, S_)
    return main


def test_tma_copy_into_a_strip_is_a_tma_box(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_TMA_COPY", "1")
    after = around(tma_strips(), plan_copy_forms)[1]
    line, = lines_with(after, "T.tma_copy(")
    assert line.endswith("# -> TMA load (T.tma_copy, on its mbarrier)"), after


def test_tma_copy_into_a_strip_without_bulk_copies_stays_cp_async(monkeypatch):
    monkeypatch.delenv("TILELANG_CUDA_TMA_COPY", raising=False)
    after = around(tma_strips(), plan_copy_forms)[1]
    line, = lines_with(after, "T.tma_copy(")
    assert "cp.async arriving on its mbarrier" in line, after


def k_slices(M, N, K, n):
    """C = sum_j A[:, j-th K tile] B[:, j-th K tile]^T: K tiles of 16 or 32 columns, inside a strip."""
    kt = K // n

    @T.prim_func
    def main(A: T.Tensor((M, K), F16), B: T.Tensor((N, K), F16), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, K), F16)
            B_s = T.alloc_shared((N, K), F16)
            acc = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            for j in T.serial(n):
                T.wgmma_gemm(A_s[:, j * kt:(j + 1) * kt], B_s[:, j * kt:(j + 1) * kt], acc, transpose_B=True,
                             clear_accum=(j == 0))
            T.copy(acc, C)
    return main


@pytest.mark.parametrize("M, N, K, n", [(64, 64, 64, 4), (64, 64, 256, 8), (64, 128, 64, 2)])
def test_k_ranges_inside_a_strip_are_wgmma_operands_read_k_major(M, N, K, n):
    g, ranges = _gemm_and_ranges(k_slices(M, N, K, n))
    assert strip_tile(g.A, ranges, k_major=True) and not strip_tile(g.A, ranges)
    j = next(v for v in _vars(g.A.starts[-1]))
    off = simplify(operand_offset(g.A))
    kt = K // n
    for jv in range(n):   # strip (jv * kt) // 64 of M x 64 elements, then (jv * kt) % 64 columns into it
        want = (jv * kt) // 64 * M * 64 + (jv * kt) % 64
        assert E.const_int_value(simplify(substitute(off, {j: E.IntImm(jv)}))) == want
    plan = around(k_slices(M, N, K, n), plan_kernels)[1]
    assert lines_with(plan, f"#   T.gemm(A_s, B_s, acc): wgmma m64n{N}k16, A from shared"), plan


@pytest.mark.gpu
@pytest.mark.parametrize("M, N, K, n", [(64, 64, 64, 4), (64, 64, 128, 4), (64, 64, 256, 8), (64, 128, 64, 2)])
def test_k_slices_against_torch(M, N, K, n):
    import torch
    import tilelang
    kern = tilelang.compile(k_slices(M, N, K, n), target="cuda")
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(N, K, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float32)
    kern(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().T, rtol=1e-3, atol=5e-2)
