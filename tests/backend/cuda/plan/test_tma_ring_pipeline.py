"""plan/tma_ring_pipeline.py: a T.Pipelined loop whose copies run on the TMA ring and whose
body runs slot by slot (here a guarded block-sparse GEMM) becomes its schedule in the IR
(ring allocation, mbarrier init / arrive-expect-tx / wait-parity calls, T.tma_load into a
ring slot, prologue, release-and-refill), checked on the printed IR before and after the
pass; no GPU or NVRTC needed."""
import pytest

from tilelang.backend.registry import parse_target
from tilelang.backend.cuda import pipeline as P
from tilelang.backend.cuda.plan.tma_ring_pipeline import pipeline_tma_ring
from tilelang.ir.printer import func_str
from tilelang.transform.pass_manager import PassContext, run_passes
from tests.backend.cuda.plan.test_pipeline_guarded import blocksparse


def _before_after(func, **config):
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS, "tl.disable_warp_specialized": True, **config})
    ctx.target = parse_target({"kind": "cuda", "arch": "sm_90a"})
    k = P.PASSES.index(pipeline_tma_ring)
    before = run_passes(func, P.PASSES[:k], ctx)
    text = func_str(before)
    return text, func_str(pipeline_tma_ring(before, ctx))


def _ring(text):
    """The schedule's lines from the ring's allocation to its invalidation, dedented, without
    the body's element statements."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if "T.tma_ring_alloc(" in ln)
    end = next(i for i, ln in enumerate(lines) if "T.tma_ring_invalidate(" in ln)
    ind = len(lines[start]) - len(lines[start].lstrip())
    return [ln[ind:] for ln in lines[start:end + 1]]


@pytest.mark.parametrize("stages", [2, 4])
def test_guarded_ring_becomes_explicit_mbarrier_schedule(stages):
    before, after = _before_after(blocksparse(256, 256, 256, stages=stages))
    assert "T.Pipelined(8, num_stages=%d)" % stages in before and "T.tma_ring_alloc" not in before
    assert "T.Pipelined" not in after.split("# pipelines:")[1]
    ring = _ring(after)
    text = "\n".join(ring)
    assert ring[0] == f"T.tma_ring_alloc(ring_full, ring_released, stages={stages})"
    assert f"for ring_s in T.serial({stages}):" in text and "'tl.mbarrier_init', ring_full[ring_s], 1" in text
    # the prologue fills every slot, the main loop waits on the slot's phase, runs the body
    # under its mask in the slot, and the warp completing the round refills it
    assert f"for ring_p in T.serial({stages}):" in text and "if ring_p < 8:" in text
    assert "'tl.mbarrier_wait_parity', ring_full[ring_stage[0]], ring_phase[0]" in text
    assert f"if T.call_extern(\"bool\", 'tl.tma_slot_release_last', ring_released[ring_stage[0]], 4) " \
           f"and k + {stages} < 8:" in text
    assert f"ring_k_1 = k + {stages}" in text
    # a masked iteration is an empty round: a plain arrival instead of the bytes
    refill = text[text.index("ring_k_1 = "):]
    assert refill.index("if not Mask[") < refill.index("'tl.mbarrier_arrive', ring_full[ring_stage[0]]") < \
        refill.index("'tl.mbarrier_arrive_expect_tx', ring_full[ring_stage[0]], 16384") < \
        refill.index("T.tma_load(A[")
    assert f"with T.stage_slot(A_s, B_s, slot=ring_stage[0], stages={stages}):" in text
    assert text.index("ring_phase[0] = ring_phase[0] ^ T.uint32(1)") < text.index("T.tma_ring_invalidate(ring_full)")


def test_loops_off_the_ring_are_left_alone():
    from tests.backend.cuda.plan.test_cp_async_pipeline import gemm
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS})
    ctx.target = parse_target({"kind": "cuda", "arch": "sm_80"})
    k = P.PASSES.index(pipeline_tma_ring)
    before = run_passes(gemm(num_stages=3), P.PASSES[:k], ctx)
    assert pipeline_tma_ring(before, ctx) is before


def test_short_trip_count_fills_only_the_iterations_that_exist():
    # two iterations, three slots: the prologue's guard leaves the third slot empty
    _, after = _before_after(blocksparse(256, 256, 64, stages=3))
    text = "\n".join(_ring(after))
    assert "for ring_p in T.serial(3):" in text and "if ring_p < 2:" in text
    assert "and k + 3 < 2:" in text   # no refill ever runs


def test_attention_ring_with_ping_pong_and_l2_prefetch(monkeypatch):
    """A register-only body (FlashAttention, causal: the trip count depends on the block)
    runs on the ring without a barrier per iteration; TILELANG_CUDA_PINGPONG=1 makes the
    two warpgroups take turns at the first gemm, TILELANG_CUDA_TMA_L2_PREFETCH=2 prefetches
    iteration +2 with every load."""
    from tilelang.backend.cuda.options import CudaOptions, OPTIONS
    from tests.backend.cuda.helpers import load_example
    fa = load_example("flash_attention", "ring")
    pf = fa.flash_attention.get_tir(1, 2, 512, 512, 64, is_causal=True, block_M=128, block_N=128, num_stages=2,
                                    threads=256)
    env = {"TILELANG_CUDA_PINGPONG": "1", "TILELANG_CUDA_TMA_L2_PREFETCH": "2"}
    opts = CudaOptions.from_config(None, "sm_90a", env=env)
    _, after = _before_after(pf, **{OPTIONS: opts})
    text = "\n".join(_ring(after))
    loop = text[text.index("for kb in T.serial("):]
    assert "T.sync_threads()" not in loop[:loop.index("# inserted: every copy of the ring")].rsplit("\n", 1)[0]
    assert "ring_wg = tx // 128" in text
    assert text.index("if ring_wg == 1:") < text.index("for kb in T.serial(")
    turn = loop.index("'tl.named_barrier_sync', 14 + ring_wg, 256")
    assert turn < loop.index("T.gemm(Q_shared, K_shared") < loop.index("'tl.named_barrier_arrive', 15 - ring_wg, 256")
    assert text.count("T.tma_prefetch_l2(K)") == 2 and text.count("T.tma_prefetch_l2(V)") == 2


def test_an_unscheduled_ring_loop_at_the_printer_is_an_internal_error(monkeypatch):
    from tilelang.backend.cuda import backend
    monkeypatch.setattr(P, "PASSES", [p for p in P.PASSES if p is not pipeline_tma_ring])
    with pytest.raises(AssertionError, match="pipeline_tma_ring"):
        backend.generate(blocksparse(256, 256, 256, stages=2), "cuda -arch=sm_90a",
                         {"tl.disable_warp_specialized": True})
