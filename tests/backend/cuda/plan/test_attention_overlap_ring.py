"""plan/attention_overlap_ring.py: with TILELANG_CUDA_OVERLAP_GEMM=1 the pass pipeline_tma_ring
writes the attention overlap on two TMA rings into the IR (K's and V's), both gemms issued
only, the first iteration peeled, P V_{k-1} issued after Q K_k^T and waited for after the
softmax, pinned ahead of that wait, the last P V after the loop; with TILELANG_CUDA_PINGPONG=1
the warpgroups' turns around the issues. Checked on the printed IR after the pass; no GPU or
NVRTC needed (the generated code and its SASS: test_pipeline_overlap.py, which also runs it
against torch on the GPU)."""
import pytest

from tilelang.backend.cuda.options import CudaOptions, OPTIONS
from tests.backend.cuda.helpers import load_example
from tests.backend.cuda.plan.test_tma_ring_pipeline import _before_after


def _call(name, *args):
    return f"T.evaluate(T.call_extern(\"handle\", 'tl.{name}'{''.join(', ' + str(a) for a in args)}))"


WAIT1, WAIT0 = _call("warpgroup_wait", 1), _call("warpgroup_wait", 0)
FENCE_S = _call("warpgroup_fence_operand", 'T.access_ptr(acc_s[0, 0], "rw")', 64)
FENCE_O = _call("warpgroup_fence_operand", 'T.access_ptr(acc_o[0, 0], "rw")', 64)
PIN_L = _call("pin_before_wgmma_wait", 'T.access_ptr(l_i[0], "r")', 2)
QK = "T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)  # issued only"
RESCALE = "acc_o[i_4, j_2] = acc_o[i_4, j_2] * alpha[i_4]"
PV = "T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)  # issued only"


def after_pass(**env):
    """The flash-attention kernel's IR before and after pipeline_tma_ring, the overlap on."""
    fa = load_example("flash_attention", "overlap")
    pf = fa.flash_attention.get_tir(1, 2, 512, 512, 128, block_M=128, block_N=128, num_stages=2, threads=256)
    opts = CudaOptions.from_config({}, "sm_90a", env={"TILELANG_CUDA_OVERLAP_GEMM": "1", **env})
    return _before_after(pf, **{OPTIONS: opts})


def _lines(text, start, end):
    lines = [ln.strip() for ln in text.splitlines()]
    i = next(n for n, ln in enumerate(lines) if ln.startswith(start))
    j = next(n for n in range(i + 1, len(lines)) if lines[n].startswith(end))
    return lines[i:j]


@pytest.fixture(scope="module")
def default():
    return after_pass()


def test_k_and_v_get_a_ring_each_and_the_loop_is_gone(default):
    before, after = default
    assert "T.Pipelined(4, num_stages=2)" in before and "T.tma_ring_alloc" not in before
    assert "T.Pipelined" not in after.split("# pipelines:")[1]
    assert "T.tma_ring_alloc(ring_full, ring_released, stages=2)" in after
    assert "T.tma_ring_alloc(ring_full_1, ring_released_1, stages=2)" in after
    assert "T.tma_prefetch_descriptors(K)" in after and "T.tma_prefetch_descriptors(V)" in after
    assert "T.tma_ring_invalidate(ring_full)" in after and "T.tma_ring_invalidate(ring_full_1)" in after


def test_p_v_of_the_previous_iteration_runs_beside_the_softmax(default):
    _, after = default
    body = _lines(after, "for kb in T.serial(1,", "if 0 < 4:")
    # no block barrier inside the loop; K's slot by phase, then Q K_k^T, then V_{k-1} and P V_{k-1}
    assert not any("T.sync_threads()" in ln for ln in body)
    k_wait = body.index(_call("mbarrier_wait_parity", "ring_full[T.truncmod(kb, 2)]", "T.truncdiv(kb, 2) & 1"))
    v_wait = body.index(_call("mbarrier_wait_parity", "ring_full_1[T.truncmod(kb - 1, 2)]",
                              "T.truncdiv(kb - 1, 2) & 1"))
    qk, pv = body.index(QK + ": the wait for its group is a T.warpgroup_wait"), \
        body.index(PV + ": the wait for its group is a T.warpgroup_wait")
    assert k_wait < qk < v_wait < pv < body.index(WAIT1) < body.index(FENCE_S)
    # O's rescale of the previous iteration is deferred between the two issues
    assert body.index(RESCALE) == qk + 2 < v_wait
    # K's slot goes back once Q K_k^T retired; V's once P V_{k-1} did, after the pinned softmax
    k_release = body.index("if T.call_extern(\"bool\", 'tl.tma_slot_release_last', ring_released[T.truncmod(kb, 2)], "
                           "8) and kb + 2 < 4:")
    v_release = body.index("if T.call_extern(\"bool\", 'tl.tma_slot_release_last', "
                           "ring_released_1[T.truncmod(kb - 1, 2)], 8) and kb + 1 < 4:")
    assert body.index(WAIT1) < k_release < body.index(PIN_L) < body.index(WAIT0) < body.index(FENCE_O) < v_release
    # the first iteration on its own waits for Q K^T alone; the last P V after the loop
    first = _lines(after, "kb = 0", "for kb in T.serial(1,")
    assert WAIT0 in first and WAIT1 not in first and not any(PV in ln for ln in first)
    last = _lines(after, "for kb in T.serial(1,", "T.tma_ring_invalidate(ring_full)")
    tail = last[last.index("if 0 < 4:"):]
    assert any(PV in ln for ln in tail) and tail.index(WAIT0) < tail.index(FENCE_O)


def test_switches_pingpong_pin_and_deferral():
    _, after = after_pass(TILELANG_CUDA_PINGPONG="1", TILELANG_CUDA_WGMMA_WAIT_PIN="0",
                          TILELANG_CUDA_OVERLAP_DEFER="0")
    body = _lines(after, "for kb in T.serial(1,", "if 0 < 4:")
    assert not any("pin_before_wgmma_wait" in ln for ln in body)
    assert body.index(RESCALE) > body.index(WAIT0)   # O's rescale at the end of its own iteration
    # warpgroup 0 goes first: this warpgroup's turn before Q K^T, the other's after both issues
    assert "ring_wg = T.truncdiv(tx, 128)" in after
    assert "T.evaluate(T.call_extern(\"handle\", 'tl.named_barrier_arrive', 14, 256))" in after
    turn = body.index(_call("named_barrier_sync", "14 + ring_wg", 256))
    other = body.index("if ring_wg == 0 or kb + 1 < 4:")
    pv = next(i for i, ln in enumerate(body) if ln.startswith(PV))
    assert turn < next(i for i, ln in enumerate(body) if ln.startswith(QK)) < pv < other < body.index(WAIT1)
