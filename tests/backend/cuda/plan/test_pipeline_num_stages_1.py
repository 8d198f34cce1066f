"""`T.Pipelined(n, num_stages=1)` as the published package plans it (plan/pipeline.py): one
version of each copied buffer, the copies of iteration k+1 issued right after their last
reader in iteration k (FlashAttention: K after Q·K, V after P·V), waited for before their
first reader; num_stages=0 is a plain loop and num_stages=2 a two-slot ring issued at the
top. Checked on the plan, the barriers plan/sync.py puts around the markers, and the
printed schedule of plan/cp_async_pipeline.py; no GPU or NVRTC needed."""
import pytest

import tilelang.language as T
from tilelang.backend.cuda.plan.pipeline import PREFETCH_WAIT, prefetch_marker
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tests.backend.cuda.plan.test_pipeline import _gemm, _pipeline, _plan
from tests.backend.cuda.plan.test_cp_async_pipeline import _before_after
from tests.backend.cuda.conftest import needs_sass


def attention(seq=256, heads=2, dim=64, block_M=128, block_N=64, threads=128, stages=1, causal=False):
    """FlashAttention forward over [batch 1, seq, heads, dim] with the K copy, Q·K, softmax,
    the V copy and P·V in one pipelined body."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    shape = [1, seq, heads, dim]

    @T.prim_func
    def main(Q: T.Tensor(shape, "float16"), K: T.Tensor(shape, "float16"), V: T.Tensor(shape, "float16"),
             O: T.Tensor(shape, "float16")):
        with T.Kernel(T.ceildiv(seq, block_M), heads, threads=threads) as (bx, by):
            Q_s = T.alloc_shared([block_M, dim], "float16")
            K_s = T.alloc_shared([block_N, dim], "float16")
            V_s = T.alloc_shared([block_N, dim], "float16")
            acc_s = T.alloc_fragment([block_M, block_N], "float32")
            acc_p = T.alloc_fragment([block_M, block_N], "float16")
            acc_o = T.alloc_fragment([block_M, dim], "float32")
            m = T.alloc_fragment([block_M], "float32")
            m_prev = T.alloc_fragment([block_M], "float32")
            r = T.alloc_fragment([block_M], "float32")
            l_sum = T.alloc_fragment([block_M], "float32")
            T.copy(Q[0, bx * block_M:(bx + 1) * block_M, by, :], Q_s)
            T.fill(acc_o, 0)
            T.fill(l_sum, 0)
            T.fill(m, -T.infinity("float32"))
            n = T.min(T.ceildiv(seq, block_N), T.ceildiv((bx + 1) * block_M, block_N)) if causal \
                else T.ceildiv(seq, block_N)
            for k in T.Pipelined(n, num_stages=stages):
                T.copy(K[0, k * block_N:(k + 1) * block_N, by, :], K_s)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0,
                                                 -T.infinity("float32")) if causal else 0
                T.gemm(Q_s, K_s, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(m, m_prev)
                T.reduce_max(acc_s, m, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    r[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m[i] * scale)
                T.reduce_sum(acc_s, m_prev, dim=1)
                for i in T.Parallel(block_M):
                    l_sum[i] = l_sum[i] * r[i] + m_prev[i]
                T.copy(acc_s, acc_p)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= r[i]
                T.copy(V[0, k * block_N:(k + 1) * block_N, by, :], V_s)
                T.gemm(acc_p, V_s, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= l_sum[i]
            T.copy(acc_o, O[0, bx * block_M:(bx + 1) * block_M, by, :])
    return main


def _info(plan):
    (info,) = plan.pipelines.values()
    return info


def _outline(rest):
    """The body of a num_stages=1 pipeline: markers, gemms (by their B operand), barriers."""
    out = []
    for s in rest:
        m = prefetch_marker(s)
        if m is not None:
            out.append(("wait" if m[0] == PREFETCH_WAIT else "issue", m[1]))
        elif isinstance(s, TO.Gemm):
            out.append(("gemm", s.B.buffer.name))
        elif isinstance(s, S.Barrier):
            out.append(("barrier",))
    return out


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_num_stages_1_issues_each_copy_after_its_last_reader(arch):
    plan, text = _plan(attention(), arch)
    info = _info(plan)
    assert info.stages == 1 and info.issue_after_use
    assert [[c.annotations["copy_form"].kind for c in g] for g in info.groups] == [["cp_async"], ["cp_async"]]
    assert [b.name for b in info.bufs] == ["K_s", "V_s"]
    # one version each: no more shared memory than the plain loop
    assert all(plan.placements[id(b)].stages == 1 for b in info.bufs)
    assert plan.smem_bytes == _plan(attention(stages=0), arch)[0].smem_bytes
    # group 0 (K) lands before Q·K and is issued again right after it; group 1 (V) around P·V;
    # a barrier orders the reads before each issue and the landed copies before each reader
    assert _outline(info.rest) == [
        ("wait", 0), ("barrier",), ("gemm", "K_s"), ("barrier",), ("issue", 0),
        ("wait", 1), ("barrier",), ("gemm", "V_s"), ("barrier",), ("issue", 1)]
    assert [ln.split(" (line")[0] for ln in _pipeline(text)[:3]] == [
        "1 stage over K_s, V_s: one version each; the next iteration's copies issued after their last reader",
        "group 0: K -> K_s", "group 1: V -> V_s"]


def test_num_stages_0_and_2_keep_their_meaning():
    assert _info(_plan(attention(stages=2))[0]).stages == 2
    assert not _info(_plan(attention(stages=2))[0]).issue_after_use
    assert _plan(attention(stages=0))[0].pipelines == {}


def test_the_switch_turns_the_one_stage_prefetch_off(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_ONE_STAGE_PREFETCH", "0")
    assert _plan(attention())[0].pipelines == {}


def test_a_body_of_copies_and_their_reader_only_is_not_pipelined():
    # copy, copy, gemm: the next iteration's copies would overlap nothing (the published
    # schedule's prefetch gains nothing there either)
    plan, text = _plan(_gemm(num_stages=1))
    assert plan.pipelines == {}
    assert "note: num_stages=1 over As, Bs: not pipelined, the copies would overlap no other work of the body " \
           "(their readers are all it does)" in text


def test_the_schedule_waits_for_each_group_with_the_later_ones_in_flight():
    before, after = _before_after(attention(), "sm_80")
    lines = after.splitlines()
    start = next(i for i, ln in enumerate(lines) if "before the pipeline's prologue" in ln)
    end = max(i for i, ln in enumerate(lines) if "T.ptx_wait_group(0)" in ln)
    ind = len(lines[start]) - len(lines[start].lstrip())
    keep = ("sync_threads", "ptx_", "T.gemm", "if ", "k_next", " = 0", "for k")
    sched = [ln[ind:] for ln in lines[start:end + 1] if any(w in ln for w in keep) and "] = " not in ln]
    assert sched == [
        "T.sync_threads()  # inserted: K_s, V_s may still be read before the pipeline's prologue",
        "if 0 < 4:",
        "    k = 0",
        "    T.evaluate(T.ptx_commit_group())",    # K of iteration 0
        "    T.evaluate(T.ptx_commit_group())",    # V of iteration 0
        "for k_1 in T.serial(4):",
        "    T.evaluate(T.ptx_wait_group(1))",     # K(k) landed, V(k) may be in flight
        "    T.sync_threads()  # inserted: K_s",
        "    T.gemm(Q_s, K_s, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)",
        "    T.sync_threads()  # inserted: K_s",
        "    if k_1 + 1 < 4:",
        "        k_next = k_1 + 1",
        "    T.evaluate(T.ptx_commit_group())",
        "    T.evaluate(T.ptx_wait_group(1))",     # V(k) landed, K(k + 1) may be in flight
        "    T.sync_threads()  # inserted: V_s",   # (P stays in registers: test_mma_register_a.py)
        "    T.gemm(acc_p, V_s, acc_o, policy=T.GemmWarpPolicy.FullRow)",
        "    T.sync_threads()  # inserted: V_s",
        "    if k_1 + 1 < 4:",
        "        k_next_1 = k_1 + 1",
        "    T.evaluate(T.ptx_commit_group())",
        "T.evaluate(T.ptx_wait_group(0))"]
    # the copies issued in the loop read the next iteration's tiles
    issued = "\n".join(lines[start:end + 1])
    assert "K[0, k_next * 64 + i0" in issued and "V[0, k_next_1 * 64 + i0" in issued


def test_a_buffer_read_twice_is_issued_after_the_second_reader():
    M = N = K = 256
    bM = bN = 64
    bK = 32

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            As = T.alloc_shared((bM, bK), "float16")
            Bs = T.alloc_shared((bK, bN), "float16")
            C1 = T.alloc_fragment((bM, bN), "float32")
            C2 = T.alloc_fragment((bM, bN), "float32")
            T.clear(C1)
            T.clear(C2)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=1):
                T.copy(A[by * bM, k * bK], As)
                T.copy(B[k * bK, bx * bN], Bs)
                for i, j in T.Parallel(bM, bN):
                    C2[i, j] = C2[i, j] * 0.5   # the work the copies overlap
                T.gemm(As, Bs, C1)
                T.gemm(As, Bs, C2)
            for i, j in T.Parallel(bM, bN):
                C1[i, j] += C2[i, j]
            T.copy(C1, C[by * bM, bx * bN])
    info = _info(_plan(main)[0])
    # both copies are read last by the second gemm: one group, landed before the first
    assert [len(g) for g in info.groups] == [2]
    assert [o for o in _outline(info.rest) if o[0] != "barrier"] == [
        ("wait", 0), ("gemm", "Bs"), ("gemm", "Bs"), ("issue", 0)]
    before, after = _before_after(main, "sm_80")
    assert after.count("T.ptx_wait_group(0)") == 2   # in the loop (nothing after it) and after the loop


def block_sparse_attention(seq=256, heads=2, dim=64, block=64, stages=1, threads=128):
    """Block-sparse attention over [1, heads, seq, dim]: query block bx attends to key block k
    where Mask[by, bx, k] (a body `if` on a global tensor the kernel never writes)."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    shape, nb = [1, heads, seq, dim], seq // block

    @T.prim_func
    def main(Q: T.Tensor(shape, "float16"), K: T.Tensor(shape, "float16"), V: T.Tensor(shape, "float16"),
             Mask: T.Tensor((heads, nb, nb), "int8"), O: T.Tensor(shape, "float16")):
        with T.Kernel(nb, heads, threads=threads) as (bx, by):
            Q_s = T.alloc_shared([block, dim], "float16")
            K_s = T.alloc_shared([block, dim], "float16")
            V_s = T.alloc_shared([block, dim], "float16")
            acc_s = T.alloc_fragment([block, block], "float32")
            acc_p = T.alloc_fragment([block, block], "float16")
            acc_o = T.alloc_fragment([block, dim], "float32")
            m = T.alloc_fragment([block], "float32")
            m_prev = T.alloc_fragment([block], "float32")
            r = T.alloc_fragment([block], "float32")
            l_sum = T.alloc_fragment([block], "float32")
            T.copy(Q[0, by, bx * block:(bx + 1) * block, :], Q_s)
            T.fill(acc_o, 0)
            T.fill(l_sum, 0)
            T.fill(m, -T.infinity("float32"))
            for k in T.Pipelined(nb, num_stages=stages):
                if Mask[by, bx, k] != 0:
                    T.copy(K[0, by, k * block:(k + 1) * block, :], K_s)
                    T.clear(acc_s)
                    T.gemm(Q_s, K_s, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                    T.copy(m, m_prev)
                    T.reduce_max(acc_s, m, dim=1, clear=False)
                    for i in T.Parallel(block):
                        r[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                    for i, j in T.Parallel(block, block):
                        acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m[i] * scale)
                    T.reduce_sum(acc_s, m_prev, dim=1)
                    for i in T.Parallel(block):
                        l_sum[i] = l_sum[i] * r[i] + m_prev[i]
                    T.copy(acc_s, acc_p)
                    for i, j in T.Parallel(block, dim):
                        acc_o[i, j] *= r[i]
                    T.copy(V[0, by, k * block:(k + 1) * block, :], V_s)
                    T.gemm(acc_p, V_s, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block, dim):
                acc_o[i, j] /= l_sum[i]
            T.copy(acc_o, O[0, by, bx * block:(bx + 1) * block, :])
    return main


def test_a_guarded_body_is_not_split_for_num_stages_1():
    # the issue points would be inside the `if`: the loop runs unpipelined (results unchanged)
    assert _plan(block_sparse_attention())[0].pipelines == {}


@needs_sass
def test_sass_issues_cp_async_in_the_loop_without_spills():
    from tests.backend.cuda.helpers import build
    from tilelang.backend.cuda.host.nvrtc import sass
    # a wgmma tile (example_mha_fwd_bshd's 128 x 128 on 128 threads is mma.sync and spills
    # before and after this change; its ptxas run takes too long for CI)
    text = sass(build(attention(dim=64, block_M=64, block_N=64), arch="sm_90a").binary)
    assert text.count("LDGSTS") >= 8 and "DEPBAR" in text and "HGMMA" in text
    assert "STL" not in text and "LDL" not in text


def _torch_attention(q, k, v, causal, bshd):
    import torch
    t = (lambda x: x.transpose(1, 2)) if bshd else (lambda x: x)
    return t(torch.nn.functional.scaled_dot_product_attention(t(q), t(k), t(v), is_causal=causal))


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
@pytest.mark.parametrize("b,h,sq,skv,d,cfg", [
    (1, 2, 512, 512, 128, dict(block_M=128, block_N=128, threads=128)),   # example_mha_fwd_bshd's tile
    (2, 2, 256, 256, 64, dict(block_M=64, block_N=64, threads=128)),
    (1, 2, 300, 427, 64, dict(block_M=64, block_N=64, threads=128)),      # ragged lengths: masked tails
])
def test_flash_attention_num_stages_1_matches_torch(causal, layout, b, h, sq, skv, d, cfg):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    import tilelang
    from tests.backend.cuda.test_run_gpu import _fa_module
    FA = _fa_module()
    f = FA.flash_attention.get_tir(b, h, sq, skv, d, causal, layout, num_stages=1, **cfg)
    kern = tilelang.compile(f, target="cuda")
    assert "cp_async_wait<1>" in kern.get_kernel_source()   # the num_stages=1 schedule ran
    shape = (lambda s: (b, h, s, d)) if layout == "bhsd" else (lambda s: (b, s, h, d))
    q = torch.randn(*shape(sq), device="cuda", dtype=torch.float16)
    k, v = (torch.randn(*shape(skv), device="cuda", dtype=torch.float16) for _ in range(2))
    o = torch.full_like(q, float("nan"))
    kern(q, k, v, o)
    ref = FA.ref_program(q, k, v, causal, layout).float()
    assert ((o.float() - ref).norm() / ref.norm()) < 1e-2


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_own_attention_num_stages_1_matches_torch(causal):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    import tilelang
    seq, heads, dim = 384, 2, 64
    q, k, v = (torch.randn(1, seq, heads, dim, dtype=torch.float16, device="cuda") for _ in range(3))
    kern = tilelang.compile(attention(seq, heads, dim, block_M=64, causal=causal), out_idx=[3], target="cuda")
    torch.testing.assert_close(kern(q, k, v), _torch_attention(q, k, v, causal, True), rtol=2e-2, atol=2e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("stages", [1, 2])
def test_block_sparse_attention_matches_torch(stages):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    import tilelang
    seq, heads, dim, block = 256, 2, 64, 64
    nb = seq // block
    gen = torch.Generator().manual_seed(0)
    mask = (torch.rand(heads, nb, nb, generator=gen) < 0.5).to(torch.int8)
    mask[:, :, 0] = 1   # every query block sees at least one key block
    q, k, v = (torch.randn(1, heads, seq, dim, dtype=torch.float16, device="cuda") for _ in range(3))
    kern = tilelang.compile(block_sparse_attention(seq, heads, dim, block, stages), out_idx=[4], target="cuda")
    dense = mask.repeat_interleave(block, 1).repeat_interleave(block, 2).bool().cuda()[None]
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=dense)
    torch.testing.assert_close(kern(q, k, v, mask.cuda()).float(), ref, rtol=2e-2, atol=2e-2)


def test_a_copy_is_issued_after_the_gemm_chained_to_its_reader():
    # two gemms into one accumulator back to back (MLA's Q·K over two parts): wgmma may leave
    # the first in flight until the second waits, so the first's tile is issued after both
    M = N = K = 256
    bM = bN = 64
    bK = 32

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), A2: T.Tensor((M, K), "float16"),
             B2: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            As = T.alloc_shared((bM, bK), "float16")
            Bs = T.alloc_shared((bK, bN), "float16")
            A2s = T.alloc_shared((bM, bK), "float16")
            B2s = T.alloc_shared((bK, bN), "float16")
            C1 = T.alloc_fragment((bM, bN), "float32")
            C2 = T.alloc_fragment((bM, bN), "float32")
            T.clear(C1)
            T.clear(C2)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=1):
                T.copy(A[by * bM, k * bK], As)
                T.copy(B[k * bK, bx * bN], Bs)
                T.copy(A2[by * bM, k * bK], A2s)
                T.copy(B2[k * bK, bx * bN], B2s)
                for i, j in T.Parallel(bM, bN):
                    C2[i, j] = C2[i, j] * 0.5
                T.gemm(As, Bs, C1)
                T.gemm(A2s, B2s, C1)
            for i, j in T.Parallel(bM, bN):
                C1[i, j] += C2[i, j]
            T.copy(C1, C[by * bM, bx * bN])
    info = _info(_plan(main, "sm_90a")[0])
    assert [len(g) for g in info.groups] == [4]
    assert [o for o in _outline(info.rest) if o[0] != "barrier"] == [
        ("wait", 0), ("gemm", "Bs"), ("gemm", "B2s"), ("issue", 0)]


def test_a_ring_that_does_not_fit_falls_back_to_one_version_issued_after_use(monkeypatch):
    # num_stages=2 of 128 x 128 K/V tiles next to Q and P: two versions exceed sm_80's
    # shared memory; one version each, issued after the readers, still overlaps the copies
    monkeypatch.setenv("TILELANG_CUDA_MMA_RS", "0")   # P in shared memory (else it is in registers and two fit)
    plan, text = _plan(attention(dim=128, block_N=128, stages=2), "sm_80")
    info = _info(plan)
    assert info.issue_after_use and all(plan.placements[id(b)].stages == 1 for b in info.bufs)
    assert "note: pipeline stages capped at 1 so that shared memory fits in 166912 bytes" in text
    # where two versions fit, the ring stays
    assert _info(_plan(attention(dim=128, block_N=128, stages=2), "sm_90a")[0]).stages == 2
