"""ops/cp_async_mbarrier.py `emit_copy_on_mbarrier`: a T.tma_copy(..., barrier=bar) that is not a
bulk copy is issued as cp.async by the range's threads, each then adding its pending
arrival (`cp.async.mbarrier.arrive`) before its own, so the producer does not wait for
its loads. Compile-only checks of the form and where it does not apply, then the
gathering producer/consumer kernel against torch on the GPU."""
import re

import pytest

import tilelang
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.kernels_ws import ws_tma_copy_gather


def _src(arch="sm_90a", **kw):
    return tilelang.compile(ws_tma_copy_gather(1000, 8, **kw), target=f"cuda -arch={arch}")


def _producer(src):
    return src[src.index("if ((tx >= 128))"):src.index("} else {", src.index("if ((tx >= 128))"))]


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_copy_is_cp_async_then_pending_arrival(arch):
    prod = _producer(_src(arch).get_kernel_source())
    copies = [ln for ln in prod.splitlines() if "(&ring[" in ln]
    assert copies and all("tl::cp_async_gs_conditional<16>(" in ln for ln in copies), copies   # rows past L: zero-filled
    i_copy = prod.index("tl::cp_async_gs_conditional<16>(&ring[")
    i_pending = prod.index("tl::cp_async_mbar_arrive<false>(&full[")
    i_arrive = prod.index("tl::mbar_arrive(&full[")
    assert i_copy < i_pending < i_arrive
    assert "cp_async_wait" not in prod   # the producer never waits for its own loads


def test_the_form_is_recorded_by_plan_copy_forms_and_a_switch_turns_it_off(monkeypatch):
    from tests.backend.cuda.plan.test_copy_forms import _before_after
    before, after = _before_after(ws_tma_copy_gather(1000, 8))
    assert "arriving on its mbarrier" not in before
    assert "# -> T.tma_copy as cp.async arriving on its mbarrier x8 (16 B)" in after
    monkeypatch.setenv("TILELANG_CUDA_CP_ASYNC_MBARRIER", "0")
    assert "arriving on its mbarrier" not in _before_after(ws_tma_copy_gather(1000, 8))[1]


@needs_nvrtc
def test_arrival_counts_other_than_the_range_keep_the_plain_copy():
    # one arrival per phase: the other threads' pending arrivals could land in the next one
    prod = _producer(_src(counts=(1, 1)).get_kernel_source())
    assert "cp_async_mbar_arrive" not in prod and "cp_async_gs" not in prod


@needs_nvrtc
def test_tiles_a_wgmma_reads_are_cp_async_behind_fenced_waits(monkeypatch):
    # the async proxy needs a fence after the consumer's wait, which the writer cannot give:
    # every mbarrier wait of a kernel with wgmma is followed by one (ops/sync_calls.py), so
    # the copies go on cp.async too (the published sparse MLA's Q tile, a WS GEMM's ring)
    from tests.backend.cuda.kernels_ws import ws_gemm_tma
    monkeypatch.delenv("TILELANG_CUDA_TMA_COPY", raising=False)
    hopper = tilelang.compile(ws_gemm_tma(256, 256, 256, stages=2), target="cuda -arch=sm_90a").get_kernel_source()
    assert "wgmma" in hopper and "tl::cp_async_mbar_arrive<false>(&full[" in hopper
    waits = [ln for ln in hopper.splitlines() if "tl::mbar_wait(" in ln]
    assert waits and all(ln.rstrip().endswith("tl::fence_proxy_async();") for ln in waits), waits


@needs_sass
def test_sass_tracks_the_copies_on_the_mbarrier():
    sass = _src().get_sass()
    assert "LDGSTS" in sass and "ARRIVES.LDGSTSBAR" in sass
    assert not re.search(r"\b(STL|LDL)\b", sass)


@pytest.mark.gpu
@pytest.mark.parametrize("L,nb", [(1000, 8), (4096, 33)])
def test_gather_against_torch(L, nb):
    import torch
    kern = tilelang.compile(ws_tma_copy_gather(L, nb), target="cuda")
    x = torch.randn(L, 64, device="cuda", dtype=torch.float16)
    offsets = torch.randint(0, L, (nb,), device="cuda", dtype=torch.int32)
    offsets[0] = L - 10   # a block running past the end: its rows read 0
    out = torch.empty(nb, 64, 64, device="cuda", dtype=torch.float16)
    kern(x, offsets, out)
    xp = torch.cat([x, torch.zeros(64, 64, device="cuda", dtype=torch.float16)])
    ref = torch.stack([xp[o:o + 64] for o in offsets.tolist()]) * 2
    torch.testing.assert_close(out, ref)
