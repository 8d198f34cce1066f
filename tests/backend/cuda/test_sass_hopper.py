"""CPU-only: the sm_90a performance paths are in the SASS. GEMM and FlashAttention
use warpgroup MMA (HGMMA), the GEMM's pipelined tile copies are bulk tensor copies
(UTMALDG; cp.async = LDGSTS with `tl.disable_tma_lower` and elsewhere), and no
kernel spills to local memory (LDL/STL). sm_80 keeps mma.sync (HMMA) + cp.async."""
import os
import sys

import pytest

from tests.backend.cuda import kernels as K
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _no_spills(ops):
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops


@needs_sass
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("trans_A,trans_B", [(False, False), (False, True), (True, False)])
def test_gemm_sm90a_is_hgmma_with_cp_async(dtype, trans_A, trans_B):
    """TMA off (pass config): the tiles are cp.async'd by every thread."""
    art = build(K.gemm(4096, 4096, 4096, bm=128, bn=256, bk=64, threads=256, stages=4, dtype=dtype,
                       trans_A=trans_A, trans_B=trans_B, relu=trans_B), config={"tl.disable_tma_lower": True})
    assert "tl::wgmma_ss_issue<" in art.source and "tl::sw128<" in art.source
    assert "tma_load" not in art.source and not art.meta["kernels"][0]["tmaps"]
    ops = sass_ops(art)
    assert ops["HGMMA"] >= 4 and ops["LDGSTS"] > 0 and ops["HMMA"] == 0 and ops["UTMALDG"] == 0, ops
    _no_spills(ops)
    assert art.meta["kernels"][0]["smem"] == 4 * (128 * 64 + 64 * 256) * 2


@needs_sass
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("trans_A,trans_B", [(False, False), (False, True), (True, False)])
def test_gemm_sm90a_is_hgmma_with_tma(dtype, trans_A, trans_B):
    """Default on sm_90a: one thread (of a producer warpgroup) issues bulk tensor copies
    (UTMALDG) that complete on mbarriers; no per-thread cp.async and no block barrier in the
    main loop."""
    art = build(K.gemm(4096, 4096, 4096, bm=128, bn=256, bk=64, threads=256, stages=4, dtype=dtype,
                       trans_A=trans_A, trans_B=trans_B, relu=trans_B))
    src = art.source
    assert "tl::wgmma_ss_issue<" in src and "tl::tma_load_2d(" in src and "__grid_constant__ tl::CUtensorMap" in src
    k = art.meta["kernels"][0]
    # A and B (B's halves may take a map of their own in multicast pairs), C for the epilogue's TMA store
    loads = [t for t in k["tmaps"] if t["buffer"] != 2]
    assert len(loads) in (2, 3) and all(t["box"][0] == 64 for t in k["tmaps"]), k["tmaps"]
    assert [t["box"] for t in k["tmaps"] if t["buffer"] == 2] == [[64, 128]]
    assert k["aligned"]["A"] >= 16 and k["aligned"]["B"] >= 16
    main_loop = src[src.index("for (int k = "):src.index("tl::wgmma_wait<0>")]
    assert "__syncthreads" not in main_loop and "cp_async" not in main_loop
    ops = sass_ops(art)
    assert ops["HGMMA"] >= 4 and ops["UTMALDG"] > 0 and ops["LDGSTS"] == 0 and ops["HMMA"] == 0, ops
    assert ops["SYNCS"] > 0, ops   # mbarrier arrive / try_wait
    _no_spills(ops)
    # ring, "full" and "empty" barriers; a producer warpgroup feeds it (plan/warp_specialize.py)
    assert k["smem"] == 4 * (128 * 64 + 64 * 256) * 2 + (8 + 8) * 4
    assert k["threads"] == [256 + 128, 1, 1] and ops["USETMAXREG"] == 2, (k["threads"], ops)


@needs_nvrtc
def test_gemm_tma_falls_back_to_cp_async():
    """A row stride that is not a multiple of 16 bytes cannot be a tensor map: cp.async."""
    art = build(K.gemm(4096, 4096, 4100, bm=128, bn=256, bk=64, threads=256, stages=4))
    assert "tma_load" not in art.source and "cp_async_gs" in art.source
    assert [t["buffer"] for t in art.meta["kernels"][0]["tmaps"]] == [2]   # C: the epilogue's TMA store
    # a ragged edge with aligned strides keeps TMA (out-of-bounds boxes are zero-filled)
    art = build(K.gemm(320, 400, 360, bm=128, bn=256, bk=64, threads=256, stages=3))
    assert "tma_load" in art.source and "cp_async_gs" not in art.source
    # sm_80 never uses it
    assert "tma_load" not in build(K.gemm(stages=3), "sm_80").source


@needs_sass
def test_gemm_sm80_is_mma_sync_with_cp_async():
    ops = sass_ops(build(K.gemm(stages=3), "sm_80"))
    assert ops["HMMA"] > 0 and ops["LDGSTS"] > 0 and ops["HGMMA"] == 0, ops
    _no_spills(ops)


@needs_nvrtc
def test_pipelined_stages_multi_buffer_shared_tiles():
    one = build(K.gemm(stages=1)).meta["kernels"][0]["smem"]
    three = build(K.gemm(stages=3)).meta["kernels"][0]["smem"]
    assert three >= 3 * one - 3 * 1024, (one, three)


@needs_sass
@pytest.mark.parametrize("dim,causal", [(64, False), (128, True)])
def test_flash_attention_sm90a_is_hgmma(dim, causal):
    sys.path.insert(0, os.path.join(ROOT, "examples", "flash_attention"))
    import example_flash_attention as FA
    f = FA.flash_attention.get_tir(2, 2, 512, 512, dim, causal, "bhsd", block_M=64, block_N=64, num_stages=2,
                                   threads=128)
    ops = sass_ops(build(f))
    assert ops["HGMMA"] > 0 and ops["UTMALDG"] > 0, ops   # K, V by bulk tensor copies
    _no_spills(ops)


@needs_nvrtc
def test_views_alias_their_base():
    import tilelang.language as T

    @T.prim_func
    def viewk(A: T.Tensor((64, 64), "float32"), B: T.Tensor((4096,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), "float32")
            T.copy(A, S)
            flat = T.reshape(S, (4096,))
            for i in T.Parallel(4096):
                B[i] = flat[i] * 2
    art = build(viewk)
    assert "= (float*)(S);" in art.source
    src = art.source
    assert src.index("__syncthreads()") < src.index("flat[")  # the view is synchronized as its base
    assert art.meta["kernels"][0]["smem"] == 64 * 64 * 4


@needs_sass
def test_rasterized_gemm_keeps_tma():
    """T.use_swizzle remaps the block indices; the safe-access pass then also checks the
    tile origins against 0, which the bulk copy's zero fill covers: still UTMALDG."""
    sys.path.insert(0, ROOT)
    from examples.gemm.example_gemm import matmul
    art = build(matmul.get_tir(1024, 1024, 1024, block_M=128, block_N=256, block_K=64, num_stages=4, threads=256,
                               swizzle_panel=4))
    ops = sass_ops(art)
    assert ops["UTMALDG"] > 0 and ops["LDGSTS"] == 0 and ops["HGMMA"] >= 4, ops
    assert "tl::store_pair(" in art.source
    _no_spills(ops)
