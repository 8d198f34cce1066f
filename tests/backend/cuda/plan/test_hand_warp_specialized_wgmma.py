"""Gemms of a hand warp-specialized kernel (two 128-thread ranges of a 256-thread block,
`if tx < 128: ... else: ...`, each with its own `T.wgmma_gemm`s), as the published
example_warp_specialize_flashmla.py writes them: a one-warpgroup wgmma each, a register A
fragment kept in registers in the wgmma A layout of its range, and a K tile read as a
column strip `Q_s[:, j * 64:(j + 1) * 64]` of a `T.unroll` loop (ops/wgmma.py strip_tile
with the loop's range). Before, the strip gemms had no wgmma form, every gemm sharing an
accumulator with them fell back to mma.sync, and the register A fragments were placed in
shared memory: the published kernel overflowed shared memory. `T.wgmma_gemm` that cannot
be a wgmma is an error saying why (plan/kernel.py _check_wgmma_request)."""
import re

import pytest

import tilelang
import tilelang.language as T
from tilelang.backend.cuda.plan.plan_kernels import plan_kernels
from tilelang.ir.errors import TargetFeatureError
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.plan.around import around, lines_with

F16, F32 = "float16", "float32"


def two_warpgroups(q_cols=128, start=64):
    """Warpgroup 0: S = Q K^T (K tiles of 64 columns from `start`-wide steps) + P V;
    warpgroup 1: O = P V. P read into a register fragment by each warpgroup."""
    steps = q_cols // start

    @T.prim_func
    def main(Q: T.Tensor((64, q_cols), F16), K: T.Tensor((64, q_cols), F16), P: T.Tensor((64, 64), F16),
             V: T.Tensor((64, 64), F16), S: T.Tensor((64, 64), F32), O: T.Tensor((64, 64), F32)):
        with T.Kernel(1, threads=256):
            Q_s = T.alloc_shared((64, q_cols), F16)
            K_s = T.alloc_shared((64, q_cols), F16)
            P_s = T.alloc_shared((64, 64), F16)
            V_s = T.alloc_shared((64, 64), F16)
            p_0 = T.alloc_fragment((64, 64), F16)
            p_1 = T.alloc_fragment((64, 64), F16)
            acc_0 = T.alloc_fragment((64, 64), F32)
            acc_1 = T.alloc_fragment((64, 64), F32)
            tx = T.get_thread_binding()
            T.copy(Q, Q_s)
            T.copy(K, K_s)
            T.copy(P, P_s)
            T.copy(V, V_s)
            if tx < 128:
                T.copy(P_s, p_0)
                for j in T.unroll(steps):
                    T.wgmma_gemm(Q_s[:, j * start:j * start + 64], K_s[:, j * start:j * start + 64], acc_0,
                                 transpose_B=True, clear_accum=(j == 0))
                T.wgmma_gemm(p_0, V_s, acc_0)
                T.copy(acc_0, S)
            else:
                T.copy(P_s, p_1)
                T.wgmma_gemm(p_1, V_s, acc_1, clear_accum=True)
                T.copy(acc_1, O)
    return main


def _plan(func, arch="sm_90a"):
    return around(func, plan_kernels, arch=arch)[1]


def test_each_range_issues_one_warpgroup_wgmma_with_a_register_a():
    plan = _plan(two_warpgroups())
    gemms = lines_with(plan, "T.wgmma_gemm(") + lines_with(plan, "#   T.gemm(")
    assert "#   T.gemm(Q_s, K_s, acc_0): wgmma m64n64k16, A from shared" in gemms, plan
    assert "#   T.gemm(p_0, V_s, acc_0): wgmma m64n64k16, A from registers" in gemms, plan
    assert "#   T.gemm(p_1, V_s, acc_1): wgmma m64n64k16, A from registers" in gemms, plan
    assert not lines_with(plan, "mma.sync"), plan
    # the A fragments in registers, in the accumulator layout of one warpgroup (64 x 64, 4 warps)
    for frag in ("p_0", "p_1"):
        line, = [ln for ln in lines_with(plan, f"#   {frag} ") if "local.fragment" in ln]
        assert "registers (acc): tl::MmaAccLayout<64, 64, 4, 1>" in line and "shared @" not in line, line
    # the K tiles: strips of the swizzled tiles, `T.wgmma_gemm` kept in the printed IR
    assert lines_with(plan, "T.wgmma_gemm(Q_s[0:64, j * 64:j * 64 + 64], K_s[0:64, j * 64:j * 64 + 64], acc_0")
    for buf in ("Q_s", "K_s", "V_s"):
        assert lines_with(plan, f"#   {buf} ")[0].endswith("sw128"), plan


def test_a_k_tile_this_planner_cannot_read_runs_on_mma_sync_with_the_reason():
    # columns j * 32 ..: the second tile starts in the middle of a 64-column strip; the
    # hardware could (a descriptor offset), this planner has no form for it: mma.sync, a
    # warning and a plan note with the reason (the result is the same)
    with pytest.warns(UserWarning, match=r"T.wgmma_gemm\(Q_s, K_s, acc_0\) runs on mma.sync: "
                                         r"operand A `Q_s` is read in part"):
        text = _plan(two_warpgroups(q_cols=128, start=32))
    assert "runs on mma.sync: operand A `Q_s` is read in part" in str(text)


def test_a_tile_of_fewer_than_64_rows_is_refused():
    # wgmma multiplies 64-row slabs: no hardware form (the published package refuses it too)
    @T.prim_func
    def main(A: T.Tensor((32, 16), F16), B: T.Tensor((16, 64), F16), D: T.Tensor((32, 64), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((32, 16), F16)
            B_s = T.alloc_shared((16, 64), F16)
            C = T.alloc_fragment((32, 64), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.wgmma_gemm(A_s, B_s, C, clear_accum=True)
            T.copy(C, D)
    with pytest.raises(TargetFeatureError, match=r"T.wgmma_gemm\(A_s, B_s, C\) cannot run as a warpgroup MMA"):
        _plan(main)


def test_wgmma_gemm_on_sm80_is_refused_not_run_on_mma_sync():
    with pytest.raises(TargetFeatureError, match="wgmma needs the target sm_90a, this one is sm_80"):
        _plan(two_warpgroups(), arch="sm_80")


def test_t_gemm_of_the_same_kernel_still_falls_back_where_wgmma_does_not_apply():
    """The error is T.wgmma_gemm's own: T.gemm keeps choosing mma.sync for such a tile."""
    @T.prim_func
    def main(Q: T.Tensor((64, 128), F16), K: T.Tensor((64, 128), F16), S: T.Tensor((64, 64), F32)):
        with T.Kernel(1, threads=128):
            Q_s = T.alloc_shared((64, 128), F16)
            K_s = T.alloc_shared((64, 128), F16)
            acc = T.alloc_fragment((64, 64), F32)
            T.copy(Q, Q_s)
            T.copy(K, K_s)
            T.clear(acc)
            for j in T.unroll(3):
                T.gemm(Q_s[:, j * 32:j * 32 + 64], K_s[:, j * 32:j * 32 + 64], acc, transpose_B=True)
            T.copy(acc, S)
    assert lines_with(_plan(main), "mma.sync m16n8k16")


@needs_sass
def test_sass_is_hgmma_without_spills():
    sass = tilelang.compile(two_warpgroups(), target="cuda -arch=sm_90a").get_sass()
    assert "HGMMA.64x64x16.F32" in sass
    assert not re.search(r"\bHMMA\b", sass)
    assert not re.search(r"\b(STL|LDL)\b", sass)


@pytest.mark.gpu
def test_against_torch():
    import torch
    kern = tilelang.compile(two_warpgroups(), target="cuda")
    q, k = (torch.randn(64, 128, device="cuda", dtype=torch.float16) for _ in range(2))
    p, v = (torch.randn(64, 64, device="cuda", dtype=torch.float16) for _ in range(2))
    s = torch.empty(64, 64, device="cuda", dtype=torch.float32)
    o = torch.empty(64, 64, device="cuda", dtype=torch.float32)
    kern(q, k, p, v, s, o)
    pv = p.float() @ v.float()
    torch.testing.assert_close(o, pv, rtol=1e-3, atol=1e-2)
    torch.testing.assert_close(s, q.float() @ k.float().T + pv, rtol=1e-3, atol=5e-2)
