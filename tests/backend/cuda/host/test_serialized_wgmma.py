"""ptxas's note that it serialized a kernel's wgmma instructions (a wait after each: correct
but slow) becomes a warning of the build naming the kernel and ptxas's reason
(host/nvrtc.py `serialized_wgmma`, backend/cuda/__init__.py). The warp-specialized attention
backward is the case that showed it: its producer branch on `tl_tid >= 128` made ptxas
serialize every wgmma of the consumers (C7518), the branch on the lane-0 warpgroup index that
emit/kernel.py prints now does not."""
import warnings

import pytest

from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import build
from tests.backend.cuda.kernels_attn_bwd import attention_bwd
from tilelang.backend.cuda.host import nvrtc
from tilelang.backend.cuda.host.nvrtc import serialized_wgmma

LOG = ("ptxas info    : (C7518) Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
       "program dependence on compiler-inserted WG.DP in divergent path in the function 'flash_bwd_kernel'")


def _bwd():
    return attention_bwd(1, 2, 256, 64, block_M=64, block_N=64, threads=128, causal=False)


def test_the_note_is_read_from_the_log():
    assert serialized_wgmma(LOG) == [("flash_bwd_kernel", "program dependence on compiler-inserted WG.DP in divergent path")]
    assert serialized_wgmma("ptxas info    : Used 240 registers") == []


@needs_nvrtc
def test_the_producer_branch_keeps_the_consumers_wgmma_asynchronous():
    src = build(_bwd()).source
    branch = "if (__shfl_sync(0xffffffffu, tl_tid >> 7, 0) >= 1) {"
    assert branch in src
    assert serialized_wgmma(nvrtc.compile_cuda(src, "sm_90a").log) == []
    old = nvrtc.compile_cuda(src.replace(branch, "if (tl_tid >= 128) {"), "sm_90a").log
    assert [k for k, _ in serialized_wgmma(old)] == ["attn_bwd_kernel"]


@needs_nvrtc
def test_the_build_warns_and_records_it(monkeypatch):
    real = nvrtc.compile_cuda

    def noted(*args, **kwargs):
        c = real(*args, **kwargs)
        c.log += "\n" + LOG.replace("flash_bwd_kernel", "attn_bwd_kernel")
        return c
    monkeypatch.setattr(nvrtc, "compile_cuda", noted)
    with pytest.warns(UserWarning, match=r"attn_bwd_kernel: ptxas serialized its wgmma instructions \(program "
                                         r"dependence on compiler-inserted WG.DP in divergent path\)"):
        art = build(_bwd())
    assert art.meta["serialized_wgmma"] == {"attn_bwd_kernel": "program dependence on compiler-inserted WG.DP in "
                                                                "divergent path"}


@needs_nvrtc
def test_a_clean_build_says_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        art = build(_bwd())
    assert "serialized_wgmma" not in art.meta
