"""Accumulator chains of the TF32 mma.sync gemm (ops/mma.py `tf32_chains`,
`tl::Tf32Chains` in include/tl_cuda/mma.h): a warp with fewer than 4 MMAs a k8 step (a 16 x 16
warp tile: DeepSeek mHC pre's 32-token gemm) alternates its k8 steps between 2-4 accumulator
chains summed after the gemm call, so that one warp alone on its scheduler has 4 independent
MMAs in flight. Checked here: the choice, the plan with the switch on and off, the printed
call, the SASS (independent HMMA chains, no spills) and, on the GPU, the results."""
import re

import numpy as np
import pytest

import tilelang
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build
from tests.backend.cuda.ops.test_gemm_tf32 import _inputs, _reference, bf16_rows_times_tf32, f32_gemm
from tilelang.backend.cuda.host.nvrtc import sass
from tilelang.backend.cuda.ops.mma import MmaTf32Config, tf32_chains


@pytest.mark.parametrize("M,N,K,WM,WN,chains", [
    (32, 32, 256, 2, 2, 2),    # mHC pre: 16 x 16 warp tiles, 2 MMAs a step
    (16, 16, 256, 1, 2, 4),    # 1 MMA a step
    (16, 16, 64, 1, 2, 2),     # ... but 8 k8 steps: each chain keeps 4
    (32, 32, 16, 2, 2, 1),     # 2 k8 steps: nothing to split
    (64, 64, 256, 2, 2, 1),    # 8 MMAs a step: enough in flight already
    (32, 64, 128, 2, 2, 1),    # 4 MMAs a step
])
def test_chains_fill_four_mmas_a_step(M, N, K, WM, WN, chains):
    assert tf32_chains(MmaTf32Config(M, N, K, WM, WN)) == chains


def _tf32_call(src):
    m = re.search(r"tl::gemm_(rs|ss)_tf32<([^>]*)>", src)
    assert m, src
    return m.group(1), [x.strip() for x in m.group(2).split(",")]


def test_switch_off_prints_one_chain(monkeypatch):
    src = build(bf16_rows_times_tf32(256, 1024)).source
    assert _tf32_call(src) == ("rs", ["32", "32", "256", "2", "2", "true", "2"])
    monkeypatch.setenv("TILELANG_CUDA_MMA_CHAINS", "0")
    assert _tf32_call(build(bf16_rows_times_tf32(256, 1024)).source) == ("rs", ["32", "32", "256", "2", "2", "true"])


def test_shared_operand_gemm_gets_chains_too():
    # 32 x 32 block tile on 4 warps: 16 x 16 warp tiles; bk 64: 8 k8 steps a call
    kind, args = _tf32_call(build(f32_gemm(128, 128, 512, bm=32, bn=32, bk=64)).source)
    assert kind == "ss" and args[-1] == "2", args
    kind, args = _tf32_call(build(f32_gemm(256, 256, 256)).source)   # 32 x 32 warp tiles: one chain
    assert kind == "ss" and args[-1] == "false", args


def _longest_hmma_chain(text):
    """The most HMMAs of the SASS (in program order, back edges not followed) each adding
    into the result of the one before: a 32-step k loop on one chain is 32 deep."""
    depth, longest = {}, 0
    for line in text.splitlines():
        m = re.search(r"\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9]*)(?:\.[\w.]+)*\s+(R\d+)?,?(.*);", line)
        if not m:
            continue
        op, dst, rest = m.groups()
        if op == "HMMA":
            c = re.findall(r"(R\d+|RZ)", rest)[-1]
            depth[dst] = depth.get(c, 0) + 1
            longest = max(longest, depth[dst])
        elif dst:
            depth[dst] = 0
    return longest


@needs_sass
def test_sass_chains_are_shorter_and_nothing_spills(monkeypatch):
    on = sass(build(bf16_rows_times_tf32(256, 1024), "sm_90a").binary)
    monkeypatch.setenv("TILELANG_CUDA_MMA_CHAINS", "0")
    off = sass(build(bf16_rows_times_tf32(256, 1024), "sm_90a").binary)
    assert "LDL" not in on and "STL" not in on
    # 32 k8 steps a call: one chain 32 deep, two 16 deep
    assert _longest_hmma_chain(off) == 32 and _longest_hmma_chain(on) == 16, (
        _longest_hmma_chain(off), _longest_hmma_chain(on))


@pytest.mark.gpu
@pytest.mark.parametrize("bm,bn,bk", [(32, 32, 64), (16, 64, 128)])
def test_gpu_small_warp_tiles_match_the_tf32_reference(bm, bn, bk):
    """Shared-operand TF32 gemms whose warps hold two MMAs a step (2 x 2 and 1 x 4 warps
    of 16 x 16 tiles: 2 chains), K = 448: 7 and 3.5 block tiles (a partial last one)."""
    import torch
    M, N, K = 96, 64, 448
    a, b, A, B = _inputs(M, N, K, False, False, seed=3)
    kern = tilelang.compile(f32_gemm(M, N, K, bm=bm, bn=bn, bk=bk), target="cuda")
    assert _tf32_call(kern.get_kernel_source())[1][-1] == "2"
    c = torch.zeros(M, N, device="cuda")
    kern(torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda(), c)
    ref = _reference(a, b)
    np.testing.assert_allclose(c.cpu().numpy(), ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
