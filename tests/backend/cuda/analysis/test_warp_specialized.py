"""Hand-written warp specialization: tile ops inside `if tx < 128:` branches run on that
range of threads, mbarriers are real, `T.set_max_nreg` reallocates registers.
Compile-only checks here; test_run_gpu_warp_specialized.py runs the kernels."""
import re

import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import build, sass_ops
from tests.backend.cuda.kernels_ws import ws_gemm, ws_cp_async_sum


@needs_nvrtc
def test_ws_gemm_sm90a_source_and_sass():
    art = build(ws_gemm(256, 256, 256))
    src = art.source
    # inside the ranges no barrier of the whole block (the producer's copies write the same
    # elements from the same threads every iteration: no barrier of its own either,
    # plan/sync.py); ranges that need one get a named barrier of their threads
    assert src.count("__syncthreads()") == 2 and "bar.sync" not in src
    assert re.search(r"bar\.sync \d+, 128;", build(ws_cp_async_sum(4096)).source)
    assert "tl::mbar_wait(&" in src and "tl::mbar_arrive(&" in src
    assert "tl::set_max_nreg<232, true>()" in src and "tl::set_max_nreg<40, false>()" in src
    assert "__launch_bounds__(384, 1)" in src
    # the producer range counts its threads from 0
    assert "const int tl_tid = (int)threadIdx.x - 256;" in src
    ops = sass_ops(art)
    assert ops["HGMMA"] > 0 and ops["SYNCS"] > 0 and ops["USETMAXREG"] == 2
    # (the 40-register producer spills the addresses of its 24 hoisted 16-byte copies;
    # a TMA producer would need a handful of registers)


@needs_nvrtc
def test_ws_gemm_sm80_uses_mma_sync():
    art = build(ws_gemm(256, 256, 256), arch="sm_80")
    ops = sass_ops(art)
    assert ops["HMMA"] > 0 and ops["USETMAXREG"] == 0


@needs_nvrtc
def test_cp_async_mbarrier_arrive():
    art = build(ws_cp_async_sum(256))
    assert "tl::cp_async_mbar_arrive<true>(&" in art.source
    # copies complete on the barrier, not by waiting right after each one
    assert "tl::cp_async_now" not in art.source
    assert sass_ops(art)["LDGSTS"] > 0


def test_barrier_arrive_needs_a_barrier():
    with pytest.raises(tilelang.TileLangError, match="barrier from T.alloc_barrier") as e:
        @T.prim_func
        def k(A: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=32):
                s = T.alloc_shared((16,), "float32")
                T.barrier_arrive(s)
    assert "test_warp_specialized.py" in str(e.value)


def test_cpu_refuses_ranges_handing_data_over():
    with pytest.raises(tilelang.TileLangError, match="indexes threads explicitly"):
        tilelang.compile(ws_gemm(128, 128, 128), target="cpu")


def test_block_level_mbarrier_calls_run_on_cpu():
    import numpy as np

    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            s = T.alloc_shared((64,), "float32")
            bar = T.alloc_barrier(64)
            T.tma_copy(A, s, barrier=bar)
            T.barrier_arrive(bar)
            T.barrier_wait(bar, 0)
            for i in T.Parallel(64):
                B[i] = s[i] * 2
    a = np.arange(64, dtype=np.float32)
    b = np.zeros(64, np.float32)
    tilelang.compile(k, target="cpu")(a, b)
    np.testing.assert_allclose(b, 2 * a)


@needs_nvrtc
def test_fragment_shared_by_two_ranges_lives_in_shared_memory():
    """An accumulator the whole block clears and copies out but one range computes:
    registers belong to threads, so it stays in shared memory and stays correct."""
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=256):
            tx = T.get_thread_binding()
            a = T.alloc_shared((64, 64), "float16")
            b = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.clear(c)
            if tx < 128:
                T.gemm(a, b, c)
            T.copy(c, C)
    from tilelang.backend.cuda.plan.kernel import plan_kernel
    from tilelang.ir import stmt as S
    from tilelang.ir.visitor import walk
    launches = []
    walk(k.body, lambda n: launches.append(n) if isinstance(n, S.KernelLaunch) else None)
    plan = plan_kernel(launches[0], "sm_90a")
    kinds = {b.name: p.kind for b in _decls(launches[0]) for p in [plan.placements[id(b)]]}
    assert kinds["c"] == "smem"
    build(k)   # and it compiles


def _decls(launch):
    from tilelang.ir import stmt as S
    from tilelang.ir.visitor import walk
    out = []
    walk(launch.body, lambda n: out.append(n.buffer) if isinstance(n, S.DeclBuffer) else None)
    return out


def test_set_max_nreg_checks_its_count():
    with pytest.raises(tilelang.TileLangError, match="multiple of 8"):
        @T.prim_func
        def k(A: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=128):
                T.set_max_nreg(100, 1)
        tilelang.compile(k, target="cpu")


@needs_nvrtc
def test_ws_scopes_drop_their_hand_offs():
    """`T.ws(...)` scopes run with all threads in program order here: the mbarrier
    hand-offs written for split warp groups would count every thread twice."""
    @T.prim_func
    def k(A: T.Tensor((128, 64), "float16"), C: T.Tensor((128, 64), "float16")):
        with T.Kernel(1, threads=256):
            s = T.alloc_shared((128, 64), "float16")
            bars = T.alloc_barrier([128, 128])
            with T.ws(1):
                T.mbarrier_wait_parity(bars[1], 1)
                T.copy(A, s)
                T.mbarrier_arrive(bars[0])
            with T.ws(0):
                T.mbarrier_wait_parity(bars[0], 0)
                T.copy(s, C)
                T.set_max_nreg(240, 1)
    src = build(k).source
    assert "mbar_wait" not in src and "mbar_arrive" not in src and "tl::set_max_nreg<" not in src


@needs_nvrtc
def test_scalar_only_fragment_is_per_thread():
    """A fragment that only scalar code touches (no T.Parallel, no tile op) is each
    thread's own copy, as a fully replicated fragment: a producer range's prefetched
    indices differ per thread."""
    @T.prim_func
    def k(Idx: T.Tensor((256,), "int32"), Out: T.Tensor((256,), "int32")):
        with T.Kernel(1, threads=256):
            tx = T.get_thread_binding()
            pre = T.alloc_fragment([4], "int32")
            if tx >= 128:
                for r in T.serial(4):
                    pre[r] = Idx[(tx - 128) + r * 32 % 128]
                Out[tx] = pre[0] + pre[3]
    src = build(k).source
    assert re.search(r"\bint pre\[4\];", src)


@needs_nvrtc
def test_tma_copy_with_barrier_is_a_bulk_copy(monkeypatch):
    """T.tma_copy(..., barrier=full[s]) of a wgmma operand: one thread announces the bytes
    and issues the bulk copies; the slots of the ring share one tensor map per operand."""
    from tests.backend.cuda.kernels_ws import ws_gemm_tma
    monkeypatch.setenv("TILELANG_CUDA_TMA_COPY", "1")
    art = build(ws_gemm_tma(1024, 1024, 1024))
    assert "tl::mbar_expect_tx(&full[0], 16384);" in art.source
    assert len(art.meta["kernels"][0]["tmaps"]) == 2
    ops = sass_ops(art)
    assert ops["UTMALDG"] > 0 and ops["HGMMA"] > 0 and ops["LDL"] == 0 and ops["STL"] == 0
    # without TMA (sm_80) the producer copies the tiles itself
    assert sass_ops(build(ws_gemm_tma(1024, 1024, 1024, stages=2), arch="sm_80"))["UTMALDG"] == 0


@needs_nvrtc
def test_tma_copy_by_default_copies_with_the_range(monkeypatch):
    from tests.backend.cuda.kernels_ws import ws_gemm_tma
    monkeypatch.delenv("TILELANG_CUDA_TMA_COPY", raising=False)
    art = build(ws_gemm_tma(1024, 1024, 1024))
    assert "tma_load_2d" not in art.source and sass_ops(art)["HGMMA"] > 0


@pytest.mark.parametrize("cond,lo,hi", [(lambda tx, wg: wg == 1, 128, 256), (lambda tx, wg: tx // 32 < 4, 0, 128),
                                        (lambda tx, wg: tx >= 256, 256, 384),
                                        (lambda tx, wg: (wg >= 1) & (wg < 2), 128, 256),
                                        (lambda tx, wg: tx == 5, None, None)])
def test_ranges_from_warp_group_conditions(cond, lo, hi):
    """`T.get_warp_group_idx() == 1`, `tx // 32 < 4`: ranges like `tx` comparisons;
    a single thread is not a range (not whole warps)."""
    from tilelang.backend.cuda.analysis.thread_ranges import find_regions
    from tilelang.ir import stmt as S
    from tilelang.ir.visitor import walk

    @T.prim_func
    def k(A: T.Tensor((384,), "float32")):
        with T.Kernel(1, threads=384):
            tx = T.get_thread_binding()
            wg = T.get_warp_group_idx()
            if cond(tx, wg):
                A[tx] = 1.0
    launches, ifs = [], []
    walk(k.body, lambda n: launches.append(n) if isinstance(n, S.KernelLaunch) else None)
    walk(k.body, lambda n: ifs.append(n) if isinstance(n, S.IfThenElse) else None)
    regions = find_regions(launches[0])
    got = regions.branches.get(id(ifs[0]))
    if lo is None:
        assert got is None
    else:
        assert (got[0].lo, got[0].hi) == (lo, hi)
