"""TMA multicast (opt-in: TILELANG_CUDA_TMA_MULTICAST=1) in the pipelined sm_90a GEMM loop (tma.py `plan_multicast`): blocks
run in pairs (a 2-block cluster) along the grid axis whose block index the shared
operand's tile does not use; each block loads half of that tile and multicasts it to
both, and a slot is refilled once the warps of both blocks released it. Compile-only
checks here (source, launch metadata, SASS), then runs on the GPU against torch."""
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda import kernels as KS
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops


@pytest.fixture(autouse=True)
def _multicast_on(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_TMA_MULTICAST", "1")   # opt-in (tma.py says why)


def _kernel_meta(art):
    return art.meta["kernels"][0]


@needs_nvrtc
@pytest.mark.parametrize("trans_A,trans_B,how", [(False, False, "strips"), (True, False, "strips"),
                                                 (False, True, "rows")])
def test_pairs_share_the_larger_operand(trans_A, trans_B, how):
    art = build(KS.gemm(1024, 1024, 512, bm=128, bn=256, bk=64, threads=256, stages=4,
                       trans_A=trans_A, trans_B=trans_B))
    k = _kernel_meta(art)
    # B's tile (32 KB) is the same for blocks of one column: pairs along y share it
    assert k["cluster"] == [1, 2, 1]
    assert "__cluster_dims__(1, 2, 1)" in art.source and "tl::tma_load_2d_multicast(" in art.source
    assert "tl::mbar_arrive_cluster(" in art.source and "tl::cluster_sync();" in art.source
    # the empty barriers count the warps of both blocks
    assert "tl::mbar_init(&ring_empty[ring_s], 16);" in art.source
    loads = [t for t in k["tmaps"] if t["buffer"] != 2]   # C's map: the epilogue's TMA store
    if how == "rows":   # one 64-column strip: halves of 128 rows through a map of their own
        assert sorted(t["box"][1] for t in loads) == [128, 128, 256]
    else:
        assert len(loads) == 2


@needs_sass
def test_sass_has_multicast_bulk_copies():
    ops = sass_ops(build(KS.gemm(1024, 1024, 512, bm=128, bn=256, bk=64, threads=256, stages=4)))
    assert ops["UTMALDG"] > 0 and ops["HGMMA"] >= 4 and ops["LDL"] == 0 and ops["STL"] == 0, ops
    from tilelang.backend.cuda.host.nvrtc import sass
    text = sass(build(KS.gemm(1024, 1024, 512, bm=128, bn=256, bk=64, threads=256, stages=4)).binary)
    assert "UTMALDG.2D.MULTICAST" in text


@needs_nvrtc
def test_odd_grid_keeps_single_blocks():
    # 3 x 3 blocks: no axis has an even extent
    art = build(KS.gemm(384, 768, 256, bm=128, bn=256, bk=64, threads=256, stages=4))
    assert _kernel_meta(art)["cluster"] is None and "multicast" not in art.source


@needs_nvrtc
def test_x_pairs_when_only_x_is_even():
    # grid (2, 3): blocks of one row share A's tile (one strip: split by rows)
    art = build(KS.gemm(384, 512, 256, bm=128, bn=256, bk=64, threads=256, stages=4))
    assert _kernel_meta(art)["cluster"] == [2, 1, 1] and "tl::tma_load_2d_multicast(" in art.source


@needs_nvrtc
def test_switch_off(monkeypatch):
    monkeypatch.delenv("TILELANG_CUDA_TMA_MULTICAST")   # the default
    monkeypatch.setenv("TILELANG_CUDA_WS_MULTICAST", "0")   # (on by default: the warp-specialized form's pairs)
    art = build(KS.gemm(1024, 1024, 512, bm=128, bn=256, bk=64, threads=256, stages=4))
    assert _kernel_meta(art)["cluster"] is None and "multicast" not in art.source


def _gemm_bounded_by_block(M=1024, N=1024, K=1024, bm=128, bn=256, bk=64):
    """The K loop's length depends on the block row: paired blocks would not run the
    loop alike, so they must not share copies."""
    @T.prim_func
    def f(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=256) as (bx, by):
            As = T.alloc_shared((bm, bk), "float16")
            Bs = T.alloc_shared((bk, bn), "float16")
            Cf = T.alloc_fragment((bm, bn), "float32")
            T.clear(Cf)
            for k in T.Pipelined(by + 1, num_stages=4):
                T.copy(A[by * bm, k * bk], As)
                T.copy(B[k * bk, bx * bn], Bs)
                T.gemm(As, Bs, Cf)
            T.copy(Cf, C[by * bm, bx * bn])
    return f


@needs_nvrtc
def test_block_dependent_loop_is_not_shared():
    art = build(_gemm_bounded_by_block())
    assert _kernel_meta(art)["cluster"] is None and "multicast" not in art.source


@needs_nvrtc
def test_rasterized_blocks_are_not_shared():
    from examples.gemm.example_gemm import matmul
    art = build(matmul.get_tir(1024, 1024, 1024, block_M=128, block_N=256, block_K=64, num_stages=4, threads=256,
                               swizzle_panel=4))
    assert _kernel_meta(art)["cluster"] is None


@needs_nvrtc
def test_user_clusters_win():
    @T.prim_func
    def f(A: T.Tensor((1024, 512), "float16"), B: T.Tensor((512, 1024), "float16"),
          C: T.Tensor((1024, 1024), "float16")):
        with T.Kernel(4, 8, threads=256, cluster_dims=(2, 1, 1)) as (bx, by):
            As = T.alloc_shared((128, 64), "float16")
            Bs = T.alloc_shared((64, 256), "float16")
            Cf = T.alloc_fragment((128, 256), "float32")
            T.clear(Cf)
            for k in T.Pipelined(8, num_stages=4):
                T.copy(A[by * 128, k * 64], As)
                T.copy(B[k * 64, bx * 256], Bs)
                T.gemm(As, Bs, Cf)
            T.copy(Cf, C[by * 128, bx * 256])
    art = build(f)
    assert _kernel_meta(art)["cluster"] == [2, 1, 1] and "multicast" not in art.source


@pytest.mark.gpu
@pytest.mark.parametrize("multicast", ["1", "0"])
@pytest.mark.parametrize("M,N,K,trans_A,trans_B,dtype", [
    (1024, 1024, 1024, False, False, "float16"),
    (1000, 1024, 1000, False, False, "bfloat16"),    # ragged rows and K: zero-filled boxes
    (1024, 512, 768, True, False, "float16"),
    (1024, 768, 512, False, True, "bfloat16"),        # split by rows
    (384, 512, 640, False, False, "float16"),         # pairs along x (A shared)
])
def test_multicast_gemm_on_gpu(monkeypatch, multicast, M, N, K, trans_A, trans_B, dtype):
    import torch
    monkeypatch.setenv("TILELANG_CUDA_TMA_MULTICAST", multicast)
    monkeypatch.setenv("TILELANG_CUDA_WS_MULTICAST", multicast)   # the warp-specialized form's pairs too
    kern = tilelang.compile(KS.gemm(M, N, K, bm=128, bn=256, bk=64, threads=256, stages=4, dtype=dtype,
                                   trans_A=trans_A, trans_B=trans_B), target="cuda")
    tdt = getattr(torch, dtype)
    a = torch.randn((K, M) if trans_A else (M, K), device="cuda", dtype=tdt)
    b = torch.randn((N, K) if trans_B else (K, N), device="cuda", dtype=tdt)
    c = torch.empty(M, N, device="cuda", dtype=tdt)
    kern(a, b, c)
    ref = (a.t() if trans_A else a).float() @ (b.t() if trans_B else b).float()
    torch.testing.assert_close(c.float(), ref, rtol=2e-2, atol=2e-1 if dtype == "bfloat16" else 5e-2)
    assert (kern.get_kernel_source().count("__cluster_dims__") == 1) == (multicast == "1")
