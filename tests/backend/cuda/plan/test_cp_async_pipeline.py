"""plan/cp_async_pipeline.py: a T.Pipelined loop whose copies run as cp.async becomes its
schedule in the IR (prologue loop, stage slots, commit and wait groups, barriers), checked
on the printed IR before and after the pass; no GPU or NVRTC needed."""
import pytest

import tilelang.language as T
from tilelang.backend.registry import parse_target
from tilelang.backend.cuda import pipeline as P
from tilelang.backend.cuda.plan.cp_async_pipeline import pipeline_cp_async
from tilelang.ir.printer import func_str
from tilelang.transform.pass_manager import PassContext, run_passes
from tests.backend.cuda.plan.test_pipeline_guarded import blocksparse


def gemm(K=256, bK=32, dynamic=False, **kw):
    M = N = 256
    bM = bN = 128
    Kd = T.dynamic("K") if dynamic else K

    @T.prim_func
    def main(A: T.Tensor((M, Kd), "float16"), B: T.Tensor((Kd, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            As = T.alloc_shared((bM, bK), "float16")
            Bs = T.alloc_shared((bK, bN), "float16")
            Cl = T.alloc_fragment((bM, bN), "float32")
            T.clear(Cl)
            for k in T.Pipelined(T.ceildiv(Kd, bK), **kw):
                T.copy(A[by * bM, k * bK], As)
                T.copy(B[k * bK, bx * bN], Bs)
                T.gemm(As, Bs, Cl)
            T.copy(Cl, C[by * bM, bx * bN])
    return main


def _before_after(func, arch="sm_80", refill_wait=False, monkeypatch=None):
    if refill_wait:   # the switch is read once per compile, from the environment
        monkeypatch.setenv("TILELANG_CUDA_CP_ASYNC_REFILL", "wait")
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS})
    ctx.target = parse_target({"kind": "cuda", "arch": arch})
    k = P.PASSES.index(pipeline_cp_async)
    before = run_passes(func, P.PASSES[:k], ctx)
    text = func_str(before)
    return text, func_str(pipeline_cp_async(before, ctx))


def _schedule(text):
    """The statements from the barrier before the prologue to the last wait, dedented,
    without the copies' element statements."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if "before the pipeline's prologue" in ln)
    end = max(i for i, ln in enumerate(lines) if "T.ptx_wait_group(0)" in ln)
    ind = len(lines[start]) - len(lines[start].lstrip())
    return [ln[ind:] for ln in lines[start:end + 1] if "] = " not in ln]


def test_three_stages_become_a_prologue_a_ring_and_groups():
    before, after = _before_after(gemm(num_stages=3))
    assert "for k in T.Pipelined(8, num_stages=3):" in before and "T.stage_slot" not in before
    assert "T.Pipelined" not in after.split("# pipelines:")[1]
    assert _schedule(after) == [
        "T.sync_threads()  # inserted: As, Bs may still be read before the pipeline's prologue",
        "for p in T.serial(3):",
        "    if p < 8:",
        "        k = p",
        "        with T.stage_slot(As, Bs, slot=p, stages=3):",
        "            for i0_1, i1_1 in T.Parallel(128, 32):  # copy -> cp.async x8 (16 B)",
        "            for i0_2, i1_2 in T.Parallel(32, 128):  # copy -> cp.async x8 (16 B)",
        "    T.evaluate(T.ptx_commit_group())",
        "for k_1 in T.serial(8):",
        "    T.evaluate(T.ptx_wait_group(2))",
        "    T.sync_threads()  # inserted: this iteration's copies into As, Bs landed",
        "    with T.stage_slot(As, Bs, slot=T.truncmod(k_1, 3), stages=3):",
        "        T.gemm(As, Bs, Cl)",
        # the slot is refilled once every thread is done with it, before the next wait
        "    if k_1 + 3 < 8:",
        "        T.sync_threads()  # inserted: every thread is done with this iteration's slot of As, Bs: it is "
        "refilled",
        "        k_next = k_1 + 3",
        "        with T.stage_slot(As, Bs, slot=T.truncmod(k_next, 3), stages=3):",
        "            for i0_1, i1_1 in T.Parallel(128, 32):  # copy -> cp.async x8 (16 B)",
        "            for i0_2, i1_2 in T.Parallel(32, 128):  # copy -> cp.async x8 (16 B)",
        "    T.evaluate(T.ptx_commit_group())",
        "T.evaluate(T.ptx_wait_group(0))"]
    # the copies issued ahead read the iteration they fill
    assert "As[i0_1, i1_1] = A[by * 128 + i0_1, k_next * 32 + i1_1]" in after
    assert "As[i0_1, i1_1] = A[by * 128 + i0_1, k * 32 + i1_1]" in after


def test_refill_after_the_wait_on_request(monkeypatch):
    # TILELANG_CUDA_CP_ASYNC_REFILL=wait: the slot the previous iteration read is refilled after
    # the wait for this iteration's copies, under the one barrier of the iteration
    _, after = _before_after(gemm(num_stages=3), refill_wait=True, monkeypatch=monkeypatch)
    assert _schedule(after) == [
        "T.sync_threads()  # inserted: As, Bs may still be read before the pipeline's prologue",
        "for p in T.serial(2):",
        "    if p < 8:",
        "        k = p",
        "        with T.stage_slot(As, Bs, slot=p, stages=3):",
        "            for i0_1, i1_1 in T.Parallel(128, 32):  # copy -> cp.async x8 (16 B)",
        "            for i0_2, i1_2 in T.Parallel(32, 128):  # copy -> cp.async x8 (16 B)",
        "    T.evaluate(T.ptx_commit_group())",
        "for k_1 in T.serial(8):",
        "    T.evaluate(T.ptx_wait_group(1))",
        "    T.sync_threads()  # inserted: this iteration's copies into As, Bs landed; the slot the previous one "
        "read is free",
        "    if k_1 + 2 < 8:",
        "        k_next = k_1 + 2",
        "        with T.stage_slot(As, Bs, slot=T.truncmod(k_next, 3), stages=3):",
        "            for i0_1, i1_1 in T.Parallel(128, 32):  # copy -> cp.async x8 (16 B)",
        "            for i0_2, i1_2 in T.Parallel(32, 128):  # copy -> cp.async x8 (16 B)",
        "    T.evaluate(T.ptx_commit_group())",
        "    with T.stage_slot(As, Bs, slot=T.truncmod(k_1, 3), stages=3):",
        "        T.gemm(As, Bs, Cl)",
        "T.evaluate(T.ptx_wait_group(0))"]


@pytest.mark.parametrize("stages", [2, 4])
def test_the_depth_sets_the_prologue_the_wait_and_the_ring(stages):
    sched = _schedule(_before_after(gemm(num_stages=stages))[1])
    assert sched[1] == f"for p in T.serial({stages}):"
    assert f"    T.evaluate(T.ptx_wait_group({stages - 1}))" in sched
    assert f"    if k_1 + {stages} < 8:" in sched
    assert f"    with T.stage_slot(As, Bs, slot=T.truncmod(k_1, {stages}), stages={stages}):" in sched


def test_a_guarded_body_guards_each_iteration_by_its_own_condition():
    sched = _schedule(_before_after(blocksparse(256, 256, 256, stages=3))[1])
    at = {ln.strip(): i for i, ln in enumerate(sched)}
    # the prologue's and the refill's copies under the condition of the iteration they fill
    assert at["with T.stage_slot(A_s, B_s, slot=p, stages=3):"] < at["if Mask[by, bx, k]:"]
    assert at["k_next = k_1 + 3"] < at["if Mask[by, bx, k_next]:"]
    # every iteration closes its group, taken or not: the commits are outside the conditions
    assert [ln for ln in sched if "ptx_commit_group" in ln] == ["    T.evaluate(T.ptx_commit_group())"] * 2
    # the gemm of iteration k under its condition, in its slot
    rest = sched[at["with T.stage_slot(A_s, B_s, slot=T.truncmod(k_1, 3), stages=3):"]:]
    assert [ln.strip() for ln in rest[1:3]] == ["if Mask[by, bx, k_1]:", "T.gemm(A_s, B_s, C_l)"]
    # its slot refilled whether it ran or not (the refill's barrier is block-uniform)
    assert rest[3:5] == ["    if k_1 + 3 < 8:", "        T.sync_threads()  # inserted: every thread is done with "
                                                 "this iteration's slot of A_s, B_s: it is refilled"]


def test_a_manual_schedule_issues_only_its_early_stage_copies_ahead():
    # A in the last stage (stage=[1, 0, 1]): loaded in its own iteration, B issued ahead
    before, after = _before_after(gemm(order=[1, 0, 2], stage=[1, 0, 1]))
    sched = _schedule(after)
    assert "for k in T.Pipelined(8, num_stages=0, order=[1, 0, 2], stage=[1, 0, 1]):" in before
    assert sched[1:5] == ["for p in T.serial(2):", "    if p < 8:", "        k = p",
                          "        with T.stage_slot(Bs, slot=p, stages=2):"]
    rest = sched[sched.index("    with T.stage_slot(Bs, slot=T.truncmod(k_1, 2), stages=2):"):]
    assert [ln.strip() for ln in rest[1:4]] == [
        "for i0_2, i1_2 in T.Parallel(128, 32):  # copy -> vector x8 (16 B)",
        "T.sync_threads()  # inserted: As", "T.gemm(As, Bs, Cl)"]
    assert rest[4] == "    if k_1 + 2 < 8:" and rest[-1] == "T.evaluate(T.ptx_wait_group(0))"


def test_fewer_iterations_than_stages_leave_empty_groups():
    # no iteration refills a slot: the waiting schedule (the early refill would gain nothing)
    sched = _schedule(_before_after(gemm(K=64, num_stages=4))[1])
    assert sched[1:3] == ["for p in T.serial(3):", "    if p < 2:"]   # iterations 0, 1; an empty group
    assert "for k_1 in T.serial(2):" in sched and "    if k_1 + 3 < 2:" in sched


def test_a_dynamic_trip_count_bounds_the_prologue_and_the_refill():
    sched = _schedule(_before_after(gemm(dynamic=True, num_stages=3))[1])
    assert sched[2] == "    if p < (K + 31) // 32:"
    assert "for k_1 in T.serial((K + 31) // 32):" in sched and "    if k_1 + 3 < (K + 31) // 32:" in sched


def test_a_pipelined_loop_inside_another_loop_is_replaced_there():
    M = N = K = 256

    @T.prim_func
    def main(A: T.Tensor((2, M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((2, M, N), "float16")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            As = T.alloc_shared((128, 32), "float16")
            Bs = T.alloc_shared((32, 128), "float16")
            Cl = T.alloc_fragment((128, 128), "float32")
            for r in T.serial(2):
                for k in T.Pipelined(8, num_stages=2):
                    T.copy(A[r, by * 128, k * 32], As)
                    T.copy(B[k * 32, bx * 128], Bs)
                    T.gemm(As, Bs, Cl)
            T.copy(Cl, C[0, by * 128, bx * 128])
    text = _before_after(main)[1]
    assert _schedule(text)[1:3] == ["for p in T.serial(2):", "    if p < 8:"]
    at = text.index("for r in T.serial(2):")
    assert at < text.index("for p in T.serial(2):") < text.index("for k_1 in T.serial(8):")


def test_the_tma_ring_and_unpipelined_loops_are_left_alone():
    before, after = _before_after(gemm(num_stages=3), arch="sm_90a")   # the TMA ring: ops/tma_pipeline.py
    assert after == before and "T.Pipelined(8, num_stages=3)" in after
    before, after = _before_after(gemm(num_stages=1))
    assert after == before


def test_the_printed_cuda_follows_the_schedule():
    # emit/ prints the nodes in order: no schedule of its own for these loops
    pytest.importorskip("cuda.bindings")
    import tilelang
    src = tilelang.compile(gemm(num_stages=3), target="cuda -arch=sm_80").get_kernel_source()
    lines = [ln.strip() for ln in src[src.index("for (int p = 0; p < 3; ++p)"):].splitlines()]
    order = [ln for ln in lines if ln.startswith(("tl::cp_async_commit", "tl::cp_async_wait", "__syncthreads",
                                                  "for (int k", "half* As_slot", "tl::gemm_ss<", "if (((k_1"))]
    assert order == ["half* As_slot = As + (p) * 5120;", "tl::cp_async_commit();",
                     "for (int k_1 = 0; k_1 < 8; ++k_1) {", "tl::cp_async_wait<2>();",
                     "__syncthreads();", "half* As_slot_1 = As + (((k_1) % (3))) * 5120;", order[6],
                     "if (((k_1 + 3) < 8)) {", "__syncthreads();", "half* As_slot_2 = As + (((k_next) % (3))) * 5120;",
                     "tl::cp_async_commit();", "tl::cp_async_wait<0>();"]
    assert order[6].startswith("tl::gemm_ss<")


def test_the_lower_trace_shows_the_schedule(tmp_path, monkeypatch):
    pytest.importorskip("cuda.bindings")
    import os
    import tilelang
    monkeypatch.setenv("TL_LOWER_TRACE", str(tmp_path))
    tilelang.compile(gemm(num_stages=3), target="cuda -arch=sm_80")
    page = [p for p in sorted(os.listdir(tmp_path)) if p.endswith("_pipeline_cp_async.py")]
    assert len(page) == 1
    text = (tmp_path / page[0]).read_text()
    assert "with T.stage_slot(As, Bs, slot=T.truncmod(k_1, 3), stages=3):" in text
    assert "T.evaluate(T.ptx_wait_group(2))" in text


# On the H200 the TMA ring is the default: without it (tl.disable_tma_lower) two stages and
# guarded bodies run on this pass's cp.async schedule (deeper plain gemms keep a wgmma in flight).
NO_TMA = {"tl.disable_tma_lower": True}


@pytest.mark.gpu
@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("K,dynamic", [(256, False), (32, False), (96, True)])
def test_cp_async_gemm_matches_torch_on_the_gpu(K, dynamic, stages):
    torch = pytest.importorskip("torch")
    import tilelang
    kern = tilelang.compile(gemm(K=K, dynamic=dynamic, num_stages=stages), target="cuda", pass_configs=NO_TMA)
    assert "tl::cp_async_wait<0>();" in kern.get_kernel_source()
    a = torch.randn(256, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, 256, device="cuda", dtype=torch.float16)
    c = torch.full((256, 256), float("nan"), device="cuda", dtype=torch.float16)
    kern(a, b, c)
    torch.cuda.synchronize()
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=1e-2, atol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("stages", [2, 3])
def test_cp_async_blocksparse_gemm_matches_torch_on_the_gpu(stages):
    torch = pytest.importorskip("torch")
    import tilelang
    M = N = K = 256
    kern = tilelang.compile(blocksparse(M, N, K, stages=stages), out_idx=[3], target="cuda", pass_configs=NO_TMA)
    assert "tl::cp_async_wait<0>();" in kern.get_kernel_source()
    torch.manual_seed(stages)
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    mask = torch.rand(2, 2, 8, device="cuda") < 0.5
    mask[0, 0, :] = False
    mask[1, 1, :2] = False
    c = kern(a, b, mask)
    ref = torch.zeros(M, N, device="cuda")
    for i in range(2):
        for j in range(2):
            for k in range(8):
                if mask[i, j, k]:
                    ref[i*128:(i+1)*128, j*128:(j+1)*128] += (a[i*128:(i+1)*128, k*32:(k+1)*32].float()
                                                              @ b[k*32:(k+1)*32, j*128:(j+1)*128].float())
    torch.testing.assert_close(c.float(), ref, rtol=1e-2, atol=1e-2)
