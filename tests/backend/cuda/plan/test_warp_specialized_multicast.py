"""plan/warp_specialized_ring.py with TILELANG_CUDA_WS_MULTICAST=1: the blocks of a
warp-specialized GEMM run in pairs (a cluster along the grid axis whose blocks read the same
tiles), each producer loads half of the shared tiles for both (`multicast=`), the "empty"
barriers count the consumer warps of both blocks (each warp releases a slot in its block and
in the peer), the pair syncs once its barriers are initialized, the consumers release the
last slot too and each producer waits for every slot's last round before it leaves (no
arrival of the peer reaches an exited block). Checked on the printed IR and the SASS; the GPU
runs against torch are at the end (pytest -m gpu)."""
import pytest

from tests.backend.cuda import kernels as KS
from tilelang.backend.cuda.host.nvrtc import sass
from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import build, sass_ops
from tests.backend.cuda.plan.test_stage_epilogue import _gemm
from tests.backend.cuda.plan.test_warp_specialized_ring import _after, _roles

ON = {"TILELANG_CUDA_WS_MULTICAST": "1"}


def _kernel():
    return KS.gemm(1024, 1024, 512, bm=128, bn=256, bk=64, threads=256, stages=3)


def test_pairs_share_tiles_and_release_in_both_blocks():
    _, text = _after(_kernel(), **ON)
    assert "'tl.mbarrier_init', ring_empty[ring_s], 16" in text          # 8 consumer warps x 2 blocks
    assert text.index("T.sync_threads()  # inserted: the TMA ring's mbarriers") < \
        text.index("'tl.cluster_sync'") < text.index("with T.producer_warpgroup(")
    producer, consumer = _roles(text)
    assert "ring_rank = T.call_extern(\"int32\", 'tl::block_rank_in_cluster')" in producer
    assert "multicast='strips', rank=ring_rank)" in producer              # B: both blocks' tile
    assert producer.count("T.tma_load(") == 2 and "T.tma_load(A[" in producer
    # the tail: one more wait per slot after the loop
    tail = producer[producer.index("for ring_t in T.serial(3):"):]
    assert "'tl.mbarrier_wait_parity', ring_empty[ring_stage[0]], ring_phase[0] ^ T.uint32(1)" in tail
    # every release goes to this block and the peer (early, in-loop, and the last slot after the loop)
    assert consumer.count("'tl.mbarrier_release_slot_cluster', ring_empty[ring_prev[0]], ring_rank_1 ^ 1") == 3
    assert consumer.count("'tl.mbarrier_arrive', ring_empty[ring_prev[0]]") == 3
    after_loop = consumer[consumer.index("'tl.warpgroup_fence_operand'"):]
    assert "'tl.mbarrier_release_slot_cluster'" in after_loop


def test_default_is_pairs_and_switch_off_is_one_block_per_tile():
    from tilelang.backend.cuda.options import CudaOptions
    assert CudaOptions.from_config(None, "sm_90a", env={}).ws_multicast
    _, text = _after(_kernel(), TILELANG_CUDA_WS_MULTICAST="0")
    assert "cluster" not in text and "multicast" not in text and "ring_t" not in text
    assert "'tl.mbarrier_init', ring_empty[ring_s], 8" in text


@needs_nvrtc
@pytest.mark.parametrize("epilogue", ["0", "1"])
def test_sass_multicast_no_spills(monkeypatch, epilogue):
    monkeypatch.setenv("TILELANG_CUDA_WS_MULTICAST", "1")
    monkeypatch.setenv("TILELANG_CUDA_EPILOGUE_TMA_STORE", epilogue)
    art = build(_gemm(2048, 2048, 1024))
    assert "__cluster_dims__(1, 2, 1)" in art.source and "tma_load_2d_multicast" in art.source
    ops = sass_ops(art)
    assert ops["HGMMA"] >= 4 and ops["STL"] == 0 and ops["LDL"] == 0
    assert (ops["UTMASTG"] > 0) == (epilogue == "1")
    # the remote releases order nothing at GPU scope (a MEMBAR.ALL.GPU per release in the loop)
    # (the one left: the cluster barrier after the mbarriers' init)
    assert "mbar_arrive_cluster_slot" in art.source and sass(art.binary).count("MEMBAR.ALL.GPU") == 1


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K,dtype,kw", [
    (1024, 1024, 512, "float16", dict()),
    (1024, 1152, 320, "bfloat16", dict(trans_B=True, relu=True)),
    (512, 512, 256, "float16", dict(block_N=128, num_stages=3)),
])
@pytest.mark.parametrize("epilogue", ["0", "1"])
def test_matches_torch(monkeypatch, M, N, K, dtype, kw, epilogue):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    import tilelang
    monkeypatch.setenv("TILELANG_CUDA_WS_MULTICAST", "1")
    monkeypatch.setenv("TILELANG_CUDA_EPILOGUE_TMA_STORE", epilogue)
    kern = tilelang.compile(_gemm(M, N, K, dtype=dtype, **kw), out_idx=[-1], target="cuda")
    assert "tma_load_2d_multicast" in kern.get_kernel_source()
    tdt = getattr(torch, dtype)
    a = torch.randn(M, K, device="cuda", dtype=tdt)
    b = torch.randn(N, K, device="cuda", dtype=tdt) if kw.get("trans_B") else torch.randn(K, N, device="cuda", dtype=tdt)
    ref = a.float() @ (b.float().t() if kw.get("trans_B") else b.float())
    ref = ref.relu() if kw.get("relu") else ref
    for _ in range(3):   # repeated launches: a pair's barriers and exits must not race
        torch.testing.assert_close(kern(a, b).float(), ref, rtol=2e-2, atol=2e-1)
