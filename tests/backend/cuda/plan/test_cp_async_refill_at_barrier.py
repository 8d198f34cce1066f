"""plan/cp_async_pipeline.py `refill_barrier`: a cp.async pipeline whose body has a block
barrier of its own after its last use of the ring (the FlashAttention backward: dS stored
into shared memory for the dQ product) refills the slot right after that barrier, which then
also orders the refill, instead of behind a barrier of its own at the end of the body (one
block barrier an iteration less). The wgmma groups still reading the slot there (dV, dK: only
issued, plan/wgmma_waits.py) are waited for before that barrier.
TILELANG_CUDA_CP_ASYNC_REFILL_AT_BARRIER=0 keeps the refill after the body (A/B). Checked on
the printed schedule and the kernel plan; no GPU or NVRTC needed."""
import pytest

import tilelang.language as T
from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk
from tilelang.backend.cuda.plan.cp_async_pipeline import pipeline_cp_async
from tilelang.backend.cuda.plan.plan_kernels import kernel_plan
from tests.backend.cuda.kernels_attn_bwd import attention_bwd
from tests.backend.cuda.plan.test_cp_async_pipeline import _before_after, _schedule
from tests.backend.cuda.plan.test_plan_kernels import _launch, _lower_to


def scaled_gemm(gemm_reads_ring, K=512, bK=64):
    """A body with a barrier of its own: As is scaled in registers and stored into shared
    memory (a barrier before the gemm reads it); the gemm's B is the ring tile Bs (used after
    that barrier) or the resident W."""
    @T.prim_func
    def main(A: T.Tensor((64, K), "float16"), B: T.Tensor((64, K), "float16"),
             W: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            Ws = T.alloc_shared((64, 64), "float16")
            Ss = T.alloc_shared((64, bK), "float16")
            Al = T.alloc_fragment((64, bK), "float16")
            Cl = T.alloc_fragment((64, 64), "float32")
            T.copy(W, Ws)
            T.clear(Cl)
            for k in T.Pipelined(K // bK, num_stages=2):
                As = T.alloc_shared((64, bK), "float16")
                Bs = T.alloc_shared((64, bK), "float16")
                T.copy(A[0, k * bK], As)
                T.copy(B[0, k * bK], Bs)
                T.copy(As, Al)
                for i, j in T.Parallel(64, bK):
                    Al[i, j] = Al[i, j] * Bs[i, j]
                T.copy(Al, Ss)
                if gemm_reads_ring:
                    T.gemm(Ss, Bs, Cl, transpose_B=True)
                else:
                    T.gemm(Ss, Ws, Cl, transpose_B=True)
            T.copy(Cl, C)
    return main


def _main_loop(sched):
    return sched[next(i for i, ln in enumerate(sched) if ln.startswith("for ") and "T.serial(" in ln
                      and not ln.startswith("for p")):]


def _barriers(sched):
    return [ln.strip() for ln in _main_loop(sched) if "T.sync_threads()" in ln]


@pytest.mark.parametrize("at_barrier,under", [("1", "0"), ("1", "1"), ("0", "1")])
def test_attention_backward_refills_after_the_ds_barrier(monkeypatch, at_barrier, under):
    monkeypatch.setenv("TILELANG_CUDA_CP_ASYNC_REFILL_AT_BARRIER", at_barrier)
    monkeypatch.setenv("TILELANG_CUDA_CP_ASYNC_REFILL_UNDER_WGMMA", under)
    sched = _schedule(_before_after(attention_bwd(1, 2, 256, 64, block_M=64, block_N=64, threads=128),
                                    arch="sm_90a")[1])
    bars = _barriers(sched)
    main = _main_loop(sched)
    refill = next(i for i, ln in enumerate(main) if ln.strip().startswith("if t_1 + 2 < 4"))
    dq = next(i for i, ln in enumerate(main) if "T.gemm(ds_s, k_s, dq" in ln)
    if at_barrier == "1":
        assert len(bars) == 2, bars   # this iteration's copies landed; dS stored (and the slot free)
        assert "ds_s; every thread is done with this iteration's slot of q_s, lse_s, do_s, delta_s" in bars[1]
        if under == "1":   # dQ = dS^T K issued first, the refill while it runs (`_issue_only`)
            assert "T.sync_threads()" in main[dq - 1] and dq < refill
        else:
            assert "T.sync_threads()" in main[refill - 1] and refill < dq   # issued before the dQ product
    else:
        assert len(bars) == 3, bars
        assert "it is refilled" in bars[2] and dq < refill


def test_the_groups_reading_the_slot_are_retired_before_the_barrier(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_CP_ASYNC_REFILL_AT_BARRIER", "1")
    _, after, _ = _lower_to(attention_bwd(1, 2, 256, 64, block_M=64, block_N=64, threads=128),
                            pipeline_cp_async)
    launch = _launch(after)
    plan = kernel_plan(launch)
    merged = []
    walk(launch.body, lambda n: merged.append(n) if isinstance(n, S.Barrier) and n.reason and
         "it is refilled" in n.reason else None)
    assert len(merged) == 1
    w = plan.wgmma_waits_before[id(merged[0])]
    # dV += P^T dO reads dO's slot and dK += dS^T Q reads Q's: both only issued before it
    assert w.left == 0 and {g.C.buffer.name for g in w.gemms} >= {"dv", "dk"}, w.describe()
    # dQ = dS^T K: only issued (the refill under it), waited for before its atomics
    waits = [x for x in plan.wgmma_waits_before.values() if [g.C.buffer.name for g in x.gemms] == ["dq"]]
    assert len(waits) == 1 and waits[0].left == 0 and "refill" in waits[0].at, [x.describe() for x in waits]


def test_a_ring_tile_read_after_the_barrier_keeps_the_refill_after_the_body():
    sched = _schedule(_before_after(scaled_gemm(True))[1])
    bars = _barriers(sched)
    assert len(bars) == 3 and "it is refilled" in bars[2], bars


def test_a_body_barrier_after_the_last_ring_use_orders_the_refill():
    sched = _schedule(_before_after(scaled_gemm(False))[1])
    bars = _barriers(sched)
    assert len(bars) == 2 and "Ss; every thread is done with this iteration's slot of As, Bs: it is refilled" \
        in bars[1], bars
    main = _main_loop(sched)
    i = next(i for i, ln in enumerate(main) if "it is refilled" in ln)
    assert main[i + 1].strip().startswith("if k_1 + 2 < 8"), main
