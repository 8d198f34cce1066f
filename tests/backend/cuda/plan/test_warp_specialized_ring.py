"""plan/warp_specialized_ring.py: the pass pipeline_tma_ring writes the two roles of the
warp-specialized loop (plan/warp_specialize.py's decision) into the IR: at the kernel's start
the ring's "full" and "empty" mbarriers and `with T.producer_warpgroup(threads=T):` holding
the register split and the producer's loop (empty-barrier wait, bytes, ring loads); in place
of the loop the consumers' (full-barrier wait, early release, the gemm issued only,
`T.warpgroup_wait(1)`, the release of the previous slot). Checked on the printed IR after the
pass; no GPU or NVRTC needed (the GPU runs against torch: test_warp_specialize.py,
test_warp_specialize_dequant.py)."""
import pytest

from tilelang.backend.registry import parse_target
from tilelang.backend.cuda import pipeline as P
from tilelang.backend.cuda.plan.tma_ring_pipeline import pipeline_tma_ring
from tilelang.ir.printer import func_str
from tilelang.transform.pass_manager import PassContext, run_passes
from tests.backend.cuda import kernels as KS
from tests.backend.cuda.plan.test_warp_specialize import blocksparse


def _after(func, **env):
    from tilelang.backend.cuda.options import CudaOptions, OPTIONS
    # single blocks unless a test asks for pairs (test_warp_specialized_multicast.py)
    env = {"TILELANG_CUDA_WS_MULTICAST": "0", **env}
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS,
                              OPTIONS: CudaOptions.from_config(None, "sm_90a", env=env)})
    ctx.target = parse_target({"kind": "cuda", "arch": "sm_90a"})
    k = P.PASSES.index(pipeline_tma_ring)
    before = run_passes(func, P.PASSES[:k], ctx)
    before_text = func_str(before)
    text = func_str(pipeline_tma_ring(before, ctx))
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if "T.tma_ring_alloc(" in ln)
    ind = len(lines[start]) - len(lines[start].lstrip())
    return before_text, "\n".join(ln[ind:] for ln in lines[start:])


def _roles(text):
    """(the T.producer_warpgroup block, the consumers' loop and what follows it)."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("with T.producer_warpgroup("))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith(" "))
    return "\n".join(lines[start:end]), text[text.index("for k_1 in T.serial("):]


def test_two_consumer_warpgroups_and_their_producer():
    before, text = _after(KS.gemm(1024, 1024, 512, bm=128, bn=256, bk=64, threads=256, stages=3))
    assert "T.Pipelined(8, num_stages=3)" in before and "T.producer_warpgroup" not in before
    lines = text.splitlines()
    assert lines[0] == "T.tma_ring_alloc(ring_full, ring_empty, stages=3)"
    # one arrival per consumer warp on "empty"; every thread's last block barrier before the roles part
    assert "'tl.mbarrier_init', ring_empty[ring_s], 8" in text and "'tl.mbarrier_init', ring_full[ring_s], 1" in text
    assert text.index("the producer leaves after its loop") < text.index("with T.producer_warpgroup(threads=256):")
    producer, consumer = _roles(text)
    # the producer gives registers back; its elected thread waits for a released slot, then loads
    assert producer.index("'tl.set_max_nreg', 24, 0") < producer.index("if tx == 256:") < \
        producer.index("'tl.mbarrier_wait_parity', ring_empty[ring_stage[0]], ring_phase[0] ^ T.uint32(1)") < \
        producer.index("'tl.mbarrier_arrive_expect_tx', ring_full[ring_stage[0]], 49152") < \
        producer.index("T.tma_load(A[")
    assert "T.gemm(" not in producer and "Cf[" not in producer
    # the consumers take the registers, then run the user's code and their loop
    assert text.index("'tl.set_max_nreg', 240, 1") < text.index("Cf = T.alloc_fragment(") < \
        text.index("for k_1 in T.serial(8):")
    early = consumer.index("if ring_prev[0] >= 0 and not T.call_extern(\"bool\", 'tl.all_sync', T.uint32(4294967295), "
                           "T.call_extern(\"bool\", 'tl.mbarrier_test_parity', ring_full[ring_stage_1[0]], "
                           "ring_phase_1[0])):")
    wait = consumer.index("'tl.mbarrier_wait_parity', ring_full[ring_stage_1[0]], ring_phase_1[0]")
    issue = consumer.index("T.gemm(As, Bs, Cf)  # issued only")
    w1 = consumer.index("'tl.warpgroup_wait', 1")
    release = consumer.index("if ring_prev[0] >= 0 and tx % 32 == 0:")
    assert early < wait < issue < w1 < release < consumer.index("ring_prev[0] = ring_stage_1[0]")
    assert "'tl.mbarrier_arrive', ring_empty[ring_prev[0]]" in consumer[release:]
    tail = consumer[consumer.index("ring_phase_1[0] = ring_phase_1[0] ^ T.uint32(1)"):]
    assert tail.index("'tl.warpgroup_wait', 0") < tail.index("'tl.warpgroup_fence_operand'") < \
        tail.index("T.sync_threads()  # inserted, after a fence.proxy.async: the slots are read")


def test_one_consumer_warpgroup_keeps_its_registers_and_late_release_switch():
    _, text = _after(KS.gemm(512, 512, 512, threads=128, stages=2), TILELANG_CUDA_WS_EARLY_RELEASE="0")
    assert "with T.producer_warpgroup(threads=128):" in text and "set_max_nreg" not in text
    assert "'tl.mbarrier_init', ring_empty[ring_s], 4" in text
    assert "tl.mbarrier_test_parity" not in text and "ring_prev[0] = ring_stage_1[0]" in text


@pytest.mark.parametrize("threads", [128, 256])
def test_a_masked_iteration_is_skipped_by_both_roles(threads):
    _, text = _after(blocksparse(threads=threads))
    producer, consumer = _roles(text)
    skip = producer.index("if not Mask[by, bx, k]:")
    assert skip < producer.index("continue") < producer.index("ring_empty[ring_stage[0]]")
    # the producer's loads follow its skip unguarded (no empty round: the consumers skip it too)
    assert "'tl.mbarrier_arrive', ring_full" not in producer
    assert consumer.index("if not Mask[by, bx, k_1]:") < consumer.index("continue") < \
        consumer.index("'tl.mbarrier_wait_parity', ring_full[")


def test_a_body_of_more_than_one_gemm_releases_its_own_slot():
    from tests.backend.cuda.plan.test_warp_specialize_dequant import dequant_gemm
    _, text = _after(dequant_gemm(256, 256, 256))
    _, consumer = _roles(text)
    assert "ring_prev" not in consumer and "# issued only" not in consumer
    wait = consumer.index("'tl.mbarrier_wait_parity', ring_full[ring_stage_1[0]], ring_phase_1[0]")
    # the previous iteration's conversion and gemm are done with the shared tile: a barrier (theirs);
    # unfenced, since the conversion's own fenced barrier published the tile (plan/proxy_fences.py
    # writes_fenced_within)
    assert wait < consumer.index("T.sync_threads()  # inserted: the previous iteration's writes to shared memory")
    gemm = consumer.index("T.gemm(")
    assert gemm < consumer.index("if tx % 32 == 0:", gemm) < \
        consumer.index("'tl.mbarrier_arrive', ring_empty[ring_stage_1[0]]", gemm)


def test_the_printer_no_longer_specializes(monkeypatch):
    from tilelang.backend.cuda import backend
    monkeypatch.setattr(P, "PASSES", [p for p in P.PASSES if p is not pipeline_tma_ring])
    with pytest.raises(AssertionError, match="pipeline_tma_ring"):
        backend.generate(KS.gemm(512, 512, 512, threads=128, stages=2), "cuda -arch=sm_90a")
