"""MLA decode's consumer loop.

TILELANG_CUDA_WGMMA_UNIFORM_WG (include/tl_cuda/wgmma.h): a shared-operand wgmma's warpgroup
index broadcast from lane 0, its descriptors in uniform registers (SASS: no R2UR per wgmma).
TILELANG_CUDA_COVERED_BARRIERS (plan/sync.py, ops/reduce.py orders_block): a cross-warp
register reduction's own barrier orders shared memory for the barrier planner, and a
warp-specialized TMA-ring loop whose body's barriers order every access one iteration carries
to the next gets no barrier at the top of its iterations (MLA decode: the P tile written after
the row reductions, read by the P V wgmma). CPU: the plan after insert_barriers and the
consumers' loop as printed. GPU: MLA decode against torch with the switch on and off."""
import pytest

import tilelang
from tilelang.backend.registry import parse_target
from tilelang.backend.cuda import pipeline as P
from tilelang.backend.cuda.plan.plan_kernels import kernel_plan
from tilelang.backend.cuda.plan.sync import insert_barriers
from tilelang.ir import stmt as S
from tilelang.transform.pass_manager import PassContext, run_passes
from tests.backend.cuda import kernels as KS
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build, sass_ops
from tests.backend.cuda.kernels_mla import mla_decode_no_split, reference as mla_reference

SWITCH = "TILELANG_CUDA_COVERED_BARRIERS"


def _pipelines_after_barriers(func):
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS})
    ctx.target = parse_target({"kind": "cuda", "arch": "sm_90a"})
    out = run_passes(func, P.PASSES[:P.PASSES.index(insert_barriers) + 1], ctx)
    stmts = out.body.stmts if isinstance(out.body, S.SeqStmt) else [out.body]
    return [info for st in stmts if isinstance(st, S.KernelLaunch) for info in kernel_plan(st).pipelines.values()]


def _barriers_in(info):
    return [s for s in info.rest if isinstance(s, S.Barrier)]


def test_mla_decode_body_orders_what_it_carries(monkeypatch):
    monkeypatch.delenv(SWITCH, raising=False)
    [info] = _pipelines_after_barriers(mla_decode_no_split(1, 128, 1024, 512, 64))
    # one planned barrier (P's tile before the P V wgmma); the row reductions' own barriers order
    # P's write after the previous iteration's wgmma read it
    assert info.carried_ordered and len(_barriers_in(info)) == 1, [s.reason for s in _barriers_in(info)]


def test_switched_off_the_reductions_order_nothing(monkeypatch):
    monkeypatch.setenv(SWITCH, "0")
    [info] = _pipelines_after_barriers(mla_decode_no_split(1, 128, 1024, 512, 64))
    assert not info.carried_ordered and len(_barriers_in(info)) == 1


@needs_sass
def test_mla_decode_consumers_wait_for_no_barrier_at_the_top_of_their_loop(monkeypatch):
    monkeypatch.delenv(SWITCH, raising=False)
    art = build(mla_decode_no_split(1, 128, 1024, 512, 64))
    src = art.source
    assert "tl::set_max_nreg<240, true>();" in src   # the warp-specialized schedule (by default for MLA)
    loop = src[src.index("for (int k_1 = "):]
    top = loop[loop.index("tl::mbar_wait(&ring_full["):loop.index("tl::wgmma_ss_issue<")]
    assert "bar.sync" not in top and "fence_proxy_async" not in top, top
    # the row max, the row sum, P's tile before P V: three barriers an iteration (was four)
    body = loop[:loop.index("ring_phase_1 = (ring_phase_1 ^ 1u);")]
    assert body.count("bar.sync 1, 256;") == 3, body
    ops = sass_ops(art)
    assert ops["STL"] == 0 and ops["LDL"] == 0 and ops["HGMMA"] >= 40, ops
    # include/tl_cuda/wgmma.h, opt-in: the warpgroup index broadcast from lane 0 keeps the 40 wgmma
    # descriptors in uniform registers (default: two R2UR each, 78 in all)
    monkeypatch.setenv("TILELANG_CUDA_WGMMA_UNIFORM_WG", "1")
    art = build(mla_decode_no_split(1, 128, 1024, 512, 64))
    assert "#define TL_WGMMA_UNIFORM_WG 1" in art.source
    ops = sass_ops(art)
    assert ops["R2UR"] <= 4 and ops["STL"] == 0 and ops["HGMMA"] >= 40, ops


@needs_sass
def test_switched_off_the_descriptors_go_through_vector_registers(monkeypatch):
    monkeypatch.delenv("TILELANG_CUDA_WGMMA_UNIFORM_WG", raising=False)   # the default
    art = build(KS.gemm(1024, 1024, 1024, bm=128, bn=256, bk=64, threads=256, stages=3))
    assert "TL_WGMMA_UNIFORM_WG" not in art.source
    ops = sass_ops(art)
    # each warpgroup's B descriptor depends on its index: without the broadcast ptxas builds it
    # in vector registers and moves it to uniform ones (R2UR) before every wgmma (on: 1 in all)
    assert ops["HGMMA"] >= 4 and ops["R2UR"] >= 8 and ops["STL"] == 0, ops


# GPU -------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("value", ["1", "0"])
@pytest.mark.parametrize("batch,seqlen_kv", [(1, 1024), (2, 4096)])
def test_mla_decode_matches_torch_either_way_gpu(monkeypatch, value, batch, seqlen_kv):
    import torch
    monkeypatch.setenv(SWITCH, value)
    heads, dim, pe_dim = 128, 512, 64
    kern = tilelang.compile(mla_decode_no_split(batch, heads, seqlen_kv, dim, pe_dim), out_idx=[4], target="cuda")
    torch.manual_seed(1)
    q = torch.randn(batch, heads, dim, device="cuda", dtype=torch.float16)
    qp = torch.randn(batch, heads, pe_dim, device="cuda", dtype=torch.float16)
    kv = torch.randn(batch, seqlen_kv, 1, dim, device="cuda", dtype=torch.float16)
    kp = torch.randn(batch, seqlen_kv, 1, pe_dim, device="cuda", dtype=torch.float16)
    for _ in range(3):   # repeated launches: a missing barrier shows as a run-to-run difference
        out = kern(q, qp, kv, kp).float()
        torch.testing.assert_close(out, mla_reference(q, qp, kv, kp).float(), rtol=2e-2, atol=2e-2)
