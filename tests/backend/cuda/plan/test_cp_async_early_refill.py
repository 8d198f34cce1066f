"""plan/cp_async_pipeline.py `early_refill`: a ring buffer that the body of a cp.async
pipeline stops using before its last statement (DeepSeek mHC pre: the bf16 tile read into
registers first, while the TF32 gemm reads the other tile at the end) is refilled right
after its last user, in the same commit group as the other copies, which stay after the
body. Checked on the printed schedule; TILELANG_CUDA_CP_ASYNC_EARLY_REFILL=0 keeps one refill
after the body (A/B). No GPU or NVRTC needed."""
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.plan.test_cp_async_pipeline import _before_after, _schedule


@pytest.fixture(autouse=True)
def _early_refill_on(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_CP_ASYNC_EARLY_REFILL", "1")   # opt-in (README: measured on the H200)


def tile_then_gemm(K=1024, bK=64):
    @T.prim_func
    def main(A: T.Tensor((128, K), "float16"), B: T.Tensor((128, K), "float16"), C: T.Tensor((128, 128), "float32")):
        with T.Kernel(1, threads=128):
            Cl = T.alloc_fragment((128, 128), "float32")
            T.clear(Cl)
            for k in T.Pipelined(K // bK, num_stages=2):
                As = T.alloc_shared((128, bK), "float16")
                Bs = T.alloc_shared((128, bK), "float16")
                T.copy(A[0, k * bK], As)
                T.copy(B[0, k * bK], Bs)
                Al = T.alloc_fragment((128, bK), "float16")
                T.copy(As, Al)                       # the last use of As
                T.gemm(Al, Bs, Cl, transpose_B=True)
            T.copy(Cl, C)
    return main


def _refills(sched):
    """[(index of the refill's barrier, the ring buffers it names)]"""
    return [(i, ln.split("slot of ")[1].split(":")[0]) for i, ln in enumerate(sched) if "it is refilled" in ln]


def test_a_tile_read_first_is_refilled_after_its_reader():
    sched = _schedule(_before_after(tile_then_gemm())[1])
    refills = _refills(sched)
    assert [names for _, names in refills] == ["As", "Bs"], sched
    gemm = next(i for i, ln in enumerate(sched) if "T.gemm(Al, Bs, Cl" in ln)
    issued = [i for i, ln in enumerate(sched) if "cp.async" in ln and i > refills[0][0]]
    # As's copy (the loop's first nest) for iteration k + 2 is issued before the gemm of
    # iteration k, Bs's (the second) after it; one commit group an iteration
    assert len(issued) == 2 and "i0_1, i1_1" in sched[issued[0]] and "i0_2, i1_2" in sched[issued[1]]
    assert refills[0][0] < issued[0] < gemm < refills[1][0] < issued[1]
    main = sched[next(i for i, ln in enumerate(sched) if ln.startswith("for k_1")):]
    assert sum("T.ptx_commit_group()" in ln for ln in main) == 1
    assert [ln.strip() for ln in main if "T.ptx_wait_group(" in ln][0] == "T.evaluate(T.ptx_wait_group(1))"


def test_switch_off_refills_both_after_the_body(monkeypatch):
    monkeypatch.setenv("TILELANG_CUDA_CP_ASYNC_EARLY_REFILL", "0")
    sched = _schedule(_before_after(tile_then_gemm())[1])
    assert [names for _, names in _refills(sched)] == ["As, Bs"], sched


@pytest.mark.gpu
@pytest.mark.parametrize("early", ["1", "0"])
def test_early_refill_computes_the_product_on_the_gpu(monkeypatch, early):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILELANG_CUDA_CP_ASYNC_EARLY_REFILL", early)
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")
    kernel = tilelang.compile(tile_then_gemm(), target="cuda")
    a = torch.randn(128, 1024, device="cuda", dtype=torch.float16)
    b = torch.randn(128, 1024, device="cuda", dtype=torch.float16)
    c = torch.full((128, 128), float("nan"), device="cuda")
    kernel(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float().T, rtol=1e-2, atol=1e-2)


def test_a_tile_an_issued_wgmma_reads_is_refilled_after_its_wait(monkeypatch):
    """FlashAttention on cp.async (TILELANG_CUDA_TMA_RING=0): Q K^T is only issued and
    waited for before the row max (plan/wgmma_waits.py); K's slot is refilled after that
    wait, not right after the issue (the tensor cores still read it: a wrong result on the
    H200 before this check)."""
    from tests.backend.cuda.helpers import load_example
    monkeypatch.setenv("TILELANG_CUDA_TMA_RING", "0")
    fa = load_example("flash_attention", "early_refill")
    pf = fa.flash_attention.get_tir(1, 2, 512, 512, 128, is_causal=False, block_M=128, block_N=128,
                                    num_stages=2, threads=256)
    src = tilelang.lower(pf, target={"kind": "cuda", "arch": "sm_90a"}).kernel_source
    loop = src[src.index("for (int kb_1"):]
    issue = loop.index("tl::wgmma_ss_issue<")
    refill_k = loop.index("cp_async_gs<16>(&K_shared_slot_")
    assert issue < loop.index("tl::wgmma_wait<0>();") < refill_k, loop[:3000]
