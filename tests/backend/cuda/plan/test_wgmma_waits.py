"""plan/wgmma_waits.py: a wgmma group is waited for before the first statement of its
sequence that needs it (its accumulator, a write to one of its operands, an Evaluate),
as `wait_group k` leaving the k newer groups in flight; right after its gemm when that
statement comes next (the gemm's own wait). Plans of small kernels, and the printed waits."""
import pytest

import tilelang.language as T
from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk
from tilelang.backend.cuda.plan.plan_kernels import plan_kernels, kernel_plan
from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.plan.test_plan_kernels import _launch, _lower_to

F16, F32 = "float16", "float32"


def two_products(refill_a):
    """c1 = A B, c2 = A B2 (both wgmma), then work that needs c1 only, then c2; with
    `refill_a` the shared A tile is rewritten (an operand write) after the second product."""

    @T.prim_func
    def main(A: T.Tensor((64, 64), F16), B: T.Tensor((64, 64), F16), B2: T.Tensor((64, 64), F16),
             X: T.Tensor((64, 64), F32), C1: T.Tensor((64, 64), F32), C2: T.Tensor((64, 64), F32)):
        with T.Kernel(1, threads=128):
            a_s = T.alloc_shared((64, 64), F16)
            b_s = T.alloc_shared((64, 64), F16)
            b2_s = T.alloc_shared((64, 64), F16)
            x = T.alloc_fragment((64, 64), F32)
            c1 = T.alloc_fragment((64, 64), F32)
            c2 = T.alloc_fragment((64, 64), F32)
            T.copy(A, a_s)
            T.copy(B, b_s)
            T.copy(B2, b2_s)
            T.copy(X, x)
            T.gemm(a_s, b_s, c1, clear_accum=True)
            T.gemm(a_s, b2_s, c2, clear_accum=True)
            for i, j in T.Parallel(64, 64):
                x[i, j] = x[i, j] * 2.0          # needs neither group
            if refill_a:
                T.copy(B, a_s)                   # writes both gemms' A: both groups complete first
            for i, j in T.Parallel(64, 64):
                c1[i, j] = c1[i, j] + x[i, j]    # needs c1 only: wait_group 1
            T.copy(c1, C1)
            T.copy(c2, C2)
    return main


def _plan(func):
    text, after, _ = _lower_to(func, plan_kernels)
    launch = _launch(after)
    plan = kernel_plan(launch)
    gemms = []
    walk(launch.body, lambda n: gemms.append(n) if isinstance(n, TO.Gemm) else None)
    return plan, gemms


def _waits(plan):
    return sorted((w.left, [g.C.buffer.name for g in w.gemms], w.at)
                  for w in list(plan.wgmma_waits_before.values()) + list(plan.wgmma_waits_after.values()))


def test_a_statement_waits_only_for_the_groups_it_needs():
    plan, gemms = _plan(two_products(False))
    assert [id(g) in plan.chained_gemms for g in gemms] == [True, True]
    assert _waits(plan) == [(0, ["c2"], "before the statement writing C2"),
                            (1, ["c1"], "before the statement writing c1")]


def test_an_operand_write_completes_every_group_reading_it():
    plan, gemms = _plan(two_products(True))
    assert [id(g) in plan.chained_gemms for g in gemms] == [True, True]
    assert _waits(plan) == [(0, ["c1", "c2"], "before the statement writing a_s")]


def test_switched_off_each_gemm_waits_in_place(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_WGMMA_IN_FLIGHT", "0")
    plan, _ = _plan(two_products(False))
    assert not plan.chained_gemms and _waits(plan) == []


@needs_nvrtc
def test_the_waits_are_printed_with_fences():
    from tests.backend.cuda.helpers import build
    src = build(two_products(False)).source
    second = src.index("tl::wgmma_ss_issue<64, 64, 64, false, false, half>(a_s, b2_s, c2, tl_tid);")
    w1 = src.index("tl::wgmma_wait<1>();\n  tl::fence_regs<32>(c1);", second)
    w0 = src.index("tl::wgmma_wait<0>();\n  tl::fence_regs<32>(c2);", w1)
    assert src.index("x[", second) < w1 < src.index("c1[", w1) and w0 > w1


@pytest.mark.gpu
@pytest.mark.parametrize("refill_a", [False, True])
def test_two_products_match_torch(refill_a):
    """The groups left in flight (wait_group 1, then 0; or one wait before the operand
    write) give the program's results."""
    import torch
    import tilelang
    kern = tilelang.compile(two_products(refill_a), target="cuda")
    torch.manual_seed(0)
    a, b, b2 = (torch.randn(64, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    x = torch.randn(64, 64, device="cuda")
    c1, c2 = torch.empty(64, 64, device="cuda"), torch.empty(64, 64, device="cuda")
    kern(a, b, b2, x, c1, c2)
    torch.testing.assert_close(c1, a.float() @ b.float() + 2 * x, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(c2, a.float() @ b2.float(), rtol=1e-2, atol=1e-2)


def slotted_loop(nblk):
    """In a loop: S = A B[slot] (wgmma), then x = 2 x, then T = A B2[slot] whose slot is a
    local variable the loop writes after S: T may not move above that write; an
    independent gemm (U = A C) moves above x = 2 x."""

    @T.prim_func
    def main(A: T.Tensor((64, 64), F16), B: T.Tensor((2, 64, 64), F16), X: T.Tensor((64, 64), F32),
             S_: T.Tensor((nblk, 64, 64), F32), T_: T.Tensor((nblk, 64, 64), F32), U_: T.Tensor((nblk, 64, 64), F32)):
        with T.Kernel(1, threads=128):
            a_s = T.alloc_shared((64, 64), F16)
            b_s = T.alloc_shared((2, 64, 64), F16)
            x = T.alloc_fragment((64, 64), F32)
            s = T.alloc_fragment((64, 64), F32)
            t = T.alloc_fragment((64, 64), F32)
            u = T.alloc_fragment((64, 64), F32)
            slot = T.alloc_var("int32")
            T.copy(A, a_s)
            T.copy(B, b_s)
            T.copy(X, x)
            for k in T.serial(nblk):
                slot = 0
                T.gemm(a_s, b_s[slot, :, :], s, clear_accum=True)
                for i, j in T.Parallel(64, 64):
                    x[i, j] = x[i, j] * 2.0
                slot = 1
                T.gemm(a_s, b_s[slot, :, :], t, clear_accum=True)
                for i, j in T.Parallel(64, 64):
                    x[i, j] = x[i, j] + 1.0
                T.gemm(a_s, b_s[0, :, :], u, clear_accum=True)
                T.copy(s, S_[k, :, :])
                T.copy(t, T_[k, :, :])
                T.copy(u, U_[k, :, :])
    return main


def test_a_gemm_moves_up_past_independent_statements_only():
    from tilelang.ir import stmt as S
    plan, gemms = _plan(slotted_loop(2))
    if not all(getattr(plan.gemms[id(g)], "kind", "") == "wgmma" for g in gemms):
        pytest.skip("the slot gemms do not run on wgmma here")
    _, after, _ = _lower_to(slotted_loop(2), plan_kernels)
    loop = []
    walk(_launch(after).body, lambda n: loop.append(n) if isinstance(n, S.For) and n.kind == S.SERIAL else None)
    order = [("gemm " + n.C.buffer.name) if isinstance(n, TO.Gemm) else type(n).__name__ for n in loop[0].body.stmts]
    # s stays after `slot = 0` and t after `slot = 1` (their regions read slot); u (with
    # the clear of its accumulator) moves above `x = x + 1`, up to t
    assert order == ["BufferStore", "For", "gemm s", "For", "BufferStore", "For", "gemm t",
                     "For", "gemm u", "For", "For", "For", "For"], order


@pytest.mark.gpu
def test_slotted_loop_matches_torch():
    import torch
    import tilelang
    kern = tilelang.compile(slotted_loop(2), target="cuda")
    torch.manual_seed(0)
    a = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    b = torch.randn(2, 64, 64, device="cuda", dtype=torch.float16)
    x = torch.randn(64, 64, device="cuda")
    s, t, u = (torch.empty(2, 64, 64, device="cuda") for _ in range(3))
    kern(a, b, x, s, t, u)
    for k in range(2):
        torch.testing.assert_close(s[k], a.float() @ b[0].float(), rtol=1e-2, atol=1e-2)
        torch.testing.assert_close(t[k], a.float() @ b[1].float(), rtol=1e-2, atol=1e-2)
        torch.testing.assert_close(u[k], a.float() @ b[0].float(), rtol=1e-2, atol=1e-2)
