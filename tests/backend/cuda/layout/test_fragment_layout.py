"""CPU-only: fragment layout inference (backend/cuda/layout/fragment.py) and what it
does to the generated code: FlashAttention keeps its score tile, the cast P tile and
the row statistics in registers (no local memory, quad-shuffle reductions, wgmma
with A from registers); uses a layout cannot follow fall back to shared memory."""
import os
import sys

import pytest

from tests.backend.cuda import kernels as K
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops
from tilelang.backend.cuda.layout.fragment import AccLayout, RowLayout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
FA_NAMES = ("acc_s", "acc_s_cast", "acc_o", "m_i", "m_prev", "alpha", "row_sum", "l_i")


def _fa(dim=128, causal=False, bm=128, bn=64, threads=256, stages=2):
    sys.path.insert(0, os.path.join(ROOT, "examples", "flash_attention"))
    import example_flash_attention as FA
    return FA.flash_attention.get_tir(2, 2, 512, 512, dim, causal, "bhsd", block_M=bm, block_N=bn,
                                      num_stages=stages, threads=threads)


@pytest.mark.parametrize("M,N,WM,WN", [(128, 64, 8, 1), (64, 128, 4, 1), (64, 64, 2, 2), (128, 128, 2, 2)])
def test_acc_layout_is_the_contiguous_mma_accumulator(M, N, WM, WN):
    from tilelang.layout.gemm_partition import make_mma_accumulator_fragment
    f = make_mma_accumulator_fragment(M, N, WM, WN, style="contiguous")
    L = AccLayout(M, N, WM, WN)
    seen = set()
    for t in range(32 * WM * WN):
        for r in range(L.regs):
            i, j = L.row(t, r), L.col(t, r)
            assert tuple(f.map(i, j)[:2]) == (t, r)
            seen.add((i, j))
            if WN == 1:  # the row slot holds this row
                assert L.row_layout().row(t, L.row_slot(r)) == i
    assert len(seen) == M * N


def test_row_layout_replicates_rows_over_quads():
    R = RowLayout(128, 8)
    owners = {}
    for t in range(256):
        for s in range(R.regs):
            owners.setdefault(R.row(t, s), set()).add(t)
    assert sorted(owners) == list(range(128))
    assert all(len(ts) == 4 and len({t >> 2 for t in ts}) == 1 for ts in owners.values())


@needs_sass
@pytest.mark.parametrize("dim,causal,bm,bn,threads", [(128, False, 128, 64, 256), (128, True, 64, 64, 128),
                                                      (64, False, 128, 128, 256)])
def test_flash_attention_sm90a_fragments_in_registers(dim, causal, bm, bn, threads):
    from tilelang.backend.cuda.host.nvrtc import sass
    art = build(_fa(dim, causal, bm, bn, threads))
    src = art.source
    assert "tl::wgmma_gemm_rs<" in src and "tl::quad_reduce(" in src, src
    for name in FA_NAMES:   # register arrays, not pointers into shared memory
        assert f"* {name} = reinterpret_cast" not in src, name
    text = sass(art.binary)
    ops = sass_ops(art)
    # K and V arrive by bulk tensor copies (4-D tensor maps), the ring needs no block barrier
    assert ops["HGMMA"] > 0 and ops["UTMALDG"] > 0 and ops["LDGSTS"] == 0, ops
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops
    assert "tl::tma_load_4d(" in src and "tl::slot_release_last(" in src
    assert "SHFL.BFLY" in text
    # barriers: after the ring's set-up, before the output tile, after the loop; none inside it
    assert ops["BAR"] <= 4, ops
    # shared memory holds only Q, the K/V rings, the output tile and the ring's 2 barriers and counters
    assert art.meta["kernels"][0]["smem"] == (2 * bm * dim + 2 * 2 * bn * dim) * 2 + 2 * (8 + 4)


@needs_sass
def test_flash_attention_ring_switch_keeps_cp_async(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_TMA_RING", "0")
    art = build(_fa(128, False, 128, 64, 256))
    ops = sass_ops(art)
    assert ops["LDGSTS"] > 0 and ops["UTMALDG"] == 0, ops
    assert art.meta["kernels"][0]["smem"] == (2 * 128 * 128 + 2 * 2 * 64 * 128) * 2


@needs_sass
def test_flash_attention_sm90a_shared_p_fallback(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_WGMMA_RS", "0")
    art = build(_fa(128, False, 128, 64, 256))
    assert "tl::wgmma_gemm_rs<" not in art.source and "* acc_s_cast = reinterpret_cast" in art.source
    ops = sass_ops(art)
    assert ops["HGMMA"] > 0 and ops["LDL"] == 0 and ops["STL"] == 0, ops


@needs_sass
def test_flash_attention_sm80_mma_sync_register_softmax():
    from tilelang.backend.cuda.host.nvrtc import sass
    art = build(_fa(64, True, 64, 64, 128), "sm_80")
    src = art.source
    assert "* acc_s = reinterpret_cast" not in src and "* m_i = reinterpret_cast" not in src
    # P stays in registers: the mma.sync reads its A operand there (tests/backend/cuda/plan/test_mma_register_a.py)
    assert "* acc_s_cast = reinterpret_cast" not in src and "tl::gemm_rs<" in src
    ops = sass_ops(art)
    assert ops["HMMA"] > 0 and ops["LDL"] == 0 and ops["STL"] == 0, ops
    assert "SHFL.BFLY" in sass(art.binary)


@needs_nvrtc
@pytest.mark.parametrize("kw,registers,shared", [
    (dict(), ("C", "Ch", "mx", "sm"), ()),
    (dict(threads=64), ("C", "Ch", "mx", "sm"), ()),                   # mma.sync, FullRow
    # warps split the columns: row results combine the warps' partials in shared scratch
    (dict(threads=64, policy="Square", N=128), ("C", "Ch", "mx", "sm"), ()),
    # column reduction: the accumulator and its statistics fall back to shared memory; the
    # half-precision copy, which only reads the accumulator, is a register tile of its own
    (dict(reduce_dim=0), ("Ch",), ("C", "mx", "sm")),
])
def test_row_stats_layouts_and_fallbacks(kw, registers, shared):
    art = build(K.gemm_row_stats(**kw))
    src = art.source
    for name in registers:
        assert f"* {name} = reinterpret_cast" not in src, (name, src)
    for name in shared:
        assert f"* {name} = reinterpret_cast" in src, (name, src)
    assert ("tl::quad_reduce(" in src) == ("C" in registers)


@needs_nvrtc
def test_fallback_reasons_are_reported(capsys, monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_DUMP_FRAGMENTS", "1")
    build(K.gemm_row_stats(reduce_dim=0))
    err = capsys.readouterr().err
    assert "fragment layouts:" in err and "a reduction other than dim=1" in err, err


@needs_sass
def test_mla_scores_stay_in_registers_when_row_layouts_meet():
    """MLA decode: the score tile (64 x 32) and the output (64 x 512) are wgmma
    accumulators of the same warpgroup grid (the 32-wide P tile takes the 64B swizzle), so
    the scores, the output and the row statistics all stay in registers."""
    import importlib.util
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    spec = importlib.util.spec_from_file_location(
        "mla_example", os.path.join(root, "examples", "deepseek_mla", "example_mla_decode.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    art = build(m.mla_decode.get_tir(2, 128, 1024, 512, 64, block_H=64, block_N=32, num_split=4, threads=256))
    src = art.source
    assert "* acc_s = reinterpret_cast" not in src and "* acc_o = reinterpret_cast" not in src
    assert "float m_i[2];" in src and "tl::sw64<64>(" in src
    ops = sass_ops(art)
    assert ops["HGMMA"] > 0 and ops["LDL"] == 0 and ops["STL"] == 0, ops
