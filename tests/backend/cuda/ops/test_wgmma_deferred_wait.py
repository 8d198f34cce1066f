"""A TMA-ring GEMM loop whose wgmma group stays in flight until the first statement that
needs its accumulator (ops/wgmma_deferred_wait.py): the published fp8 "2xAcc" GEMM, which
promotes its wgmma accumulator into an fp32 one every few iterations. Checked on the plan
(which statements go where), the printed waits, the SASS (ptxas keeps the group in flight:
`WARPGROUP.DEPBAR.LE gsb0, 0x1` after the issue, the full wait only on the promoting path)
and on the GPU against torch."""
import re

import pytest

import tilelang.language as T
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build
from tilelang.backend.registry import get_backend
from tilelang.ir import tile_ops as TO

E4M3, E5M2 = "float8_e4m3fn", "float8_e5m2"


def two_acc_gemm(M, N, K, dtype=E4M3, bk=64, interval=2, stages=3, before=False, other=False, always=False):
    """The published example's kernel as a prim_func: promotes where (k + 1) % interval == 0;
    `before`: a statement reading the accumulator before the gemm; `other`: an else branch
    that scales the promoted sum (not the accumulator); `always`: promotes every iteration
    without a branch (DeepGEMM's form)."""
    bm = bn = 128

    @T.prim_func
    def f(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            As = T.alloc_shared((bm, bk), dtype)
            Bs = T.alloc_shared((bn, bk), dtype)
            Cl = T.alloc_fragment((bm, bn), "float32")
            Ca = T.alloc_fragment((bm, bn), "float32")
            T.clear(Cl)
            T.clear(Ca)
            iters = T.ceildiv(K, bk)
            for k in T.Pipelined(iters, num_stages=stages):
                T.copy(A[by * bm, k * bk], As)
                T.copy(B[bx * bn, k * bk], Bs)
                if before:
                    for i, j in T.Parallel(bm, bn):
                        Ca[i, j] += Cl[i, j]
                T.gemm(As, Bs, Cl, transpose_B=True)
                if always:
                    for i, j in T.Parallel(bm, bn):
                        Ca[i, j] += Cl[i, j]
                    T.clear(Cl)
                elif other:
                    if (k + 1) % interval == 0:
                        for i, j in T.Parallel(bm, bn):
                            Ca[i, j] += Cl[i, j]
                        T.clear(Cl)
                    else:
                        for i, j in T.Parallel(bm, bn):
                            Ca[i, j] *= 1.0
                else:
                    if (k + 1) % interval == 0:
                        for i, j in T.Parallel(bm, bn):
                            Ca[i, j] += Cl[i, j]
                        T.clear(Cl)
            if iters % interval != 0:
                for i, j in T.Parallel(bm, bn):
                    Ca[i, j] += Cl[i, j]
            T.copy(Ca, C[by * bm, bx * bn])
    return f


def _source_and_plan(func, monkeypatch):
    """The CUDA source for sm_90a and what plan_deferred_wait decided for its loop."""
    import tilelang.backend.cuda.ops.wgmma_deferred_wait as D
    seen = []
    real = D.plan_deferred_wait

    def spy(cg, info, mode):
        seen.append(real(cg, info, mode))
        return seen[-1]
    # asked by the pass pipeline_tma_ring, which writes the loop's schedule from its answer
    monkeypatch.setattr(D, "plan_deferred_wait", spy)
    src = get_backend("cuda").generate(func, {"kind": "cuda", "arch": "sm_90a"})[1]
    assert 1 <= len(seen) <= 2 and all((p is None) == (seen[0] is None) for p in seen)
    return src, seen[-1]


def _loop(src):
    """The text of the main loop over k."""
    start = src.index("for (int k = ")
    return src[start:src.index("ring_stage = (ring_stage + 1)", start)]


def test_promotion_waits_inside_its_branch(monkeypatch):
    src, plan = _source_and_plan(two_acc_gemm(1024, 1024, 1024), monkeypatch)
    assert plan is not None and isinstance(plan.gemm, TO.Gemm) and plan.before == []
    assert len(plan.after) == 1   # the `if`: the wait goes into it
    loop = _loop(src)
    issue = loop.index("tl::wgmma_ss_issue<")
    assert "wgmma_gemm_ss" not in loop
    # after the issue: the previous group retires, then its slot is released and refilled
    w1 = loop.index("tl::wgmma_wait<1>();")
    assert issue < w1 < loop.index("slot_release_last(&ring_released[ring_prev]")
    # the full wait opens the promoting branch, right before the accumulator is read
    branch = loop.index("if (((((k + 1)) & 1) == 0)) {")
    assert branch < loop.index("tl::wgmma_wait<0>();", branch) < loop.index("Cl[", branch)
    assert loop.count("tl::wgmma_wait<0>();") == 1
    assert "tl::wgmma_wait<0>();" not in loop[:branch]
    # after the loop: the last group retires before the accumulator is read
    after = src[src.index("ring_stage = (ring_stage + 1)"):]
    assert after.index("tl::wgmma_wait<0>();") < after.index("__syncthreads();")


def test_a_branch_not_touching_the_accumulator_leaves_it_in_flight(monkeypatch):
    src, plan = _source_and_plan(two_acc_gemm(1024, 1024, 1024, other=True), monkeypatch)
    assert plan is not None
    loop = _loop(src)
    branch = loop.index("} else {")
    assert loop.count("tl::wgmma_wait<0>();") == 1 and loop.index("tl::wgmma_wait<0>();") < branch


def test_an_unconditional_promotion_keeps_the_body_schedule(monkeypatch):
    # every path waits: nothing would stay in flight, the slot would only be released later
    src, plan = _source_and_plan(two_acc_gemm(1024, 1024, 1024, always=True), monkeypatch)
    assert plan is None and "wgmma_gemm_ss" in _loop(src)


def test_accumulator_read_before_the_gemm_keeps_the_body_schedule(monkeypatch):
    # the group would still be in flight when the statement before the gemm reads it
    src, plan = _source_and_plan(two_acc_gemm(1024, 1024, 1024, before=True), monkeypatch)
    loop = _loop(src)
    assert plan is None and "wgmma_gemm_ss" in loop and "wgmma_wait<1>" not in loop


def test_two_stages_keep_the_body_schedule(monkeypatch):
    _, plan = _source_and_plan(two_acc_gemm(1024, 1024, 1024, stages=2), monkeypatch)
    assert plan is None


@needs_sass
def test_sass_keeps_the_group_in_flight():
    from tilelang.backend.cuda.host.nvrtc import sass
    art = build(two_acc_gemm(1024, 1024, 8192), "sm_90a")
    text = sass(art.binary)
    lines = [ln for ln in text.splitlines() if re.search(r"/\*[0-9a-f]{4}\*/", ln)]
    ops = [re.sub(r"/\*[0-9a-f]{4}\*/\s+|\s*;.*", "", ln).strip() for ln in lines]
    gmma = [i for i, o in enumerate(ops) if "QGMMA" in o]
    assert len(gmma) == 4          # 2 slabs x 2 k32 steps, issued once per iteration
    waits = [(i, o) for i, o in enumerate(ops) if o.startswith("WARPGROUP.DEPBAR")]
    # one wait for all but the newest group right after the issue, one full wait (the promotion)
    # in the loop, one after it: ptxas did not serialize the wgmma
    assert [o.split()[-1] for _, o in waits] == ["0x1", "0x0", "0x0"], waits
    assert waits[0][0] > gmma[-1]


def calc_diff(x, y):
    x, y = x.double(), y.double()
    return 1 - 2 * (x * y).sum() / (x * x + y * y).sum()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [E4M3, E5M2])
@pytest.mark.parametrize("K,bk,interval,other", [(8192, 64, 2, False), (1088, 64, 2, False), (1056, 32, 4, False),
                                                  (1024, 64, 2, True), (1024, 128, 1, False)])
def test_gpu_two_acc_matches_torch(dtype, K, bk, interval, other):
    import torch
    import tilelang
    from tests.backend.cuda.ops.test_gemm_fp8 import assert_close_to_fp8_wgmma_precision
    M, N = 1024, 512
    torch.manual_seed(0)
    a = (100 * (2 * torch.rand(M, K, device="cuda") - 1)).to(getattr(torch, dtype))
    b = (100 * (2 * torch.rand(N, K, device="cuda") - 1)).to(getattr(torch, dtype))
    c = torch.zeros(M, N, device="cuda")
    tilelang.compile(two_acc_gemm(M, N, K, dtype, bk, interval, other=other), target="cuda")(a, b, c)
    ref = a.float() @ b.float().T
    assert float(calc_diff(c, ref)) < 1e-3   # the published example's check
    assert_close_to_fp8_wgmma_precision(c, a, b)
