"""The barrier the TMA ring's schedules put at the top of every iteration of a body that
writes memory (plan/tma_ring_pipeline.py, plan/warp_specialized_ring.py) fences toward the
async proxy only where the body's last shared write is not already followed by a fenced
barrier of its own (plan/proxy_fences.py `writes_fenced_within`): attention backward writes
dS to shared memory, fences and synchronizes before the dQ product reads it, then adds dQ to
global memory; a fence at the next iteration's top would be a MEMBAR.ALL.CTA waiting for
those atomics. TILELANG_CUDA_RING_TOP_FENCE=1 keeps the fence."""
import pytest

from tilelang.backend.cuda.plan.tma_ring_pipeline import pipeline_tma_ring
from tests.backend.cuda.kernels_attn_bwd import attention_bwd
from tests.backend.cuda.plan.around import around

TOP = "T.sync_threads()  # inserted"


def _loop_barriers(text):
    """The inserted barriers of the consumers' loop, as printed (stripped): from its wait
    for a full slot to the barrier after the loop."""
    lines = text[text.index("'tl.mbarrier_wait_parity', ring_full["):].splitlines()
    end = next(i for i, ln in enumerate(lines) if TOP in ln and ("slots are read" in ln or "was consumed" in ln))
    return [ln.strip() for ln in lines[:end] if TOP in ln]


@pytest.fixture
def ring(monkeypatch):
    """The backward loop on the TMA ring (its lse / Delta rows as plain bulk copies)."""
    monkeypatch.setenv("TILELANG_CUDA_TMA_BULK_RUNS", "1")


def _after(**kw):
    return around(attention_bwd(1, 2, 256, 64, block_M=64, block_N=64, threads=128, causal=False, **kw),
                  pipeline_tma_ring)[1]


@pytest.mark.parametrize("ws", ["1", "0"])
def test_the_top_barrier_is_not_fenced_behind_the_bodys_fenced_barrier(ring, monkeypatch, ws):
    monkeypatch.setenv("TILELANG_CUDA_WARP_SPECIALIZE", ws)
    top, *rest = _loop_barriers(_after())
    assert "fence.proxy.async" not in top and "the previous iteration's writes" in top, top
    # the body's own barrier before the dQ product still publishes dS to the wgmma
    assert any("fence.proxy.async" in b for b in rest), rest


def test_the_switch_keeps_the_fence(ring, monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_RING_TOP_FENCE", "1")
    top = _loop_barriers(_after())[0]
    assert "fence.proxy.async" in top, top


def test_writes_after_the_last_fenced_barrier_keep_it():
    from tilelang.ir import stmt as S
    from tilelang.ir import expr as E
    from tilelang.ir.buffer import Buffer
    from tilelang.backend.cuda.plan.proxy_fences import writes_fenced_within
    from tilelang.backend.cuda.plan.sync import is_inserted_barrier
    smem = Buffer("s", (4,), "float32", "shared.dyn")
    store = S.BufferStore(smem, E.FloatImm(0.0, "float32"), [E.IntImm(0, "int32")])
    bar = S.Barrier("block", reason="test", fence_async_proxy=True)
    assert is_inserted_barrier(bar)
    assert writes_fenced_within([store, bar])
    assert not writes_fenced_within([bar, store])
    assert not writes_fenced_within([store])   # no fenced barrier at all
