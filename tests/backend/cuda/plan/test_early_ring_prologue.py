"""plan/early_ring_prologue.py (`issue_ring_prologue_early`): a TMA ring's head (allocation,
barrier initialisation, prologue) moves above the tile loads right before its loop, so that
the first slots' bulk copies are in flight while those tiles load (FlashAttention's Q); a
barrier then orders the moved-over shared stores before the loop. Nests that touch a ring
buffer, or a kernel without such a load (a GEMM), keep the order.
CPU: the IR before/after the pass, the switch; GPU: FlashAttention bhsd against torch."""
import pytest

import tilelang.language as T
from tests.backend.cuda.helpers import load_example
from tests.backend.cuda.plan.around import around, lines_with
from tilelang.backend.cuda.plan.early_ring_prologue import issue_ring_prologue_early

FA = load_example("flash_attention", "early_ring")


def flash(s=256, d=64, causal=False):
    # the published example_mha_fwd_bhsd's regression configuration: two iterations of 128 x 128 tiles
    return FA.flash_attention.func(1, 4, s, s, d, is_causal=causal, layout="bhsd", block_M=128, block_N=128,
                                   num_stages=2, threads=256)


def _order(text):
    """The first line index of the ring's prologue loads, of Q's load and of the loop."""
    lines = [ln.strip() for ln in text.splitlines()]
    at = lambda pred: next(i for i, ln in enumerate(lines) if pred(ln))   # noqa: E731
    return (at(lambda ln: ln.startswith("T.tma_load(K[")), at(lambda ln: ln.startswith("Q_shared[")),
            at(lambda ln: ln.startswith("for kb in T.serial(")))


def test_the_ring_prologue_moves_above_the_q_load():
    before, after = around(flash(), issue_ring_prologue_early)
    k, q, loop = _order(before)
    assert q < k < loop
    k, q, loop = _order(after)
    assert k < q < loop
    # Q's stores are ordered before the loop by a barrier of their own (the init barrier did it before)
    assert lines_with(after, "Q_shared written before the TMA ring's loop") == [
        "T.sync_threads()  # inserted, after a fence.proxy.async: Q_shared written before the TMA ring's loop "
        "(its prologue issued first)"]


def test_switched_off_the_head_stays(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_EARLY_RING_PROLOGUE", "0")
    before, after = around(flash(), issue_ring_prologue_early)
    assert before == after


def gemm_after_a_tile_load(touch_ring):
    """W loaded before a pipelined GEMM over A's and B's tiles; `touch_ring`: a nest between
    them reads the ring buffer Bs (the head must not pass it)."""
    @T.prim_func
    def main(A: T.Tensor((128, 512), "float16"), B: T.Tensor((512, 128), "float16"),
             W: T.Tensor((128, 128), "float16"), C: T.Tensor((128, 128), "float32")):
        with T.Kernel(1, threads=128):
            As = T.alloc_shared((128, 64), "float16")
            Bs = T.alloc_shared((64, 128), "float16")
            Ws = T.alloc_shared((128, 128), "float16")
            Cl = T.alloc_fragment((128, 128), "float32")
            T.copy(W, Ws)
            T.clear(Cl)
            if touch_ring:
                for i, j in T.Parallel(64, 128):
                    Cl[i, j] = T.Cast("float32", Bs[i, j])
            for k in T.Pipelined(8, num_stages=2):
                T.copy(A[0, k * 64], As)
                T.copy(B[k * 64, 0], Bs)
                T.gemm(As, Bs, Cl)
                T.gemm(Ws, Ws, Cl)
            T.copy(Cl, C)
    return main


def gemm_after_a_scratch_tile():
    """Ts (192 KB), loaded and read before a pipelined GEMM only: it fits beside the ring's
    buffers only in their storage."""
    @T.prim_func
    def main(A: T.Tensor((128, 512), "float16"), B: T.Tensor((512, 128), "float16"),
             W: T.Tensor((128, 768), "float16"), C: T.Tensor((128, 128), "float32")):
        with T.Kernel(1, threads=128):
            Ts = T.alloc_shared((128, 768), "float16")
            As = T.alloc_shared((128, 64), "float16")
            Bs = T.alloc_shared((64, 128), "float16")
            Cl = T.alloc_fragment((128, 128), "float32")
            T.copy(W, Ts)
            for i, j in T.Parallel(128, 128):
                Cl[i, j] = T.Cast("float32", Ts[i, j] + Ts[i, j + 640])
            for k in T.Pipelined(8, num_stages=2):
                T.copy(A[0, k * 64], As)
                T.copy(B[k * 64, 0], Bs)
                T.gemm(As, Bs, Cl)
            T.copy(Cl, C)
    return main


def test_nests_using_a_ring_buffers_storage_keep_the_order(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_WARP_SPECIALIZE", "0")
    before, after = around(gemm_after_a_scratch_tile(), issue_ring_prologue_early)
    ts, as_ = (lines_with(before, f"#   {n} ")[0].split("@ ")[1].split(",")[0] for n in ("Ts", "As"))
    assert ts == as_ == "0", (ts, as_)   # Ts's lifetime ends before the ring's: the same storage
    assert lines_with(before, "T.tma_ring_alloc(") and before == after


def test_a_gemm_without_tile_loads_before_its_loop_keeps_the_order():
    from tests.backend.cuda.kernels import gemm
    before, after = around(gemm(M=512, N=512, K=512, bm=128, bn=128, bk=64, threads=128, stages=3),
                           issue_ring_prologue_early)
    assert lines_with(before, "T.tma_ring_alloc(") and before == after


def test_nests_using_a_ring_buffer_keep_the_order(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_WARP_SPECIALIZE", "0")   # (a producer warpgroup issues its loads at once)
    before, after = around(gemm_after_a_tile_load(True), issue_ring_prologue_early)
    assert lines_with(before, "T.tma_ring_alloc(") and before == after
    before, after = around(gemm_after_a_tile_load(False), issue_ring_prologue_early)   # W's load: passed
    assert lines_with(after, "Ws written before the TMA ring's loop")


@pytest.mark.gpu
@pytest.mark.parametrize("s,d,causal", [(256, 64, False), (512, 128, True), (384, 64, False)])
def test_flash_attention_with_the_prologue_first_matches_torch(s, d, causal):
    from tests.backend.cuda.helpers import check_flash_attention
    import tilelang
    kern = tilelang.compile(flash(s, d, causal), out_idx=[3], target="cuda")
    check_flash_attention(FA, kern, 1, 4, s, s, d, causal)
