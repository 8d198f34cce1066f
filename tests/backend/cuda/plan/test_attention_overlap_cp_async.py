"""plan/attention_overlap_cp_async.py: with TILELANG_CUDA_OVERLAP_GEMM=1 and
TILELANG_CUDA_OVERLAP_RING=0 the pass pipeline_cp_async writes the attention overlap on
cp.async into the IR: per iteration one copy group (K for the next iteration, V for this
one) and one block barrier, P V_{k-1} issued after Q K_k^T into the previous slot and waited
for after the pinned softmax, the first iteration peeled, the last P V after the loop.
Checked on the printed IR after the pass; no GPU or NVRTC needed (the SASS and the GPU run:
test_pipeline_overlap.py)."""
from tests.backend.cuda.plan.test_attention_overlap_ring import after_pass, _lines, _call, QK, PV, \
    WAIT0, WAIT1, FENCE_S, FENCE_O, PIN_L


def test_cp_async_overlap_schedule():
    ir, _ = after_pass(TILELANG_CUDA_OVERLAP_RING="0")   # (the cp.async pass runs before the ring pass)
    assert "T.Pipelined" not in ir.split("# pipelines:")[1] and "T.tma_ring_alloc" not in ir
    var = ir[ir.index("for kb"):].split()[1]
    body = _lines(ir, f"for {var} in T.serial(1,", "if 0 < 4:")
    assert body[-2] == "T.evaluate(T.ptx_wait_group(0))" and body[-1].startswith("T.sync_threads()")
    body = body[:-2]   # (after the loop: every copy landed)
    wait = body.index("T.evaluate(T.ptx_wait_group(0))")
    barrier = next(i for i, ln in enumerate(body) if ln.startswith("T.sync_threads()  # inserted"))
    commit = body.index("T.evaluate(T.ptx_commit_group())")
    nxt = body.index(f"if {var} + 1 < 4:")
    slot_k = f"with T.stage_slot(K_shared, V_shared, slot=T.truncmod({var}, 2), stages=2):"
    slot_prev = f"with T.stage_slot(K_shared, V_shared, slot=T.truncmod({var} - 1, 2), stages=2):"
    qk = next(i for i, ln in enumerate(body) if ln.startswith(QK))
    pv = next(i for i, ln in enumerate(body) if ln.startswith(PV))
    assert wait < barrier < nxt < body.index(slot_k) < commit < qk < body.index(slot_prev) < pv
    assert sum(ln.startswith("T.sync_threads()") for ln in body) == 1   # one barrier per iteration
    assert pv < body.index(WAIT1) < body.index(FENCE_S) < body.index(PIN_L) < body.index(WAIT0) < \
        body.index(FENCE_O)
    # after the loop: the copies land, then the last P V from slot (hi - 1) % 2
    tail = ir[ir.index(f"for {var} in T.serial(1,"):]
    tail = _lines(tail, "if 0 < 4:", "T.sync_threads()  # inserted, after a fence.proxy.async: O_shared")
    assert tail[1] == "with T.stage_slot(K_shared, V_shared, slot=T.truncmod(3, 2), stages=2):"
    assert tail[2].startswith(PV) and tail[3] == WAIT0 and tail[4] == FENCE_O
    assert _call("warpgroup_wait", 1) == WAIT1
