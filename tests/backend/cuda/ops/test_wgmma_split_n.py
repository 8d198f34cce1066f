"""wgmma with the warpgroups split along N (ops/wgmma.py, `AccLayout.wg_cols`): a block
tile of 64 rows run by 256 threads (MLA decode: 64 heads, two warpgroups of m64 x N/2).
CPU checks of the layout, of the plan (both products on wgmma, the row statistics in
registers, two pipeline stages) and of the SASS; the kernel against torch on the GPU."""
import os

import pytest

from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops
from tests.backend.cuda.kernels_mla import mla_decode_no_split, reference
from tilelang.backend.cuda.layout.fragment import AccLayout, RowLayout


@pytest.fixture(autouse=True)
def _single_role_ring(monkeypatch):
    """These tests read the single-role TMA ring's code and plan; by default MLA decode gets a
    producer warpgroup (plan/attention_warp_specialize.py), tested in its own file."""
    monkeypatch.setenv("TILELANG_CUDA_WS_ATTENTION", "0")


@pytest.mark.parametrize("M,N,WM,WN", [(64, 512, 4, 2), (64, 64, 4, 2), (128, 256, 8, 2), (64, 128, 4, 4)])
def test_warpgroup_major_grid_covers_the_tile(M, N, WM, WN):
    """Warpgroup g = w // 4 of an m64 slab holds all of its 64 rows and the columns
    [g' * N / WN, (g' + 1) * N / WN) with g' its place along N; every element once."""
    L = AccLayout(M, N, WM, WN, wg_cols=True)
    R = L.row_layout()
    assert R == RowLayout(M, WM, WN, True) and L.layout().endswith(", true>") and R.layout().endswith(", true>")
    slabs = M // 64
    seen = set()
    for t in range(32 * WM * WN):
        wg = t >> 7
        for r in range(L.regs):
            i, j = L.row(t, r), L.col(t, r)
            assert (i // 64, j // (N // WN)) == (wg % slabs, wg // slabs)
            assert R.row(t, L.row_slot(r)) == i   # the row vector's slot holds this row
            seen.add((i, j))
    assert len(seen) == M * N


def test_default_grid_unchanged():
    L = AccLayout(64, 64, 2, 2)
    assert L.layout() == "tl::MmaAccLayout<64, 64, 2, 2>" and L.row_layout().layout() == "tl::MmaRowLayout<64, 2, 2>"
    assert L.row(32, 0) == 0 and L.col(32, 0) == 32   # warp 1: row 0, column 1 (row-major grid)


def _plan_text(tmp_path, monkeypatch, pf):
    monkeypatch.setenv("TL_LOWER_TRACE", str(tmp_path))
    art = build(pf, "sm_90a")
    (page,) = [p for p in os.listdir(tmp_path) if "_cuda_plan_" in p]
    return art, (tmp_path / page).read_text()


@needs_nvrtc
@pytest.mark.parametrize("s_in_shared", [True, False])
def test_mla_decode_plan(tmp_path, monkeypatch, s_in_shared):
    art, text = _plan_text(tmp_path, monkeypatch, mla_decode_no_split(1, 128, 8192, 512, 64, s_in_shared=s_in_shared))
    assert text.count("wgmma m64n32k16, warpgroups 1 x 2, A from shared") == 2, text
    assert "wgmma m64n256k16, warpgroups 1 x 2, A from shared" in text, text
    for name in ("s", "o"):
        assert f"  {name} " in text
    assert "registers (acc): tl::MmaAccLayout<64, 64, 4, 2, true>" in text
    assert "registers (acc): tl::MmaAccLayout<64, 512, 4, 2, true>" in text
    for name in ("m", "m_prev", "alpha", "row_sum", "l"):   # the row statistics stay in registers
        line = next(ln for ln in text.splitlines() if ln.split()[:1] == [name])
        assert "registers (row): tl::MmaRowLayout<64, 4, 2, true>" in line, line
    assert "2 stages over kv_s, kpe_s" in text and "capped" not in text, text
    src = art.source
    # Q K^T over the latent part, then over the rope part, issue back to back; both groups
    # stay in flight over the row statistics' copies, up to the reduction of S (plan/wgmma_waits.py)
    qk = src.index("tl::wgmma_ss_issue<64, 64, 512, false, true, half, 2>(q_s, kv_s_slot, s, tl_tid);")
    pe = src.index("tl::wgmma_ss_issue<64, 64, 64, false, true, half, 2>(qpe_s, kpe_s_slot, s, tl_tid);")
    wait = src.index("tl::wgmma_wait<0>();\n    tl::fence_regs<16>(s);\n    {", pe)
    assert qk < pe < src.index("m_prev[", pe) < wait < src.index("tl::quad_reduce", wait)
    assert "tl::wgmma_gemm_ss<64, 512, 64, false, false, half, 2>" in src
    assert "const int tl_wc = (tl_tid >> 5) / 4;" in src   # the row exchange between the warpgroups
    # its barriers order the generic scratch only: no proxy fence (MEMBAR); P's barrier keeps it
    red = src[src.index("const int tl_wc"):]
    assert red.index("__syncthreads();") < red.index("tl_red[tl_row]") and \
        "fence_proxy_async" not in red[:red.index("tl_red[tl_row]")]
    # P goes to its sw128 tile two columns per 32-bit store
    assert f"tl::store_pair(&{'p_s' if s_in_shared else 'p'}[tl::sw128<64>(" in src
    pv = src.index("tl::wgmma_gemm_ss<64, 512, 64")
    assert src.rindex("tl::fence_proxy_async();", 0, pv) > src.rindex("p_s[" if s_in_shared else "p[", 0, pv)


@needs_nvrtc
def test_mla_decode_loads_through_the_tma_ring_with_a_barrier(monkeypatch):
    """The body writes P to shared memory: the TMA ring runs with a block barrier at the
    top of each iteration (ring_mode "barrier"), after the wait for the slot's bytes."""
    src = build(mla_decode_no_split(1, 128, 1024, 512, 64), "sm_90a").source
    loop = src[src.index("for (int k = 0; k < 16; ++k) {"):]
    assert loop.index("tl::mbar_wait(&ring_full[ring_stage], ring_phase);") < loop.index("__syncthreads();") < \
        loop.index("tl::wgmma_ss_issue<")
    # the loop's loads are TMA (Q, loaded once before it, may take cp.async + one wait)
    assert "tl::tma_load_4d(kv_s + " in src and "cp_async" not in loop
    monkeypatch.setenv("TILELANG_CUDA_TMA_RING", "0")   # the cp.async loop
    src = build(mla_decode_no_split(1, 128, 1024, 512, 64), "sm_90a").source
    assert "tl::cp_async_gs<16>(&kv_s_slot" in src and "tma_load" not in src   # in bounds: 1024 = 16 x 64


@needs_nvrtc
def test_fragment_a_goes_through_shared_when_n_is_split(tmp_path, monkeypatch):
    """wgmma's register A would have to hold all of P in both warpgroups: P is staged in
    shared memory (sw128) instead."""
    art, text = _plan_text(tmp_path, monkeypatch, mla_decode_no_split(1, 64, 512, 512, 64, s_in_shared=False))
    line = next(ln for ln in text.splitlines() if ln.split()[:1] == ["p"])
    assert "shared" in line and "sw128" in line, line


@needs_nvrtc
def test_one_warpgroup_keeps_the_m_stacked_form(tmp_path, monkeypatch):
    _, text = _plan_text(tmp_path, monkeypatch, mla_decode_no_split(1, 64, 512, 256, 64, threads=128))
    assert "wgmma m64n256k16, A from shared" in text and "warpgroups" not in text, text


@needs_nvrtc
def test_gemms_sharing_a_tile_with_an_mma_keep_wgmma(tmp_path, monkeypatch):
    """One warpgroup, P V with N = 512: no wgmma form; Q K^T keeps wgmma and its KV tile
    wgmma's swizzle, which the mma.sync P V reads through ldmatrix (tl::tile_offset);
    S keeps one accumulator layout."""
    art, text = _plan_text(tmp_path, monkeypatch, mla_decode_no_split(1, 64, 512, 512, 64, threads=128))
    assert text.count("wgmma m64n64k16, A from shared") == 2, text
    assert "T.gemm(p_s, kv_s, o): mma.sync m16n8k16, warps 1 x 4, accumulate in float32, reads kv_s sw128" in text
    assert "tl::gemm_ss<64, 512, 64, 1, 4, false, false, 0, 128>(" in art.source
    assert "registers (acc)" in next(ln for ln in text.splitlines() if ln.split()[:1] == ["s"])


@needs_sass
def test_mla_decode_sass_hgmma_no_spills():
    ops = sass_ops(build(mla_decode_no_split(1, 128, 8192, 512, 64), "sm_90a"))
    # per iteration: 512 / 16 + 64 / 16 steps of Q K^T, 64 / 16 of P V
    assert ops["HGMMA"] == 40 and ops["HMMA"] == 0, ops
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops


def run_mla(batch, heads, seqlen_kv, dim=512, pe_dim=64, **kw):
    import torch
    import tilelang
    kern = tilelang.compile(mla_decode_no_split(batch, heads, seqlen_kv, dim, pe_dim, **kw), out_idx=[4],
                            target="cuda")
    torch.manual_seed(0)
    q = torch.randn(batch, heads, dim, device="cuda", dtype=torch.float16)
    q_pe = torch.randn(batch, heads, pe_dim, device="cuda", dtype=torch.float16)
    kv = torch.randn(batch, seqlen_kv, 1, dim, device="cuda", dtype=torch.float16)
    k_pe = torch.randn(batch, seqlen_kv, 1, pe_dim, device="cuda", dtype=torch.float16)
    out = kern(q, q_pe, kv, k_pe)
    torch.testing.assert_close(out.float(), reference(q, q_pe, kv, k_pe), rtol=1e-2, atol=1e-2)
    return kern, (q, q_pe, kv, k_pe)


@needs_nvrtc
def test_l2_prefetch_is_opt_in(monkeypatch):
    """TILELANG_CUDA_TMA_L2_PREFETCH=n: each issue of a ring slot's bulk copies (iteration
    j) also prefetches the boxes of iteration j + n into L2, when that iteration exists."""
    pf = mla_decode_no_split(1, 128, 1024, 512, 64)
    assert "tma_prefetch_l2" not in build(pf, "sm_90a").source
    monkeypatch.setenv("TILELANG_CUDA_TMA_L2_PREFETCH", "3")
    src = build(pf, "sm_90a").source
    refill = src[src.index("tl::slot_release_last("):]
    assert refill.index("tl::tma_load_4d(") < refill.index("if (((k + 5) < 16)) {") < \
        refill.index("tl::tma_prefetch_l2(&tl_tmap_0, 448, 0, (ring_kp_1 * 64), b);")
    assert src.count("tl::tma_prefetch_l2(") == 2 * (8 + 1)   # preload and refill: 8 KV strips + K_pe
    monkeypatch.setenv("TILELANG_CUDA_TMA_L2_PREFETCH", "two")
    with pytest.raises(ValueError, match="TILELANG_CUDA_TMA_L2_PREFETCH"):
        build(pf, "sm_90a")


@pytest.mark.gpu
@pytest.mark.parametrize("batch,heads,seqlen_kv,kw", [
    (1, 128, 8192, {}),                        # the published regression size
    (2, 128, 512, {}),
    (3, 64, 1024, {"s_in_shared": False}),     # P as a fragment, staged through shared memory
    (1, 128, 256, {"num_stages": 1}),
    (2, 64, 512, {"threads": 128, "dim": 256}),   # one warpgroup: the M-stacked form
    (2, 64, 512, {"threads": 128}),            # P V of N = 512 is no wgmma: both products on mma.sync
])
def test_mla_decode_matches_torch(batch, heads, seqlen_kv, kw):
    run_mla(batch, heads, seqlen_kv, **kw)


@pytest.mark.gpu
@pytest.mark.parametrize("ahead", ["1", "4"])
def test_mla_decode_with_l2_prefetch_matches_torch(monkeypatch, ahead):
    monkeypatch.setenv("TILELANG_CUDA_TMA_L2_PREFETCH", ahead)
    kern, _ = run_mla(2, 128, 1024)
    assert "tl::tma_prefetch_l2(" in kern.get_kernel_source()
