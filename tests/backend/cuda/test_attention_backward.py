"""The FlashAttention backward on sm_90a (the published attention_sink / flash_attention
examples' kernel, tests/backend/cuda/kernels_attn_bwd.py): its four 128-row products run on
wgmma although the key tile K is also the B operand of the 32-row dQ product (mma.sync
reads it in wgmma's swizzle), and dQ is added to global memory in float2 pairs
(REDG.E.ADD.F32x2) rather than one scalar atomic per element."""
import pytest

from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk
from tilelang.backend.cuda.plan.plan_kernels import plan_kernels, kernel_plan
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build, sass_ops
from tests.backend.cuda.kernels_attn_bwd import attention_bwd, reference
from tests.backend.cuda.plan.test_plan_kernels import _launch, _lower_to


def test_gemm_forms():
    _, after, _ = _lower_to(attention_bwd(1, 2, 256, 64), plan_kernels)
    launch = _launch(after)
    plan = kernel_plan(launch)
    gemms = []
    walk(launch.body, lambda n: gemms.append(n) if isinstance(n, TO.Gemm) else None)
    kinds = {(g.A.buffer.name, g.B.buffer.name): plan.gemms[id(g)].kind for g in gemms}
    assert kinds == {("k_s", "q_s"): "wgmma", ("v_s", "do_s"): "wgmma", ("p16", "do_s"): "wgmma",
                     ("ds16", "q_s"): "wgmma", ("ds_s", "k_s"): "mma"}, kinds
    # dV += P^T dO and dK += dS^T Q take their A from registers
    assert [plan.gemms[id(g)].a_regs for g in gemms if g.A.buffer.name in ("p16", "ds16")] == [True, True]
    k_s = next(g.A.buffer for g in gemms if g.A.buffer.name == "k_s")
    assert plan.placements[id(k_s)].swizzle == 128


@needs_sass
def test_sass_hgmma_vector_atomics_no_spills():
    art = build(attention_bwd(1, 2, 256, 128))
    assert "AtomicAddx2(&dQ[" in art.source and "AtomicAdd(&dQ[" not in art.source
    ops = sass_ops(art)
    # per iteration: K Q^T and V dO^T (K = 128: 8 k-steps each), P^T dO and dS^T Q (K = 32: 2 each)
    assert ops["HGMMA"] == 20 and ops["HMMA"] == 32, ops   # HMMA: the 32-row dQ = dS^T K on mma.sync
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops
    import re
    from tilelang.backend.cuda.host.nvrtc import sass
    reds = re.findall(r"REDG\.E\.ADD\.F32[A-Za-z0-9.]*", sass(art.binary))
    # 32 x 128 dQ floats over 256 threads: 8 pairs each
    assert len(reds) == 8 and all(r.startswith("REDG.E.ADD.F32x2") for r in reds), reds


@needs_sass
def test_the_refill_is_issued_under_the_dq_product():
    """TILELANG_CUDA_CP_ASYNC_REFILL_UNDER_WGMMA (on): after the dS barrier, dQ = dS^T K is only
    issued, the ring's refill issued while it runs, and its wait comes before the atomics."""
    art = build(attention_bwd(1, 2, 256, 64, block_M=64, block_N=64, threads=128))
    src = art.source
    dq = src.index("tl::wgmma_ss_issue<64, 64, 64, true, false, half>(ds_s, k_s, dq")
    refill = src.index("tl::cp_async_gs_conditional<16>(&q_s_slot_2[", dq)
    wait = src.index("tl::wgmma_wait<0>();\n    tl::fence_regs<32>(dq);", refill)
    assert wait < src.index("AtomicAddx2(&dQ[", wait)
    assert "tl::wgmma_gemm_ss<64, 64, 64, true, false, half>(ds_s" not in src
    ops = sass_ops(art)
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops


def _run_and_check(target, b, h, n, dim, causal, **cfg):
    import torch
    import tilelang
    dev = "cuda" if target == "cuda" else "cpu"
    kern = tilelang.compile(attention_bwd(b, h, n, dim, causal=causal, **cfg), target=target)
    torch.manual_seed(0)
    q, k, v, do = (torch.randn(b, h, n, dim, device=dev, dtype=torch.float16) for _ in range(4))
    lse, delta, dq_ref, dk_ref, dv_ref = reference(q, k, v, do, causal)
    dq = torch.zeros(b, h, n, dim, device=dev, dtype=torch.float32)
    dk = torch.empty_like(q)
    dv = torch.empty_like(q)
    kern(q, k, v, do, lse.contiguous(), delta.contiguous(), dq, dk, dv)
    torch.testing.assert_close(dv.float(), dv_ref, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(dk.float(), dk_ref, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(dq, dq_ref, rtol=2e-2, atol=2e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("refill_at_barrier", ["1", "0"])
@pytest.mark.parametrize("preload", ["1", "0"])
@pytest.mark.parametrize("under_wgmma", ["1", "0"])
def test_schedule_switches_match_torch_autograd(monkeypatch, refill_at_barrier, preload, under_wgmma):
    """Both sides of the A/B switches of the attention backward's cp.async schedule
    (TILELANG_CUDA_CP_ASYNC_REFILL_AT_BARRIER, _PRELOAD, _REFILL_UNDER_WGMMA); causal: a
    loop starting at the block's own diagonal."""
    monkeypatch.setenv("TILELANG_CUDA_CP_ASYNC_REFILL_AT_BARRIER", refill_at_barrier)
    monkeypatch.setenv("TILELANG_CUDA_CP_ASYNC_PRELOAD", preload)
    monkeypatch.setenv("TILELANG_CUDA_CP_ASYNC_REFILL_UNDER_WGMMA", under_wgmma)
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")
    for causal in (True, False):
        _run_and_check("cuda", 1, 2, 512, 64, causal, block_M=64, block_N=64, threads=128, stages=2)


def test_cpu_reference_matches_torch_autograd():
    """The kernel and its reference agree on the CPU backend (the semantics the GPU must meet)."""
    pytest.importorskip("torch")
    _run_and_check("cpu", 1, 1, 64, 32, True, block_M=32, block_N=16, threads=128)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", [
    dict(block_M=128, block_N=32, threads=256, stages=2),   # attention_sink's sm_90 configuration
    dict(block_M=64, block_N=64, threads=128, stages=2),    # flash_attention example_mha_bwd_bhsd
])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("dim", [64, 128])
def test_matches_torch_autograd(cfg, causal, dim):
    _run_and_check("cuda", 2, 3, 256, dim, causal, **cfg)


def _chained(monkeypatch, chain, **cfg):
    monkeypatch.setenv("TILELANG_CUDA_WGMMA_IN_FLIGHT", "1" if chain else "0")
    _, after, _ = _lower_to(attention_bwd(1, 2, 256, 64, **cfg), plan_kernels)
    launch = _launch(after)
    plan = kernel_plan(launch)
    gemms = []
    walk(launch.body, lambda n: gemms.append(n) if isinstance(n, TO.Gemm) else None)
    return [g.C.buffer.name for g in gemms if id(g) in plan.chained_gemms]


@pytest.mark.parametrize("cfg", [dict(block_M=64, block_N=64, threads=128), dict(block_M=128, block_N=32, threads=256)])
def test_wgmma_groups_stay_in_flight_until_needed(monkeypatch, cfg):
    """dP = V dO^T is issued right after S = K Q^T (hoisted above P = exp2(S - lse), which
    needs S only: wait_group 1) and runs during the softmax recomputation and the cast of P;
    dS = P * (dP - Delta) waits for dP only (wait_group 1), so dV += P^T dO runs beside it;
    dK += dS^T Q stays in flight over the store of dS into shared memory. With 64 query rows
    the dQ product is a wgmma whose own wait completes dV and dK; with 32 (mma.sync) the
    dQ atomics wait for them. Switched off, every group is waited for in place, in the
    order written."""
    assert _chained(monkeypatch, True, **cfg) == ["p", "dp", "dv", "dk"]
    assert _chained(monkeypatch, False, **cfg) == []


def test_dp_is_issued_before_the_softmax_recomputation(monkeypatch):
    from tilelang.ir import stmt as S
    _, after, _ = _lower_to(attention_bwd(1, 2, 256, 64, block_M=64, block_N=64, threads=128), plan_kernels)
    loop = []
    walk(_launch(after).body, lambda n: loop.append(n) if isinstance(n, S.For) and n.kind == S.PIPELINED else None)
    names = [n.C.buffer.name if isinstance(n, TO.Gemm) else "" for n in loop[0].body.stmts]
    gemms = [x for x in names if x]
    assert gemms == ["p", "dp", "dv", "dk", "dq"]
    assert names.index("dp") == names.index("p") + 2   # S, clear(dP), dP: nothing between
    monkeypatch.setenv("TILELANG_CUDA_WGMMA_IN_FLIGHT", "0")
    _, after, _ = _lower_to(attention_bwd(1, 2, 256, 64, block_M=64, block_N=64, threads=128), plan_kernels)
    loop = []
    walk(_launch(after).body, lambda n: loop.append(n) if isinstance(n, S.For) and n.kind == S.PIPELINED else None)
    names = [n.C.buffer.name if isinstance(n, TO.Gemm) else "" for n in loop[0].body.stmts]
    assert names.index("dp") > names.index("p") + 2


@needs_sass
@pytest.mark.parametrize("at_barrier", ["1", "0"])
def test_the_waits_and_fences_in_the_code_and_sass(monkeypatch, at_barrier):
    # TILELANG_CUDA_CP_ASYNC_REFILL_AT_BARRIER (plan/cp_async_pipeline.py refill_barrier): on,
    # dV and dK are retired before the barrier ahead of the dQ product (the ring's slot is
    # refilled after it); off, by the dQ product's own wait
    monkeypatch.setenv("TILELANG_CUDA_CP_ASYNC_REFILL_AT_BARRIER", at_barrier)
    monkeypatch.setenv("TILELANG_CUDA_CP_ASYNC_REFILL_UNDER_WGMMA", "0")   # (its own test below)
    art = build(attention_bwd(1, 2, 256, 64, block_M=64, block_N=64, threads=128))
    src = art.source
    s_ = src.index("tl::wgmma_ss_issue<64, 64, 64, false, true, half>(k_s")
    dp = src.index("tl::wgmma_ss_issue<64, 64, 64, false, true, half>(v_s", s_)
    w_s = src.index("tl::wgmma_wait<1>();\n    tl::fence_regs<32>(p);", dp)
    assert w_s < src.index("exp2f(", w_s)
    dv = src.index("tl::wgmma_rs_issue<64, 64, 64, false, half>(p16", w_s)
    w_dp = src.index("tl::wgmma_wait<1>();\n    tl::fence_regs<32>(dp);", dv)
    assert w_dp < src.index("ds16[", w_dp)
    dq = src.index("tl::wgmma_gemm_ss<64, 64, 64, true, false, half>(ds_s")
    assert w_dp < src.index("tl::wgmma_rs_issue<64, 64, 64, false, half>(ds16") < dq
    retire = "tl::wgmma_wait<0>();\n    tl::fence_regs<32>(dv);\n    tl::fence_regs<32>(dk);\n    " \
        "tl::fence_proxy_async();\n    __syncthreads();\n    if (((t_1 + 2) < 4))"
    if at_barrier == "1":
        assert src.index("tl::wgmma_rs_issue<64, 64, 64, false, half>(ds16") < src.index(retire) < dq
    else:
        assert retire not in src
        assert src.index("tl::fence_regs<32>(dv);\n    tl::fence_regs<32>(dk);", dq) > dq
    ops = sass_ops(art)
    assert ops["HGMMA"] == 20 and ops["LDL"] == 0 and ops["STL"] == 0, ops
    import re
    from tilelang.backend.cuda.host.nvrtc import sass
    # ptxas keeps the schedule: one arrive per gemm; waits leaving dP, then dV, in flight; one full
    waits = re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x[0-9a-f]+)", sass(art.binary))
    assert waits == ["0x1", "0x1", "0x0"] + ["0x0"] * (at_barrier == "1"), waits
