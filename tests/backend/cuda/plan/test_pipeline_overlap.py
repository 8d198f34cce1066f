"""plan/overlap.py (opt-in): in an attention loop on sm_90a the P V wgmma of iteration k - 1
is issued after iteration k's Q K^T and runs during its softmax. Compile-only checks
of the schedule, then the published-style FlashAttention example against torch on the
GPU, with the overlap on and off, causal or not, ragged lengths, both head sizes."""

import re

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


def _body(loop):
    """The main loop of the overlapped schedule, up to the last iteration's P V after it."""
    start = loop.index("for (int kb_1 = ")
    return loop[start:loop.index("if ((0 < 4))", start)]


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


def _between_the_waits(sass):
    """The SASS instructions of the loop between the wait for Q K^T (DEPBAR.LE gsb0, 0x1)
    and the wait for P V (0x0)."""
    lines = sass.splitlines()
    start = next(i for i, ln in enumerate(lines) if "WARPGROUP.DEPBAR.LE gsb0, 0x1" in ln)
    end = next(i for i in range(start, len(lines)) if "WARPGROUP.DEPBAR.LE gsb0, 0x0" in lines[i])
    return lines[start:end]


@needs_sass
def test_the_softmax_runs_while_p_v_is_in_flight():
    """ptxas hoists wgmma.wait_group above independent ALU work; the predicated-off store of
    the row statistics (tl::pin_before_wgmma_wait) keeps every exponential of the softmax
    between the two waits, i.e. beside the P V group on the tensor cores."""
    k = _src()
    assert "tl::pin_before_wgmma_wait<2>(l_i);\n    tl::wgmma_wait<0>();" in k.get_kernel_source()
    seg = _between_the_waits(k.get_sass())
    assert sum("MUFU.EX2" in ln for ln in seg) >= 64, "the exponentials were scheduled after the wait for P V"


@needs_nvrtc
def test_k_and_v_come_on_two_tma_rings_without_block_barriers(monkeypatch):
    """K_k's slot is released once Q K_k^T retired, V_{k-1}'s once P V_{k-1} did; the warp
    whose release completes a slot refills it; TILELANG_CUDA_OVERLAP_RING=0: cp.async."""
    loop = _loop(_src().get_kernel_source())
    body = _body(loop)
    assert "__syncthreads" not in body and "cp_async" not in body
    wait1, wait0 = body.index("tl::wgmma_wait<1>();"), body.index("tl::wgmma_wait<0>();")
    k_refill, v_refill = body.index("tl::slot_release_last(&ring_released["), body.index("tl::slot_release_last(&ring_released_1[")
    assert wait1 < k_refill < wait0 < v_refill
    assert body.index("tl::mbar_wait(&ring_full[") < body.index("tl::wgmma_ss_issue<") < \
        body.index("tl::mbar_wait(&ring_full_1[") < body.index("tl::wgmma_rs_issue<")
    # the previous iteration's rescale of O runs between the two issues, beside Q K^T
    rescale = re.search(r"acc_o\[\w+\] = \(acc_o\[\w+\] \* alpha\[", body).start()
    assert body.index("tl::wgmma_ss_issue<") < rescale < body.index("tl::wgmma_rs_issue<")
    assert len(re.findall(r"acc_o\[\w+\] = \(acc_o\[\w+\] \* alpha\[", body)) == 1
    monkeypatch.setenv("TILELANG_CUDA_OVERLAP_RING", "0")
    src = _src().get_kernel_source()
    assert "cp_async" in src and "ring_released" not in src


@needs_nvrtc
def test_the_pin_has_a_switch(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_WGMMA_WAIT_PIN", "0")
    src = _src().get_kernel_source()
    assert "pin_before_wgmma_wait" not in src and "wgmma_rs_issue" in src


@needs_nvrtc
def test_switch_off_and_other_targets(monkeypatch):
    assert "wgmma_rs_issue" not in _src(arch="sm_80").get_kernel_source()
    assert "wgmma_rs_issue" not in _src(num_stages=1).get_kernel_source()
    monkeypatch.delenv("TILELANG_CUDA_OVERLAP_GEMM")   # the default
    assert "wgmma_rs_issue" not in _src().get_kernel_source()


@needs_nvrtc
def test_pingpong_turns_cover_both_issues(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_PINGPONG", "1")
    loop = _loop(_src().get_kernel_source())
    body = _body(loop)
    turn = body.index("tl::named_barrier_sync(")
    assert turn < body.index("tl::wgmma_ss_issue<") < body.index("tl::wgmma_rs_issue<") < \
        body.index("bar.arrive") < body.index("tl::wgmma_wait<1>();")


# the schedules an overlapped loop may take: two TMA rings (default), with warpgroup turns,
# with O's rescale at the end of its iteration, with the softmax unpinned, on cp.async
SCHEDULES = {"ring": {}, "ring+pingpong": {"TILELANG_CUDA_PINGPONG": "1"},
             "rescale_in_place": {"TILELANG_CUDA_OVERLAP_DEFER": "0"},
             "unpinned": {"TILELANG_CUDA_WGMMA_WAIT_PIN": "0"}, "cp_async": {"TILELANG_CUDA_OVERLAP_RING": "0"}}


@pytest.mark.gpu
@pytest.mark.parametrize("overlap", ["1", "0", "ring+pingpong", "rescale_in_place", "unpinned", "cp_async"])
@pytest.mark.parametrize("b,h,sq,skv,d,causal", [
    (2, 4, 512, 512, 128, False),
    (1, 3, 1000, 1000, 128, True),     # ragged: the last key block is partly masked
    (2, 2, 384, 640, 64, True),        # seq_kv > seq_q, bottom-right causal mask
    (1, 2, 256, 1000, 64, False),
])
def test_matches_torch_on_gpu(monkeypatch, overlap, b, h, sq, skv, d, causal):
    if overlap in SCHEDULES:
        for key, val in SCHEDULES[overlap].items():
            monkeypatch.setenv(key, val)
        overlap = "1"
    monkeypatch.setenv("TILELANG_CUDA_OVERLAP_GEMM", overlap)
    pf = FA.flash_attention.get_tir(b, h, sq, skv, d, is_causal=causal, **CFG)
    kern = tilelang.compile(pf, out_idx=[3], target="cuda")
    assert ("wgmma_rs_issue" in kern.get_kernel_source()) == (overlap == "1")
    check_flash_attention(FA, kern, b, h, sq, skv, d, causal)
