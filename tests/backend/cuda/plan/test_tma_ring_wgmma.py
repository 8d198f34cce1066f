"""plan/tma_ring_wgmma.py: the pass pipeline_tma_ring replaces a TMA-ring GEMM loop that keeps
one wgmma group in flight by its schedule in the IR: the gemm issued only (its annotation,
printed), `T.warpgroup_wait(1)` after it, the previous iteration's slot released and
refilled (release counters; "empty" mbarriers with TILELANG_CUDA_TMA_REFILL=wait or TMA
multicast, whose pairs of blocks become the launch's clusters), the last group retired
after the loop; for the fp8 2xAcc body the full wait inside the branch that reads the
accumulator. Checked on the printed IR after the pass; no GPU or NVRTC needed (the GPU
checks against torch: tests/backend/cuda/ops/test_tma_multicast.py,
test_wgmma_deferred_wait.py, tests/backend/cuda/test_run_gpu.py)."""
import pytest

from tilelang.backend.cuda.options import CudaOptions, OPTIONS
from tests.backend.cuda import kernels as KS
from tests.backend.cuda.plan.test_tma_ring_pipeline import _before_after, _ring

WAIT1 = "T.evaluate(T.call_extern(\"handle\", 'tl.warpgroup_wait', 1))"
WAIT0 = "T.evaluate(T.call_extern(\"handle\", 'tl.warpgroup_wait', 0))"
FENCE = "T.evaluate(T.call_extern(\"handle\", 'tl.warpgroup_fence_operand', T.access_ptr(Cf[0, 0], \"rw\"), 128))"


def _after(func, **env):
    # (the options as the backend reads them: the pass config's switch off warp specialization)
    opts = CudaOptions.from_config({"tl.disable_warp_specialized": True}, "sm_90a", env=env)
    before, after = _before_after(func, **{OPTIONS: opts})
    return before, after, "\n".join(_ring(after))


def _gemm(stages=3):
    return KS.gemm(512, 512, 512, bm=128, bn=128, bk=32, threads=128, stages=stages)


def _loop_body(text):
    return text[text.index("for k in T.serial("):text.index("ring_stage[0] = ring_stage[0] + 1")]


@pytest.mark.parametrize("stages", [3, 4])
def test_one_gemm_loop_keeps_a_group_in_flight(stages):
    before, after, text = _after(_gemm(stages))
    assert f"T.Pipelined(16, num_stages={stages})" in before and "T.tma_ring_alloc" not in before
    assert "T.Pipelined" not in after.split("# pipelines:")[1]
    assert text.splitlines()[0] == f"T.tma_ring_alloc(ring_full, ring_released, stages={stages})"
    body = _loop_body(text)
    # wait for the slot, issue the group, retire the previous one, then release its slot
    wait_full = body.index("'tl.mbarrier_wait_parity', ring_full[ring_stage[0]], ring_phase[0]")
    issue = body.index("T.gemm(As, Bs, Cf)  # issued only")
    assert wait_full < issue < body.index(WAIT1) < body.index("if k > 0:")
    assert f"ring_prev = T.if_then_else(ring_stage[0] == 0, {stages - 1}, ring_stage[0] - 1)" in body
    assert (f"if T.call_extern(\"bool\", 'tl.tma_slot_release_last', ring_released[ring_prev], 4) "
            f"and k + {stages - 1} < 16:") in body
    assert f"ring_k_1 = k + {stages - 1}" in body and "T.tma_load(A[" in body and "slot=ring_prev" in body
    assert WAIT0 not in body   # the group stays in flight across iterations
    # after the loop: the last group retires, its registers are fenced, then the block barrier
    tail = text[text.index("ring_phase[0] = ring_phase[0] ^ T.uint32(1)"):]
    assert tail.index(WAIT0) < tail.index(FENCE) < tail.index("T.sync_threads()") < \
        tail.index("T.tma_ring_invalidate(ring_full)")


def test_refill_wait_uses_empty_barriers():
    _, _, text = _after(_gemm(3), TILELANG_CUDA_TMA_REFILL="wait")
    assert text.splitlines()[0] == "T.tma_ring_alloc(ring_full, ring_empty, stages=3)"
    assert "'tl.mbarrier_init', ring_empty[ring_s], 4" in text and "ring_released" not in text
    body = _loop_body(text)
    arrive = body.index("if tx % 32 == 0:")
    assert arrive < body.index("'tl.mbarrier_arrive', ring_empty[ring_prev]") < body.index("if tx == 0 and k + 2 < 16:")
    refill = body[body.index("if tx == 0 and k + 2 < 16:"):]
    assert refill.index("'tl.mbarrier_wait_parity', ring_empty[ring_prev], T.if_then_else(ring_stage[0] == 0, "
                        "ring_phase[0] ^ T.uint32(1), ring_phase[0])") < refill.index("T.tma_load(A[")
    assert "T.tma_ring_invalidate(ring_full, ring_empty)" in text


def test_multicast_pairs_are_the_launchs_clusters():
    big = KS.gemm(1024, 1024, 512, bm=128, bn=256, bk=64, threads=256, stages=4)
    before, after, text = _after(big, TILELANG_CUDA_TMA_MULTICAST="1")
    assert "cluster_dims" not in before and "T.Kernel(4, 8, threads=256, cluster_dims=(1, 2, 1))" in after
    assert "'tl.mbarrier_init', ring_empty[ring_s], 16" in text   # the warps of both blocks
    # the rank, then a cluster barrier before the prologue: the peer's barriers are initialized
    assert text.index("ring_rank = T.call_extern(\"int32\", 'tl::block_rank_in_cluster')") < \
        text.index("'tl.cluster_sync'") < text.index("for ring_p in T.serial(4):")
    # B's tile is shared by the blocks of a column: each loads half of its strips for both
    assert text.count("multicast='strips', rank=ring_rank)") == 2
    assert "T.tma_load(A[" in text and "T.tma_load(A[by * 128 + i0_1, ring_k * 64 + i1_1], As, slot=ring_p, " \
        "barrier=ring_full[ring_p])" in text
    body = _loop_body(text)
    assert "'tl.mbarrier_arrive_cluster', ring_empty[ring_prev], ring_rank ^ 1" in body
    tail = text[text.index("ring_phase[0] = ring_phase[0] ^ T.uint32(1)"):]
    assert tail.index(WAIT0) < tail.index("'tl.cluster_sync'") < tail.index("T.tma_ring_invalidate(")
    assert "T.sync_threads()" not in tail


def test_without_multicast_the_launch_keeps_its_blocks():
    big = KS.gemm(1024, 1024, 512, bm=128, bn=256, bk=64, threads=256, stages=4)
    _, after, text = _after(big)
    assert "cluster_dims" not in after and "multicast=" not in text and "tl.cluster_sync" not in text


def test_deferred_wait_goes_into_the_promoting_branch():
    from tests.backend.cuda.ops.test_wgmma_deferred_wait import two_acc_gemm
    _, after, text = _after(two_acc_gemm(512, 512, 512))
    body = text[text.index("for k in T.serial("):text.index("ring_stage[0] = ring_stage[0] + 1")]
    issue = body.index("T.gemm(As, Bs, Cl, transpose_B=True)  # issued only")
    assert issue < body.index(WAIT1) < body.index("'tl.tma_slot_release_last', ring_released[ring_prev], 4")
    branch = body.index("if (k + 1) % 2 == 0:")
    fence = "'tl.warpgroup_fence_operand', T.access_ptr(Cl[0, 0], \"rw\"), 128"
    assert branch < body.index(WAIT0) < body.index(fence) < body.index("Ca[i, j] = Ca[i, j] + Cl[i, j]")
    assert body.count(WAIT0) == 1
    tail = text[text.index("ring_phase[0] = ring_phase[0] ^ T.uint32(1)"):]
    assert tail.index(WAIT0) < tail.index(fence) < tail.index("T.sync_threads()")


def test_the_printer_no_longer_schedules_it(monkeypatch):
    from tilelang.backend.cuda import backend
    from tilelang.backend.cuda import pipeline as P
    from tilelang.backend.cuda.plan.tma_ring_pipeline import pipeline_tma_ring
    monkeypatch.setattr(P, "PASSES", [p for p in P.PASSES if p is not pipeline_tma_ring])
    with pytest.raises(AssertionError, match="pipeline_tma_ring"):
        backend.generate(_gemm(3), "cuda -arch=sm_90a", {"tl.disable_warp_specialized": True})


@pytest.mark.gpu
@pytest.mark.parametrize("refill", ["", "wait"])
@pytest.mark.parametrize("M,N,K,stages,trans_B", [(512, 512, 512, 3, False), (1000, 768, 520, 4, False),
                                                  (512, 384, 1024, 3, True)])
def test_in_flight_gemm_matches_torch_gpu(monkeypatch, refill, M, N, K, stages, trans_B):
    """The schedule as the pass writes it, without a producer warpgroup (its release counters,
    or thread 0 waiting on the "empty" barriers), against torch."""
    import torch
    import tilelang
    monkeypatch.setenv("TILELANG_CUDA_TMA_REFILL", refill)
    f = KS.gemm(M, N, K, bm=128, bn=128, bk=64, threads=128, stages=stages, trans_B=trans_B)
    kern = tilelang.compile(f, target="cuda", pass_configs={"tl.disable_warp_specialized": True})
    src = kern.get_kernel_source()
    assert "wgmma_ss_issue<" in src and "tl::wgmma_wait<1>();" in src and "producer warpgroup" not in src
    torch.manual_seed(0)
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(N, K, device="cuda", dtype=torch.float16) if trans_B else \
        torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    kern(a, b, c)
    ref = a.float() @ (b.float().T if trans_B else b.float())
    torch.testing.assert_close(c.float(), ref, rtol=1e-2, atol=1e-1)
