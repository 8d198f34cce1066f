"""A reduction over groups of columns of a gemm accumulator, written through a view
(`T.reduce_sum(T.reshape(s, (N, Q, H)), logits, dim=-1)`, deepseek_v32's lightning
indexer): the accumulator stays in registers (layout/fragment.py GroupReduce; its
element-wise loop over the view is folded by transform/fold_fragment_views.py) and each
quad combines its group's columns with two shuffles. The view used to move the 128 KB
score tile to shared memory: a fill, a store and three reads of it per iteration."""
import pytest

import tilelang
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops
from tests.backend.cuda.plan.test_pipeline import _plan
from tests.backend.cuda.layout.indexer_kernels import indexer, indexer_reference
from tilelang.backend.cuda.layout.fragment import AccLayout

# (arch, dtype, heads, queries per block): a group of `heads` columns within one warp's columns
IN_REGISTERS = [("sm_90a", "float8_e4m3fn", 32, 4), ("sm_90a", "float16", 16, 8), ("sm_80", "float16", 16, 8)]


@pytest.mark.parametrize("L", [AccLayout(256, 128, 16, 1), AccLayout(256, 128, 2, 8), AccLayout(64, 64, 2, 2)])
def test_strip_col_is_the_accumulators_column_strip(L):
    # tl::MmaAccLayout::strip_col(r) (mma.h): the 8-column strip of register r, the same on every thread
    for t in range(0, L.WM * L.WN * 32, 7):
        for r in range(L.regs):
            assert L.col(t, r) % (L.N // L.WN) // 8 * 8 == ((r >> 2) % L.NI) * 8


@pytest.mark.parametrize("L,B", [(AccLayout(64, 128, 4, 1), 32), (AccLayout(64, 64, 2, 2), 16),
                                  (AccLayout(64, 128, 4, 1, True), 64)])
def test_each_quad_leader_stores_exactly_its_groups_columns(L, B):
    # emit_group_reduce's selection, run on the layout model: quad lanes' registers with
    # row_slot == s and strip_col / B == g cover row R.row(t, s), columns of group wc * GPW + g
    from tilelang.backend.cuda.layout.fragment import GroupReduce
    G, R = GroupReduce(L, L.N // B, B), L.row_layout()
    strip = [((r >> 2) % L.NI) * 8 for r in range(L.regs)]
    stored = {}
    for t in range(0, L.WM * L.WN * 32, 4):
        wc = (t >> 5) // L.WM if L.wg_cols else (t >> 5) % L.WN
        for s in range(R.regs):
            for g in range(G.groups_per_warp):
                cells = {(L.row(t + q, r), L.col(t + q, r)) for q in range(4) for r in range(L.regs)
                         if L.row_slot(r) == s and strip[r] // B == g}
                key = (R.row(t, s), wc * G.groups_per_warp + g)
                assert cells == {(key[0], key[1] * B + c) for c in range(B)}, (t, s, g)
                assert key not in stored
                stored[key] = t
    assert len(stored) == L.M * (L.N // B)


@pytest.mark.parametrize("arch,dtype,heads,bq", IN_REGISTERS)
def test_the_score_accumulator_stays_in_registers(arch, dtype, heads, bq):
    plan, text = _plan(indexer(H=heads, block_Q=bq, dtype=dtype), arch)
    placed = {ln.split()[0]: ln for ln in text.splitlines() if "local.fragment" in ln}
    assert "registers (acc)" in placed["score"] and "registers (row)" in placed["scale"], placed
    assert "shared" in placed["logits"] and "view" in placed["per_head"]


def test_groups_wider_than_a_warps_columns_fall_back_to_shared_memory():
    # mma.sync over 2 x 8 warps: 16 columns per warp, groups of 32
    plan, _ = _plan(indexer(H=32, block_Q=4, dtype="float16"), "sm_80")
    why = {name: (lay, reason) for name, lay, reason in plan.fragments.report}
    assert why["score"] == ("shared", "a reduction over a view that is not its column groups")


@needs_sass
def test_fp8_indexer_sass_keeps_qgmma_and_quad_shuffles_without_spills():
    art = build(indexer(), arch="sm_90a")
    assert "float* score = reinterpret_cast" not in art.source
    assert "::strip_col(tl_r) / 32 == tl_g" in art.source
    ops = sass_ops(art)
    assert ops["QGMMA"] > 0 and ops["SHFL"] >= 16, ops
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops


@pytest.mark.gpu
@pytest.mark.parametrize("arch,dtype,heads,bq", IN_REGISTERS)
def test_indexer_matches_torch_gpu(arch, dtype, heads, bq):
    import torch
    if torch.cuda.get_device_capability() != (int(arch[3]), int(arch[4])):
        pytest.skip(f"a cubin for {arch} does not load on this GPU (the compile-only tests cover it)")
    torch.manual_seed(0)
    S, SKV, D = 64, 512, 64
    kern = tilelang.compile(indexer(S=S, SKV=SKV, H=heads, D=D, block_Q=bq, dtype=dtype), target=f"cuda -arch={arch}")
    tdt = getattr(torch, dtype)
    q = torch.randn(S * heads, D, device="cuda").to(tdt)
    kv = torch.randn(SKV, D, device="cuda").to(tdt)
    scale = torch.rand(SKV, device="cuda") + 0.5
    w = torch.randn(S, heads, device="cuda")
    out = torch.empty(S, SKV, device="cuda")
    kern(q, kv, scale, w, out)
    ref = indexer_reference(q, kv, scale, w, heads)
    if dtype.startswith("float8"):
        # fp8 wgmma accumulates in reduced precision (tests/backend/cuda/ops/test_gemm_fp8.py
        # assert_close_to_fp8_wgmma_precision): D/32 roundings at 2^-14 of each head's
        # sum |q||kv|, weighted as the reference weighs the head
        mag = torch.einsum("shd,nd->shn", q.float().abs().view(S, heads, -1), kv.float().abs())
        bound = (mag * w.abs()[:, :, None]).sum(1) * scale[None, :] * (D / 32) * 2.0 ** -14 + 1e-2
        err = (out - ref).abs()
        assert bool((err <= bound).all()), f"{int((err > bound).sum())} past the bound, max {float(err.max())}"
        assert float((out - ref).norm() / ref.norm()) < 2e-3
    else:
        torch.testing.assert_close(out, ref, rtol=1e-3, atol=1e-2)


def test_a_view_of_a_fragment_no_gemm_reaches_stays_in_shared_memory():
    # a thread tile cannot be read through a view: the base keeps the shared-memory path
    from tests.transform.test_fold_fragment_views import _kernel
    plan, _ = _plan(_kernel(), "sm_90a")
    why = {name: lay for name, lay, _ in plan.fragments.report}
    assert why["s"] == "shared" and why["t"] == "shared"


@pytest.mark.gpu
def test_a_view_of_a_shared_fragment_gpu():
    import numpy as np
    import torch
    from tests.transform.test_fold_fragment_views import _kernel, M, A, B
    x = torch.randn(M, A * B, device="cuda")
    w = torch.randn(A, B, device="cuda")
    out = torch.zeros(M, A, device="cuda")
    tilelang.compile(_kernel(), target="cuda")(x, w, out)
    ref = (x.view(M, A, B).clamp_min(0) * w).sum(-1)
    np.testing.assert_allclose(out.cpu().numpy(), ref.cpu().numpy(), rtol=1e-5, atol=1e-5)
