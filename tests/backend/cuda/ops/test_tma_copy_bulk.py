"""T.tma_copy issued as bulk tensor copies on sm_90 (TILELANG_CUDA_TMA_COPY=1;
plan/copy_forms.py `tma_copy`, ops/tma.py `match_tma(views=True)`, ops/tma_pipeline.py
`emit_tma_copy`): the published ring kernel (a `[slots, R, C]` shared buffer filled slot
by slot on per-slot mbarriers, test_tilelang_language_tma_copy.py
test_tma_copy_cluster_mask_multicast) gets one box per slot, and with `cluster_mask` the
mask's lowest-ranked block multicasts it to the blocks of the mask (each announcing the
bytes on its own barrier, initialized before any block multicasts: a cluster barrier).
The IR the pass leaves, then NVRTC's SASS. The runs against torch:
tests/backend/cuda/test_run_gpu_tma_copy_cluster_mask.py."""
import re

import pytest

import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build
from tests.backend.cuda.plan.test_copy_forms import _before_after
from tests.transform.test_lower_cluster_mask import multicast_ring

BULK = "# -> TMA load (T.tma_copy, on its mbarrier)"


@pytest.fixture
def tma_copy(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_TMA_COPY", "1")


def _plan(func):
    from tilelang.backend.cuda.plan.plan_kernels import kernel_plan
    from tilelang.backend.cuda.plan.copy_forms import plan_copy_forms
    from tilelang.backend.registry import parse_target
    from tilelang.backend.cuda import pipeline as P
    from tilelang.ir import stmt as S
    from tilelang.ir.visitor import walk
    from tilelang.transform.pass_manager import PassContext, run_passes
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS})
    ctx.target = parse_target({"kind": "cuda", "arch": "sm_90a"})
    f = run_passes(func, P.PASSES[:P.PASSES.index(plan_copy_forms) + 1], ctx)
    launches = []
    walk(f.body, lambda n: launches.append(n) if isinstance(n, S.KernelLaunch) else None)
    return kernel_plan(launches[0])


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_a_slot_of_a_ring_is_one_box(tma_copy, dtype):
    before, after = _before_after(multicast_ring(mask=None, dtype=dtype))
    assert "T.tma_copy(A[k, 0:64, 0:64], a_shared[k % 4, 0:64, 0:64], barrier=mbars[k % 4])" in before
    assert after.count(BULK + "\n") == 1, after


def test_the_mask_multicasts_from_its_lowest_rank(tma_copy):
    _, after = _before_after(multicast_ring())
    assert after.count(BULK + ", multicast to cluster ranks 0b11") == 1
    assert _plan(multicast_ring()).cluster_barrier_init
    assert not _plan(multicast_ring(mask=None)).cluster_barrier_init


def test_without_the_switch_the_copy_is_cp_async_and_no_multicast(monkeypatch):
    monkeypatch.delenv("TILELANG_CUDA_TMA_COPY", raising=False)
    _, after = _before_after(multicast_ring())
    assert "# -> T.tma_copy as cp.async arriving on its mbarrier" in after and "multicast" not in after
    assert not _plan(multicast_ring()).cluster_barrier_init


@pytest.mark.parametrize("kwargs", [dict(slot_of="pid"), dict(branch=True)])
def test_a_copy_that_may_land_elsewhere_in_each_block_is_each_blocks_own_load(tma_copy, kwargs):
    # (lower_cluster_mask drops the mask: the destination, or whether the copy runs,
    # may differ between the blocks of the cluster)
    _, after = _before_after(multicast_ring(**kwargs))
    assert BULK in after and "multicast" not in after


@needs_nvrtc
def test_source_issues_the_multicast_from_the_lowest_rank_of_the_mask(tma_copy):
    src = build(multicast_ring(mask=0b10)).source
    assert "tl::cluster_sync();" in src and src.count("__syncthreads();") == 2   # the loop's barriers only
    assert "tl::mbar_expect_tx(&mbars[((k) & 3)], 16384);" in src   # in every block
    assert re.search(r"if \(tl_rank == 1\) \{\s*tl::tma_load_multicast\(\(a_shared \+ \(\(\(\(k\) & 3\) \* 4096\)\)\)"
                     r" \+ 0, &tl_tmap_0, &mbars\[\(\(k\) & 3\)\], 2, 0, 0, k\);", src), src
    # rank 0 is outside the mask: its own load
    assert re.search(r"else if \(\(\(2 >> tl_rank\) & 1\) == 0\) \{\s*tl::tma_load_3d\(", src), src


@needs_sass
def test_sass_multicasts_and_loads_in_bulk(tma_copy):
    from tilelang.backend.cuda.host.nvrtc import sass
    art = build(multicast_ring())
    text = sass(art.binary)
    assert "UTMALDG.3D.MULTICAST" in text and "LDGSTS" not in text
    assert not re.search(r"\b(STL|LDL)\b", text)
    k = art.meta["kernels"][0]
    assert k["cluster"] == [2, 1, 1]
    assert [(t["box"], t["elem_bytes"], t.get("swizzle")) for t in k["tmaps"]] == [([64, 64, 1], 4, 0)]


def swizzled_ring(n=4, slots=2):
    """A `[slots, 64, 64]` ring read by wgmma (each slot one sw128 tile), filled by T.tma_copy."""
    @T.prim_func
    def main(Q: T.Tensor((64, 64), "float16"), K: T.Tensor((n * 64, 64), "float16"), O: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            q = T.alloc_shared((64, 64), "float16")
            ks = T.alloc_shared((slots, 64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            bars = T.alloc_barrier([128] * slots)
            T.copy(Q, q)
            T.clear(acc)
            for i in T.serial(n):
                T.tma_copy(K[i * 64, 0], ks[i % slots, :, :], barrier=bars[i % slots])
                T.mbarrier_arrive(mbarrier=bars[i % slots])
                T.mbarrier_wait_parity(mbarrier=bars[i % slots], parity=(i // slots) % 2)
                T.gemm(q, ks[i % slots, :, :], acc, transpose_B=True)
                T.sync_threads()
            T.copy(acc, O)
    return main


@needs_nvrtc
def test_a_slot_of_a_swizzled_ring_is_boxes_of_its_swizzle(tma_copy):
    _, after = _before_after(swizzled_ring())
    assert after.count(BULK + "\n") == 1, after
    art = build(swizzled_ring())
    assert "tl::tma_load_2d((ks + ((((i) & 1) * 4096))) + 0, &tl_tmap_" in art.source, art.source
    assert [(t["box"], t.get("swizzle")) for t in art.meta["kernels"][0]["tmaps"]] == [([64, 64], None)]
