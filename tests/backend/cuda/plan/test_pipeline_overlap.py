"""plan/overlap.py (opt-in): in an attention loop on sm_90a the P V wgmma of iteration k - 1
is issued after iteration k's Q K^T and runs during its softmax. Compile-only checks
of the schedule, then the published-style FlashAttention example against torch on the
GPU, with the overlap on and off, causal or not, ragged lengths, both head sizes."""

import pytest

import tilelang
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import check_flash_attention, load_example


@pytest.fixture(autouse=True)
def _overlap_on(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_OVERLAP_GEMM", "1")   # opt-in (plan/overlap.py says why)

FA = load_example("flash_attention", "overlap")
CFG = dict(block_M=128, block_N=128, num_stages=2, threads=256)


def _src(arch="sm_90a", **kw):
    pf = FA.flash_attention.get_tir(1, 2, 512, 512, 128, **{**CFG, **kw})
    return tilelang.compile(pf, out_idx=[3], target=f"cuda -arch={arch}")


def _loop(src):
    return src[src.index("for (int kb"):]


@needs_nvrtc
@pytest.mark.parametrize("causal", [False, True])
def test_second_gemm_is_deferred(causal):
    src = _src(is_causal=causal).get_kernel_source()
    loop = _loop(src)
    qk, pv = loop.index("tl::wgmma_ss_issue<"), loop.index("tl::wgmma_rs_issue<")
    assert qk < pv < loop.index("tl::wgmma_wait<1>();") < loop.index("tl::wgmma_wait<0>();\n    tl::fence_regs<64>(acc_o)")
    # the wait for P V comes right before P is written again
    tail = loop[loop.index("tl::fence_regs<64>(acc_o);"):]
    assert tail.index("acc_s_cast[") < tail.index("acc_o[")
    assert "wgmma_gemm_rs" not in src and "wgmma_gemm_ss" not in src


@needs_sass
def test_no_spills_and_hgmma():
    k = _src()
    sass = k.get_sass()
    assert "HGMMA" in sass and "LDL" not in sass and "STL" not in sass


@needs_nvrtc
def test_switch_off_and_other_targets(monkeypatch):
    assert "wgmma_rs_issue" not in _src(arch="sm_80").get_kernel_source()
    assert "wgmma_rs_issue" not in _src(num_stages=1).get_kernel_source()
    monkeypatch.delenv("TILELANG_CUDA_OVERLAP_GEMM")   # the default
    assert "wgmma_rs_issue" not in _src().get_kernel_source()


@pytest.mark.gpu
@pytest.mark.parametrize("overlap", ["1", "0"])
@pytest.mark.parametrize("b,h,sq,skv,d,causal", [
    (2, 4, 512, 512, 128, False),
    (1, 3, 1000, 1000, 128, True),     # ragged: the last key block is partly masked
    (2, 2, 384, 640, 64, True),        # seq_kv > seq_q, bottom-right causal mask
    (1, 2, 256, 1000, 64, False),
])
def test_matches_torch_on_gpu(monkeypatch, overlap, b, h, sq, skv, d, causal):
    monkeypatch.setenv("TILELANG_CUDA_OVERLAP_GEMM", overlap)
    pf = FA.flash_attention.get_tir(b, h, sq, skv, d, is_causal=causal, **CFG)
    kern = tilelang.compile(pf, out_idx=[3], target="cuda")
    assert ("wgmma_rs_issue" in kern.get_kernel_source()) == (overlap == "1")
    check_flash_attention(FA, kern, b, h, sq, skv, d, causal)
