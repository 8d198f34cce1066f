"""plan/attention_warp_specialize.py: with TILELANG_CUDA_WS_ATTENTION=1 an attention-style
TMA-ring loop (FlashAttention, MLA decode: softmax between the gemms) gets the producer
warpgroup of plan/warp_specialize.py; by default only where its ring issues 8 or more boxes an
iteration (MLA decode), elsewhere the plan says why not.
CPU: the decision printed by the pass, the refusals, the printed roles and their SASS.
GPU: FlashAttention (bhsd / bshd, causal, d64 / d128) and MLA decode against torch."""
import re

import pytest

import tilelang
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build, load_example, sass_ops, check_flash_attention
from tests.backend.cuda.kernels_mla import mla_decode_no_split, reference as mla_reference
from tests.backend.cuda.plan.test_warp_specialize import _before_after, _consumer_code, _decision, gemm_variant

FA = load_example("flash_attention", "attention_ws")
SWITCH = "TILELANG_CUDA_WS_ATTENTION"


def flash(b=1, h=2, s=512, d=128, causal=False, layout="bhsd", block_N=128):
    return FA.flash_attention.func(b, h, s, s, d, is_causal=causal, layout=layout, block_M=128, block_N=block_N,
                                   num_stages=2, threads=256)


def test_flash_attention_gets_a_producer_warpgroup_when_switched_on(monkeypatch):
    monkeypatch.setenv(SWITCH, "1")
    _, after = _before_after(flash())
    assert _decision(after) == [
        "warp-specialized loop over kb: 384 threads launched, producer threads 256..383 (one elected thread "
        "issues the TMA loads of 2 slots), consumers 0..255 with named barrier 1, registers: producer 24, "
        "consumers 240 (setmaxnreg); slot released after the body"]


def test_mla_decode_gets_a_producer_warpgroup_when_switched_on(monkeypatch):
    monkeypatch.setenv(SWITCH, "1")
    _, after = _before_after(mla_decode_no_split(1, 128, 1024, 512, 64))
    assert _decision(after)[0].startswith("warp-specialized loop over ") and \
        "consumers 0..255 with named barrier 1, registers: producer 24, consumers 240" in _decision(after)[0]


def test_off_by_default_and_one_gemm_bodies_stay_refused(monkeypatch):
    monkeypatch.delenv(SWITCH, raising=False)
    _, after = _before_after(flash(d=64))
    # by default a producer pays only where the ring issues many boxes (MLA decode: 9, FlashAttention d64: 2)
    assert _decision(after) == ["none (an attention-style body whose ring issues 2 boxes an iteration (a producer "
                                "warpgroup pays from 8; TILELANG_CUDA_WS_ATTENTION=1 forces it))"]
    monkeypatch.setenv(SWITCH, "0")
    _, after = _before_after(flash(d=64))
    assert _decision(after) == ["none (the pipelined body does more than wgmma gemms into register accumulators)"]
    monkeypatch.setenv(SWITCH, "1")
    monkeypatch.setenv("TILELANG_CUDA_OVERLAP_GEMM", "1")   # plan/overlap.py's schedule takes the loop
    _, after = _before_after(flash(d=64))
    assert _decision(after) == ["none (the overlapped attention schedule takes the loop "
                                "(TILELANG_CUDA_OVERLAP_GEMM=1, plan/overlap.py))"]
    monkeypatch.delenv("TILELANG_CUDA_OVERLAP_GEMM")   # a GEMM whose body scales its accumulator: not attention
    _, after = _before_after(gemm_variant("body"))
    assert _decision(after) == ["none (the pipelined body runs one gemm besides its register work "
                                "(not an attention body))"]


@needs_sass
def test_consumers_run_the_softmax_between_named_barriers_only(monkeypatch):
    monkeypatch.setenv(SWITCH, "1")
    art = build(flash(causal=True))
    assert art.meta["kernels"][0]["threads"] == [384, 1, 1]
    consumer = _consumer_code(art.source)
    assert "__syncthreads" not in consumer
    loop = consumer[consumer.index("for (int kb_1 = "):]
    wait = loop.index("tl::mbar_wait(&ring_full[")
    first = wait + re.search(r"tl::wgmma_(gemm_ss|ss_issue)<", loop[wait:]).start()   # (Q K^T may stay in flight)
    second = loop.index("tl::wgmma_gemm_rs<", first)
    assert "exp2f(" in loop[first:second] and second < loop.index("tl::mbar_arrive(&ring_empty[")
    ops = sass_ops(art)
    assert ops["USETMAXREG"] == 2 and ops["UTMALDG"] > 0 and ops["HGMMA"] >= 16, ops
    assert ops["STL"] == 0 and ops["LDL"] == 0, ops


@needs_sass
def test_mla_decode_consumers_reduce_across_warpgroups_on_their_barrier(monkeypatch):
    monkeypatch.setenv(SWITCH, "1")
    art = build(mla_decode_no_split(1, 128, 1024, 512, 64))
    consumer = _consumer_code(art.source)
    assert "__syncthreads" not in consumer and consumer.count("bar.sync 1, 256;") >= 4
    ops = sass_ops(art)
    assert ops["USETMAXREG"] == 2 and ops["STL"] == 0 and ops["LDL"] == 0, ops


# GPU -------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("b,h,s,d,causal,layout", [(2, 4, 1024, 128, False, "bhsd"), (2, 4, 1024, 128, True, "bhsd"),
                                                   (2, 4, 640, 64, False, "bhsd"), (1, 4, 512, 128, True, "bshd")])
def test_flash_attention_ws_matches_torch_gpu(monkeypatch, b, h, s, d, causal, layout):
    import torch
    monkeypatch.setenv(SWITCH, "1")
    kern = tilelang.compile(flash(b, h, s, d, causal, layout), out_idx=[3], target="cuda")
    assert "producer warpgroup" in kern.get_kernel_source()
    if layout == "bhsd":
        check_flash_attention(FA, kern, b, h, s, s, d, causal)
        return
    torch.manual_seed(0)
    q, k, v = FA.make_inputs(b, h, s, s, d, layout, device="cuda")
    torch.testing.assert_close(kern(q, k, v).float(), FA.ref_program(q, k, v, causal, layout).float(),
                               rtol=1e-2, atol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("batch,seqlen_kv", [(1, 1024), (4, 2048)])
def test_mla_decode_ws_matches_torch_gpu(monkeypatch, batch, seqlen_kv):
    import torch
    monkeypatch.setenv(SWITCH, "1")
    heads, dim, pe_dim = 128, 512, 64
    kern = tilelang.compile(mla_decode_no_split(batch, heads, seqlen_kv, dim, pe_dim), out_idx=[4], target="cuda")
    assert "producer warpgroup" in kern.get_kernel_source()
    torch.manual_seed(0)
    q = torch.randn(batch, heads, dim, device="cuda", dtype=torch.float16)
    qp = torch.randn(batch, heads, pe_dim, device="cuda", dtype=torch.float16)
    kv = torch.randn(batch, seqlen_kv, 1, dim, device="cuda", dtype=torch.float16)
    kp = torch.randn(batch, seqlen_kv, 1, pe_dim, device="cuda", dtype=torch.float16)
    out = kern(q, qp, kv, kp).float()
    torch.testing.assert_close(out, mla_reference(q, qp, kv, kp).float(), rtol=2e-2, atol=2e-2)
