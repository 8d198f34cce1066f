"""plan/tma_ring_pipeline.py (printed by ops/tma_pipeline.py): on sm_90a a pipelined loop whose body writes only
registers (attention) loads its tiles by bulk tensor copies (4-D tensor maps for
[batch, heads, seq, dim] tensors) into a ring released per warp, with no block barrier
in the loop; opt-in, the two warpgroups take turns at the first gemm (ping-pong).
Compile-only checks of the schedule, then FlashAttention and a 2-stage GEMM against
torch on the GPU, ragged lengths included."""

import pytest

import tilelang
from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import check_flash_attention, load_example

FA = load_example("flash_attention", "ring")
GEMM = load_example("gemm", "ring")
CFG = dict(block_M=128, block_N=128, num_stages=2, threads=256)


def _fa(b=1, h=2, sq=512, skv=512, d=128, causal=False, arch="sm_90a"):
    pf = FA.flash_attention.get_tir(b, h, sq, skv, d, is_causal=causal, **CFG)
    return tilelang.compile(pf, out_idx=[3], target=f"cuda -arch={arch}" if arch else "cuda")


def _loop(src):
    return src[src.index("for (int kb"):]


@needs_nvrtc
def test_attention_loop_is_a_tma_ring_without_block_barriers():
    src = _fa().get_kernel_source()
    loop = _loop(src)
    body = loop[:loop.index("ring_stage = (ring_stage + 1);")]
    assert "tl::tma_load_4d(" in src and "cp_async" not in body
    assert "__syncthreads" not in body and "tl::mbar_wait(&ring_full[ring_stage], ring_phase);" in body
    # the warp completing the round refills the slot with iteration kb + 2
    assert "tl::slot_release_last(&ring_released[ring_stage], 8)) && ((kb + 2) <" in body
    assert "named_barrier" not in src   # ping-pong is opt-in


@needs_nvrtc
def test_switches_and_other_targets(monkeypatch):
    assert "tma_load" not in _fa(arch="sm_80").get_kernel_source()
    monkeypatch.setenv("TILELANG_CUDA_TMA_RING", "0")
    assert "tma_load" not in _fa().get_kernel_source()
    monkeypatch.delenv("TILELANG_CUDA_TMA_RING")
    monkeypatch.setenv("TILELANG_CUDA_TMA", "0")
    assert "tma_load" not in _fa().get_kernel_source()


@needs_nvrtc
def test_pingpong_turns_balance(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_PINGPONG", "1")
    src = _fa().get_kernel_source()
    loop = _loop(src)
    pre = src[:src.index("for (int kb")]
    # warpgroup 1 hands warpgroup 0 the first turn; each then waits for its turn before
    # the first gemm and hands the turn over after it, warpgroup 1 not after its last
    first = pre.index("if ((ring_wg == 1)) {")
    assert pre.index('asm volatile("bar.arrive %0, %1;" :: "r"((int)(14)), "r"((int)(256))', first) > first
    sync = loop.index("tl::named_barrier_sync((14 + ring_wg), 256);")
    gemm = loop.index("tl::wgmma_gemm_ss<")
    arrive = loop.index("if (((ring_wg == 0) || ((kb + 1) < ")
    assert sync < gemm < arrive < loop.index("tl::wgmma_gemm_rs<")


@pytest.mark.gpu
@pytest.mark.parametrize("env", [{}, {"TILELANG_CUDA_PINGPONG": "1"}, {"TILELANG_CUDA_TMA_RING": "0"},
                                 {"TILELANG_CUDA_TMA_L2_PREFETCH": "2"}])
@pytest.mark.parametrize("b,h,sq,skv,d,causal", [
    (2, 4, 512, 512, 128, False),
    (1, 3, 1000, 1000, 128, True),     # ragged: the last key block is partly out of bounds
    (2, 2, 384, 640, 64, True),        # seq_kv > seq_q, bottom-right causal mask
    (1, 2, 256, 1000, 64, False),
])
def test_attention_matches_torch_on_gpu(monkeypatch, env, b, h, sq, skv, d, causal):
    for k_, v_ in env.items():
        monkeypatch.setenv(k_, v_)
    kern = _fa(b, h, sq, skv, d, causal, arch=None)
    assert ("tma_load_4d" in kern.get_kernel_source()) == (env.get("TILELANG_CUDA_TMA_RING") != "0")
    check_flash_attention(FA, kern, b, h, sq, skv, d, causal)


@pytest.mark.gpu
@pytest.mark.parametrize("m,n,k", [(512, 512, 512), (1000, 768, 520)])
@pytest.mark.parametrize("warp_specialized", [False, True])
def test_two_stage_gemm_on_the_ring_matches_torch(m, n, k, warp_specialized):
    """The single-role ring (the consumers' last warp refills a slot) and the ring a producer
    warpgroup feeds (plan/warp_specialize.py, the default on sm_90)."""
    import torch
    pf = GEMM.matmul.get_tir(m, n, k, block_M=128, block_N=128, block_K=64, num_stages=2, threads=256)
    kern = tilelang.compile(pf, out_idx=[-1], target="cuda",
                            pass_configs={"tl.disable_warp_specialized": not warp_specialized})
    src = kern.get_kernel_source()
    if warp_specialized:
        assert "the producer warpgroup" in src and "tl::slot_release_last(" not in src
    else:
        assert "tl::slot_release_last(" in src
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = kern(a, b)
    ref = a.float() @ b.float()
    assert float((c.float() - ref).norm() / ref.norm()) < 1e-3
