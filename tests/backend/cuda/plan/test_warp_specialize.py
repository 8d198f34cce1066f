"""plan/warp_specialize.py: a T.Pipelined GEMM loop fed by TMA ring loads gets a producer
warpgroup on sm_90 (the decision printed in the kernel plan after the pass), or the plan
says why not; the generated kernel launches 128 more threads, splits the registers with
setmaxnreg when there are two consumer warpgroups, and its consumers never wait for the
whole block. CPU: the pass's IR before / after, the fallbacks, SASS of the compiled kernel.
GPU: GEMMs, block-sparse GEMMs and a convolution against torch."""
import pytest

import tilelang
import tilelang.language as T
from tilelang.backend.registry import parse_target
from tilelang.backend.cuda import pipeline as P
from tilelang.backend.cuda.plan.warp_specialize import plan_warp_specialize, register_split
from tilelang.ir.printer import func_str
from tilelang.transform.pass_manager import PassContext, run_passes
from tests.backend.cuda import kernels as KS
from tests.backend.cuda.conftest import needs_nvrtc, needs_sass
from tests.backend.cuda.helpers import build, sass_ops

WS = "# warp specialization: "


def _before_after(func, arch="sm_90a", config=None):
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS, **(config or {})})
    ctx.target = parse_target({"kind": "cuda", "arch": arch})
    k = P.PASSES.index(plan_warp_specialize)
    before = run_passes(func, P.PASSES[:k], ctx)
    text = func_str(before)
    return text, func_str(plan_warp_specialize(before, ctx))


def _decision(text):
    return [ln.strip()[len(WS):] for ln in text.splitlines() if ln.strip().startswith(WS)]


def blocksparse(M=1024, N=1024, K=1024, bM=128, bN=128, bK=32, stages=2, threads=128, dtype="float16"):
    """The published blocksparse_gemm example's kernel: rasterized blocks, a masked body,
    the tile stored through shared memory."""
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             Mask: T.Tensor((M // bM, N // bN, K // bK), "bool"), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bM, bK), dtype)
            B_s = T.alloc_shared((bK, bN), dtype)
            C_l = T.alloc_fragment((bM, bN), "float32")
            C_s = T.alloc_shared((bM, bN), dtype)
            T.use_swizzle(panel_size=10)
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                if Mask[by, bx, k]:
                    T.copy(A[by * bM, k * bK], A_s)
                    T.copy(B[k * bK, bx * bN], B_s)
                    T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C_s)
            T.copy(C_s, C[by * bM, bx * bN])
    return main


def gemm_variant(kind, M=512, N=512, K=512, bm=128, bn=128, bk=32, threads=128):
    """GEMMs the pass must leave alone: `body` (the loop body scales its accumulator),
    `nested` (the pipelined loop inside another loop), `cp_async` (a copy with TMA off),
    `user_regs` (T.set_max_nreg written by the user)."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            As = T.alloc_shared((bm, bk), "float16")
            Bs = T.alloc_shared((bk, bn), "float16")
            Cf = T.alloc_fragment((bm, bn), "float32")
            T.clear(Cf)
            if kind == "user_regs":   # the kernel manages warpgroup registers itself
                T.set_max_nreg(240, 1)
            if kind == "nested":
                for r in T.serial(2):
                    for k in T.Pipelined(T.ceildiv(K, bk), num_stages=3):
                        T.copy(A[by * bm, k * bk], As)
                        T.copy(B[k * bk, bx * bn], Bs)
                        T.gemm(As, Bs, Cf)
            else:
                for k in T.Pipelined(T.ceildiv(K, bk), num_stages=3):
                    T.copy(A[by * bm, k * bk], As, disable_tma=kind == "cp_async")
                    T.copy(B[k * bk, bx * bn], Bs)
                    T.gemm(As, Bs, Cf)
                    if kind == "body":
                        for i, j in T.Parallel(bm, bn):
                            Cf[i, j] = Cf[i, j] * 0.5
            T.copy(Cf, C[by * bm, bx * bn])
    return main


def test_a_tma_ring_gemm_gets_a_producer_warpgroup():
    before, after = _before_after(KS.gemm(1024, 1024, 1024, bm=128, bn=128, bk=32, threads=128, stages=3))
    assert _decision(before) == []
    assert _decision(after) == [
        "warp-specialized loop over k: 256 threads launched, producer threads 128..255 (one elected thread "
        "issues the TMA loads of 3 slots), consumers 0..127 with named barrier 1, no register split (one consumer "
        "warpgroup); one wgmma group in flight, the previous iteration's slot released"]
    # nothing else of the IR changes: the decision rides on the plan
    assert [ln for ln in after.splitlines() if WS not in ln] == before.splitlines()


def test_two_consumer_warpgroups_split_the_registers():
    _, after = _before_after(KS.gemm(4096, 4096, 4096, bm=128, bn=256, bk=64, threads=256, stages=4))
    (d,) = _decision(after)
    assert "384 threads launched, producer threads 256..383" in d
    assert "registers: producer 24, consumers 240 (setmaxnreg)" in d
    assert [register_split(t) for t in (128, 256, 384, 512)] == [(0, 0), (24, 240), (24, 160), (24, 120)]


def test_a_masked_body_is_skipped_by_both_roles():
    _, after = _before_after(blocksparse(threads=256))
    (d,) = _decision(after)
    assert d.startswith("warp-specialized loop over k: 384 threads launched") and \
        d.endswith("masked iterations skipped by both"), d


@pytest.mark.parametrize("kind,why", [
    ("body", "the pipelined body does more than wgmma gemms into register accumulators"),
    ("nested", "the pipelined loop is nested in another loop or a branch"),
    ("cp_async", "not every copy of the pipelined loop is a TMA ring load"),
])
def test_loops_it_cannot_split_keep_the_ring_and_say_why(kind, why):
    _, after = _before_after(gemm_variant(kind))
    assert _decision(after) == [f"none ({why})"]


def grouped_gemm(M=1024, N=1024, K=1024, groups=8, offset="read"):
    """A copy indexed by a scalar the kernel reads from a tensor before the loop (a grouped
    GEMM's row offset, T.alloc_var; a paged KV cache's loop count is the same): the producer
    warpgroup, printed at the top of the kernel, computes it itself. `offset`: "read" (once,
    from Off), "twice" (then adjusted: stored twice), "written" (Off is written after the loop:
    the producer could read another value)."""
    @T.prim_func
    def main(A: T.Tensor((M * 2, K), "float16"), B: T.Tensor((K, N), "float16"),
             Off: T.Tensor((groups,), "int32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(N // 128, M // 128, threads=128) as (bx, by):
            a = T.alloc_shared((128, 64), "float16")
            b = T.alloc_shared((64, 128), "float16")
            c = T.alloc_fragment((128, 128), "float32")
            off = T.alloc_var("int32")
            off = Off[by % groups]
            if offset == "twice":
                off += Off[0]
            T.clear(c)
            for k in T.Pipelined(K // 64, num_stages=3):
                T.copy(A[off + by * 128, k * 64], a)
                T.copy(B[k * 64, bx * 128], b)
                T.gemm(a, b, c)
            T.copy(c, C[by * 128, bx * 128])
            if offset == "written":
                Off[by % groups] = 0
    return main


def test_the_producer_computes_a_scalar_the_copies_read_itself():
    _, after = _before_after(grouped_gemm())
    decision, = _decision(after)
    assert decision.startswith("warp-specialized loop over k") and \
        decision.endswith("; the producer computes off itself"), decision
    src = build(grouped_gemm(), "sm_90a").source
    producer = src[src.index("the producer warpgroup"):src.index("return;")]
    assert "const int off = Off[" in producer and "tl::tma_load_2d(a" in producer


@pytest.mark.parametrize("offset", ["twice", "written"])
def test_a_scalar_the_producer_cannot_compute_keeps_the_single_role_ring(offset):
    _, after = _before_after(grouped_gemm(offset=offset))
    assert _decision(after) == ["none (the copies' indices read off, which the kernel computes before the loop)"]
    assert "tl::tma_load_2d(a" in build(grouped_gemm(offset=offset), "sm_90a").source   # still on the TMA ring


@pytest.mark.gpu
def test_grouped_gemm_with_the_producer_s_own_offset_matches_torch():
    torch = pytest.importorskip("torch")
    M = N = K = 1024
    kernel = tilelang.compile(grouped_gemm(M, N, K), target="cuda")
    a = torch.randn(2 * M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    off = torch.randint(0, M, (8,), device="cuda", dtype=torch.int32)
    c = torch.empty(M, N, device="cuda", dtype=torch.float32)
    kernel(a, b, off, c)
    rows = (torch.arange(M, device="cuda") // 128 % 8)
    ref = a[off[rows].long() + torch.arange(M, device="cuda")].float() @ b.float()
    torch.testing.assert_close(c, ref, rtol=1e-2, atol=1e-2)


def test_switched_off_by_the_pass_config_and_absent_off_hopper():
    f = KS.gemm(1024, 1024, 1024, stages=3)
    _, after = _before_after(f, config={"tl.disable_warp_specialized": True})
    assert _decision(after) == ["none (switched off (pass config tl.disable_warp_specialized or "
                                "TILELANG_CUDA_WARP_SPECIALIZE=0))"]
    before, after = _before_after(f, arch="sm_80")
    assert after == before and _decision(after) == []


def test_user_warp_specialization_is_left_alone():
    _, after = _before_after(gemm_variant("user_regs"))
    assert _decision(after) == ["none (the kernel specializes its warps (or synchronizes with mbarriers) itself)"]


def _consumer_code(src):
    return src[src.index("return;"):]


@needs_sass
def test_sass_has_setmaxnreg_bulk_copies_wgmma_and_no_spills():
    art = build(KS.gemm(4096, 4096, 4096, bm=128, bn=256, bk=64, threads=256, stages=4))
    k = art.meta["kernels"][0]
    assert k["threads"] == [384, 1, 1]
    src = art.source
    assert "__launch_bounds__(384, 1)" in src and "tl::set_max_nreg<24, false>();" in src and \
        "tl::set_max_nreg<240, true>();" in src
    # after the producer leaves, the consumers only use their named barrier
    assert "__syncthreads" not in _consumer_code(src) and 'bar.sync 1, 256;' in _consumer_code(src)
    ops = sass_ops(art)
    assert ops["USETMAXREG"] == 2 and ops["UTMALDG"] > 0 and ops["HGMMA"] >= 4, ops
    assert ops["STL"] == 0 and ops["LDL"] == 0, ops
    # one consumer warpgroup: no register split; turned off: the single-role ring
    ops = sass_ops(build(KS.gemm(1024, 1024, 1024, threads=128, stages=3)))
    assert ops["USETMAXREG"] == 0 and ops["UTMALDG"] > 0 and ops["STL"] == 0, ops
    off = build(KS.gemm(1024, 1024, 1024, threads=128, stages=3), config={"tl.disable_warp_specialized": True})
    assert off.meta["kernels"][0]["threads"] == [128, 1, 1] and "tl::slot_release_last(" in off.source


@needs_nvrtc
def test_both_roles_skip_the_masked_iterations_and_the_producer_leaves_first():
    art = build(blocksparse(threads=128))
    assert art.meta["kernels"][0]["threads"] == [256, 1, 1]
    src = art.source
    producer, consumer = src[:src.index("return;")], _consumer_code(src)
    assert "if (__shfl_sync(0xffffffffu, tl_tid >> 7, 0) >= 1) {" in producer and "if ((tx == 128)) {" in producer
    # the producer: skip a masked iteration, else wait for the slot, announce the bytes, load
    p = producer[producer.index("for (int k = "):]
    assert p.index("continue;") < p.index("tl::mbar_wait(&ring_empty[") < \
        p.index("tl::mbar_arrive_expect_tx(&ring_full[") < p.index("tl::tma_load_2d(")
    # the consumers: the same skip, wait for the loads, issue, release the previous slot; the
    # epilogue's barriers are theirs
    c = consumer[consumer.index("for (int k_1 = "):]
    wait = c.index("tl::mbar_wait(&ring_full[")
    assert c.index("continue;") < wait < c.index("tl::wgmma_ss_issue<") < c.index("tl::mbar_arrive(&ring_empty[", wait)
    assert "set_max_nreg" not in src and "__syncthreads" not in consumer and "bar.sync 1, 128;" in consumer
    assert "C_l[" not in producer and "tl::tma_store(" in consumer   # user code runs in the consumers only


@needs_nvrtc
def test_a_consumer_waiting_for_its_slot_has_released_the_previous_one(stages=2):
    """With one wgmma group kept in flight the previous slot is released after the next
    group is issued; when the next slot's loads have not arrived yet, the consumers first
    wait for their group and release the previous slot, so that the producer refills it
    during the wait (else each load is issued only once the one before has landed: one
    slot of the ring less in flight, the latency-bound 1024^3 GEMM examples)."""
    src = build(KS.gemm(1024, 1024, 1024, threads=128, stages=stages)).source
    c = _consumer_code(src)
    c = c[c.index("for (int k_1 = "):]
    early = c.index("if (((ring_prev >= 0) && (!__all_sync(4294967295u, tl::mbar_test(&ring_full[ring_stage_1], "
                    "ring_phase_1))))) {")
    body = c[early:c.index("ring_prev = -1;", early) + len("ring_prev = -1;")]
    assert body.index("tl::wgmma_wait<0>();") < body.index("tl::mbar_arrive(&ring_empty[ring_prev]);") < \
        body.index("ring_prev = -1;")
    wait = c.index("tl::mbar_wait(&ring_full[")
    assert early < wait < c.index("tl::wgmma_ss_issue<") < c.index("tl::wgmma_wait<1>();") < \
        c.index("if (((ring_prev >= 0) && (((tx) & 31) == 0))) {") < c.index("ring_prev = ring_stage_1;")


@needs_nvrtc
def test_switches_restore_the_16_row_boxes_and_the_late_release(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_TMA_SLAB_BOX", "0")
    monkeypatch.setenv("TILELANG_CUDA_WS_EARLY_RELEASE", "0")
    monkeypatch.setenv("TILELANG_CUDA_WS_MULTICAST", "0")   # single blocks: B is not split into halves
    src = build(KS.gemm(1024, 1024, 1024, threads=128, stages=2)).source
    assert "tl::mbar_test(" not in src and "tl::tma_load_4d(" not in src, src
    assert src.count("tl::tma_load_2d(As") == 8 and src.count("tl::tma_load_2d(Bs") == 2, src   # A: 16-row runs


# GPU -------------------------------------------------------------------------------------

def _gemm_gpu(M, N, K, dtype, trans_B, stages, threads, bn=128):
    import torch
    func = KS.gemm(M, N, K, bm=128, bn=bn, bk=32 if bn == 128 else 64, threads=threads, stages=stages,
                   dtype=dtype, trans_B=trans_B)
    kern = tilelang.compile(func, target="cuda")
    assert "producer warpgroup" in kern.get_kernel_source()
    td = getattr(torch, dtype)
    torch.manual_seed(0)
    a = torch.randn(M, K, device="cuda", dtype=td)
    b = torch.randn(N, K, device="cuda", dtype=td) if trans_B else torch.randn(K, N, device="cuda", dtype=td)
    c = torch.empty(M, N, device="cuda", dtype=td)
    kern(a, b, c)
    ref = a.float() @ (b.float().T if trans_B else b.float())
    torch.testing.assert_close(c.float(), ref, rtol=1e-2, atol=1e-1)


@pytest.mark.gpu
@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("threads", [128, 256])
@pytest.mark.parametrize("M,N,K", [(1024, 1024, 1024), (1000, 1000, 1000)])
def test_gemm_matches_torch_gpu(M, N, K, stages, threads):
    _gemm_gpu(M, N, K, "float16", False, stages, threads)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("trans_B", [False, True])
@pytest.mark.parametrize("M,N,K", [(1024, 1024, 1024), (1000, 1000, 1000)])
def test_gemm_dtypes_and_nt_match_torch_gpu(M, N, K, dtype, trans_B):
    _gemm_gpu(M, N, K, dtype, trans_B, 3, 256, bn=256)


@pytest.mark.gpu
@pytest.mark.parametrize("stages,threads", [(2, 128), (3, 256), (4, 128)])
def test_blocksparse_gemm_matches_torch_gpu(stages, threads):
    import torch
    M = N = K = 1024
    bM = bN = 128
    bK = 32
    kern = tilelang.compile(blocksparse(M, N, K, stages=stages, threads=threads), out_idx=[3], target="cuda")
    assert "producer warpgroup" in kern.get_kernel_source()
    torch.manual_seed(42)
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    mask = torch.rand(M // bM, N // bN, K // bK, device="cuda") > 0.5
    mask[0, 0, :] = False          # a block with nothing to load
    mask[-1, -1, :3] = False       # the first rounds skipped
    c = kern(a, b, mask)
    full = mask.repeat_interleave(bM, 0).repeat_interleave(bN, 1)   # (M, N, K // bK)
    ref = torch.zeros(M, N, device="cuda", dtype=torch.float32)
    for k in range(K // bK):
        part = a[:, k * bK:(k + 1) * bK].float() @ b[k * bK:(k + 1) * bK, :].float()
        ref += part * full[:, :, k]
    torch.testing.assert_close(c.float(), ref, rtol=1e-2, atol=1e-1)


def convolution(N, C, H, W, F, K, S, D, P, block_M=64, block_N=128, block_K=32, num_stages=3, threads=256):
    """The published convolution example's kernel (im2col + GEMM over NHWC)."""
    KH = KW = K
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1

    @T.prim_func
    def main(data: T.Tensor((N, H, W, C), "float16"), kernel: T.Tensor((KH, KW, C, F), "float16"),
             out: T.Tensor((N, OH, OW, F), "float16")):
        with T.Kernel(T.ceildiv(F, block_N), T.ceildiv(N * OH * OW, block_M), threads=threads) as (bx, by):
            data_shared = T.alloc_shared((block_M, block_K), "float16")
            kernel_shared = T.alloc_shared((block_K, block_N), "float16")
            out_local = T.alloc_fragment((block_M, block_N), "float32")
            out_shared = T.alloc_shared((block_M, block_N), "float16")
            kernel_flat = T.Tensor((KH * KW * C, F), "float16", kernel.data)
            out_flat = T.Tensor((N * OH * OW, F), "float16", out.data)
            T.clear(out_local)
            for k_iter in T.Pipelined(T.ceildiv(KH * KW * C, block_K), num_stages=num_stages):
                T.im2col(data, data_shared, by, k_iter, KH, S, D, P)
                T.copy(kernel_flat[k_iter * block_K, bx * block_N], kernel_shared)
                T.gemm(data_shared, kernel_shared, out_local)
            T.copy(out_local, out_shared)
            T.copy(out_shared, out_flat[by * block_M, bx * block_N])
    return main


@pytest.mark.gpu
def test_convolution_matches_torch_gpu():
    import torch
    N, C, H, W, F, K, S, D, P = 8, 128, 32, 32, 128, 3, 1, 1, 1
    kern = tilelang.compile(convolution(N, C, H, W, F, K, S, D, P), out_idx=[2], target="cuda")
    torch.manual_seed(0)
    a = torch.randn(N, H, W, C, device="cuda", dtype=torch.float16)
    b = torch.randn(K, K, C, F, device="cuda", dtype=torch.float16)
    out = kern(a, b)
    ref = torch.conv2d(a.permute(0, 3, 1, 2), b.permute(3, 2, 0, 1), stride=S, padding=P, dilation=D)
    torch.testing.assert_close(out, ref.permute(0, 2, 3, 1), rtol=1e-2, atol=1e-2)
