"""A T.Pipelined loop whose global -> shared copy converts its elements (a bf16 tensor into a
float32 tile: DeepSeek mHC's fused pre kernel) is pipelined (plan/pipeline.py
`converting_copy`; before, the loop ran in place): no cp.async converts, so the copy is the
threads' own vector loads, conversions and stores, staged through registers
(plan/cp_async_pipeline.py `_staged`): the loads of iteration k + s - 1 are issued in
iteration k - 1 after the last reader of its slot, stored into their slot in iteration k,
so their latency overlaps a whole iteration. Only in a kernel that runs a gemm
(`staged_converting_copies`): a streaming kernel keeps the copy in place, its other resident
blocks hide the loads and the staged registers would cost it those blocks.
TILELANG_CUDA_CONVERTING_COPY_PIPELINE=0 is the A/B switch (the loop in place)."""
import pytest

import tilelang.language as T
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build, sass_ops
from tests.backend.cuda.plan.test_cp_async_pipeline import _before_after, _schedule


def widen(n=4, hc=4, h=2048, blk=512, stages=2, threads=128, gemm=True):
    """The loop of mHC's fused pre kernel; `gemm`: the kernel also runs a gemm after it
    (c[i] = a @ a)."""
    @T.prim_func
    def k(res: T.Tensor((n, hc, h), T.bfloat16), w: T.Tensor((hc,), T.float32), out: T.Tensor((n, h), T.float32),
          a: T.Tensor((64, 64), T.float16), c: T.Tensor((n, 64, 64), T.float32)):
        with T.Kernel(n, threads=threads) as i:
            for i0 in T.Pipelined(h // blk, num_stages=stages):
                xs = T.alloc_shared((hc, blk), T.float32)
                xl = T.alloc_fragment((hc, blk), T.float32)
                T.copy(res[i, 0, i0 * blk], xs)
                T.copy(xs, xl)
                ol = T.alloc_fragment(blk, T.float32)
                T.clear(ol)
                for r in T.serial(hc):
                    for j in T.Parallel(blk):
                        ol[j] += w[r] * xl[r, j]
                T.copy(ol, out[i, i0 * blk])
            if gemm:
                a_s = T.alloc_shared((64, 64), T.float16)
                acc = T.alloc_fragment((64, 64), T.float32)
                T.copy(a, a_s)
                T.gemm(a_s, a_s, acc, clear_accum=True)
                T.copy(acc, c[i, 0, 0])
    return k


def test_the_converting_copy_is_staged_through_registers():
    before, after = _before_after(widen(), arch="sm_90a")
    assert "for i0 in T.Pipelined(4, num_stages=2):" in before
    body = [ln for ln in _schedule(after) if "alloc" not in ln]
    assert body == [
        "T.sync_threads()  # inserted, after a fence.proxy.async: xs may still be read before the pipeline's "
        "prologue",
        "for p in T.serial(1):",
        "    if p < 4:",
        "        i0 = p",
        "        with T.stage_slot(xs, slot=p, stages=2):",
        "            for i0_1, i1 in T.Parallel(4, 512):  # copy -> vector x4 (16 B)",
        "    T.evaluate(T.ptx_commit_group())",
        "with T.stage_slot(xs, slot=T.truncmod(T.min(1, 3), 2), stages=2):",
        "    for i0_1, i1 in T.Parallel(4, 512):  # copy -> vector x4 (16 B), loads into registers",
        "for i0_2 in T.serial(4):",
        "    T.evaluate(T.ptx_wait_group(0))",
        "    T.sync_threads()  # inserted, after a fence.proxy.async: this iteration's copies into xs landed; "
        "the slot the previous one read is free",
        "    with T.stage_slot(xs, slot=T.truncmod(i0_2, 2), stages=2):",
        "        for i0_3, i1_1 in T.Parallel(4, 512):  # copy -> registers x4 (16 B)",
        "    if i0_2 + 1 < 4:",
        "        i0_next = i0_2 + 1",
        "        with T.stage_slot(xs, slot=T.truncmod(i0_next, 2), stages=2):",
        "            for i0_1, i1 in T.Parallel(4, 512):  # copy -> vector x4 (16 B), stores from registers",
        "    with T.stage_slot(xs, slot=T.truncmod(T.min(i0_2 + 2, 3), 2), stages=2):",
        "        for i0_1, i1 in T.Parallel(4, 512):  # copy -> vector x4 (16 B), loads into registers",
        "    with T.stage_slot(xs, slot=T.truncmod(i0_2, 2), stages=2):",
        "        for i0_4 in T.Parallel(512):",
        "        for r in T.serial(4):",
        "            for j in T.Parallel(512):",
        "        for i0_5 in T.Parallel(512):  # copy -> registers x4 (16 B)",
        "    T.evaluate(T.ptx_commit_group())",
        "T.evaluate(T.ptx_wait_group(0))"]


def test_a_streaming_kernel_keeps_the_converting_copy_in_place():
    _, after = _before_after(widen(gemm=False), arch="sm_90a")
    assert "T.stage_slot" not in after and "ptx_commit_group" not in after


def test_a_loop_the_prologue_covers_is_not_staged():
    _, after = _before_after(widen(h=1024), arch="sm_90a")   # 2 iterations, 2 stages: nothing refilled
    assert "T.stage_slot" in after and "loads into registers" not in after


def test_switch_leaves_the_loop_in_place(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_CONVERTING_COPY_PIPELINE", "0")
    _, after = _before_after(widen(), arch="sm_90a")
    assert "T.stage_slot" not in after and "ptx_commit_group" not in after


def test_source_keeps_the_loads_in_one_register_array():
    src = build(widen(stages=3, h=4096)).source
    assert src.count("uint2 tl_stage[4];") == 1   # declared once, before the loop (512 x 4 / 4 / 128 threads)
    loop = src[src.index("for (int i0_3 = 0; i0_3 < 8; ++i0_3)"):]
    assert "= tl_stage[tl_j" in loop and "min((i0_3 + 3), 7)" in loop   # stored, reloaded 3 ahead (clamped)


@needs_sass
def test_loads_stay_in_registers_without_spills():
    ops = sass_ops(build(widen()))
    assert ops["LDL"] == 0 and ops["STL"] == 0, ops
    assert ops["LDG"] >= 3 * 4 and ops["STS"] >= 3 * 4, ops   # prologue, first load half, loop


@pytest.mark.gpu
@pytest.mark.parametrize("h,blk,stages", [(2048, 512, 2), (4096, 512, 3), (1536, 512, 2), (1024, 512, 2),
                                          (2560, 256, 4)])
@pytest.mark.parametrize("threads", [128, 64])
def test_widen_matches_torch(h, blk, stages, threads):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    from tilelang.backend.registry import get_backend, parse_target
    torch.manual_seed(0)
    n, hc = 6, 4
    res = torch.randn(n, hc, h, device="cuda").bfloat16()
    w = torch.randn(hc, device="cuda")
    out = torch.full((n, h), float("nan"), device="cuda")
    a = torch.randn(64, 64, device="cuda").half()
    c = torch.full((n, 64, 64), float("nan"), device="cuda")
    be = get_backend("cuda")
    be.load(be.build(widen(n=n, hc=hc, h=h, blk=blk, stages=stages, threads=threads),
                     parse_target("cuda")))([res, w, out, a, c], (), ())
    torch.cuda.synchronize()
    torch.testing.assert_close(out, (res.float() * w.view(1, hc, 1)).sum(1), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(c, (a.float() @ a.float()).expand(n, 64, 64), rtol=1e-3, atol=1e-3)


@pytest.mark.gpu
def test_streaming_widen_in_place_matches_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    from tilelang.backend.registry import get_backend, parse_target
    torch.manual_seed(0)
    n, hc, h = 6, 4, 2560
    res = torch.randn(n, hc, h, device="cuda").bfloat16()
    w = torch.randn(hc, device="cuda")
    out = torch.full((n, h), float("nan"), device="cuda")
    a, c = torch.zeros(64, 64, device="cuda").half(), torch.zeros(n, 64, 64, device="cuda")
    be = get_backend("cuda")
    be.load(be.build(widen(n=n, hc=hc, h=h, blk=256, stages=2, gemm=False), parse_target("cuda")))([res, w, out, a, c],
                                                                                                   (), ())
    torch.cuda.synchronize()
    torch.testing.assert_close(out, (res.float() * w.view(1, hc, 1)).sum(1), rtol=1e-5, atol=1e-5)
