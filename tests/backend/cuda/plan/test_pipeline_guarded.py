"""plan/pipeline.py: a T.Pipelined body that is one `if cond:` (block-sparse GEMM,
`if BlockMask[by, bx, k]:`) keeps its cp.async ring: the copies of iteration j are issued
under cond(j), the gemm of iteration k runs under cond(k), and every iteration closes its
cp.async group so the waits count alike. Compile-only plan checks (the lower trace's plan
page), then block-sparse GEMMs against torch on the GPU."""
import os

import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_nvrtc
from tests.backend.cuda.helpers import build


def blocksparse(M, N, K, bM=128, bN=128, bK=32, stages=2, threads=128, cond="mask"):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             Mask: T.Tensor((M // bM, N // bN, K // bK), "bool"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            flag = T.alloc_shared((1,), "bool")
            C_l = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_l)
            flag[0] = True
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                if (Mask[by, bx, k] if cond == "mask" else flag[0]):
                    T.copy(A[by * bM, k * bK], A_s)
                    T.copy(B[k * bK, bx * bN], B_s)
                    T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * bM, bx * bN])
    return main


def _plan_page(tmp_path, monkeypatch, func, arch="sm_90a"):
    monkeypatch.setenv("TL_LOWER_TRACE", str(tmp_path))
    build(func, arch)
    page = [p for p in sorted(os.listdir(tmp_path)) if "_cuda_plan_" in p][0]
    return (tmp_path / page).read_text()


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_guarded_body_is_pipelined(tmp_path, monkeypatch, arch):
    text = _plan_page(tmp_path, monkeypatch, blocksparse(256, 256, 256), arch)
    assert "2 stages over A_s, B_s (each iteration under `if Mask[by, bx, k]`)" in text, text


@needs_nvrtc
def test_condition_on_shared_memory_is_not_hoisted(tmp_path, monkeypatch):
    # a shared flag may change while copies are in flight: the issue cannot run ahead of it
    text = _plan_page(tmp_path, monkeypatch, blocksparse(256, 256, 256, cond="flag"))
    assert "pipelines:" not in text, text
    # the plan report (and a warning) say why
    assert "note: T.Pipelined over k: not pipelined: its body is one `if` (its condition reads flag, " \
           "which is not a global tensor the kernel never writes)" in text, text


@needs_nvrtc
def test_one_stage_guarded_body_says_why_it_is_not_pipelined(tmp_path, monkeypatch):
    # num_stages=1 issues the next iteration's copies after their readers in this one (the
    # published block-sparse attention examples): inside the `if`, which the next iteration's
    # condition does not govern
    with pytest.warns(UserWarning, match="T.Pipelined over k: not pipelined: its body is one `if` "
                                         r"\(num_stages=1 issues the next iteration's copies"):
        text = _plan_page(tmp_path, monkeypatch, blocksparse(256, 256, 256, stages=1))
    assert "pipelines:" not in text, text


@needs_nvrtc
def test_issue_and_compute_are_predicated_and_groups_commit_unconditionally():
    # sm_80: the cp.async ring (sm_90a: the TMA ring, below)
    src = tilelang.compile(blocksparse(256, 256, 256, stages=3), target="cuda -arch=sm_80").get_kernel_source()
    loop = src[src.index("for (int k"):]
    compute = loop[:loop.index("_next = (k")]
    assert compute.index("if (Mask[") < compute.index("tl::gemm_ss<")   # the gemm under the mask of k
    issue = loop[loop.index("_next = (k"):loop.index("tl::cp_async_commit();")]
    assert "if (Mask[" in issue and "_next)]) {" in issue   # copies of iteration k + 3 under its own mask


@needs_nvrtc
@pytest.mark.parametrize("threads", [128, 256])
def test_tma_ring_skipped_rounds_still_turn_the_phase(threads):
    # the single-role ring (with a producer warpgroup: tests/backend/cuda/plan/test_warp_specialize.py)
    src = tilelang.compile(blocksparse(256, 256, 256, stages=3, threads=threads), target="cuda -arch=sm_90a",
                           pass_configs={"tl.disable_warp_specialized": True}).get_kernel_source()
    assert "cp_async" not in src and "tl::tma_load_2d(" in src
    loop = src[src.index("for (int k"):]
    # the refill of iteration k + 3: an empty round (a plain arrival) where its mask is off
    refill = loop[loop.index("tl::slot_release_last("):]
    assert refill.index("if ((!Mask[") < refill.index("tl::mbar_arrive(&ring_full[") < \
        refill.index("} else {") < refill.index("tl::mbar_arrive_expect_tx(") < refill.index("tl::tma_load_2d(")
    # every iteration waits for its slot; the gemm runs under the mask of k
    assert loop.index("tl::mbar_wait(") < loop.index("if (Mask[") < loop.index("tl::wgmma_gemm_ss<")


def _run(M, N, K, bK, stages, threads, density, seed):
    import torch
    torch.manual_seed(seed)
    bM = bN = 128
    kern = tilelang.compile(blocksparse(M, N, K, bK=bK, stages=stages, threads=threads), out_idx=[3],
                            target="cuda")
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    mask = torch.rand(M // bM, N // bN, K // bK, device="cuda") < density
    mask[0, 0, :] = False                    # a block with nothing to do
    mask[-1, -1, :2] = False                 # the prologue's first iterations skipped
    c = kern(a, b, mask)
    ref = torch.zeros(M, N, device="cuda", dtype=torch.float32)
    for i in range(M // bM):
        for j in range(N // bN):
            for k in range(K // bK):
                if mask[i, j, k]:
                    ref[i*bM:(i+1)*bM, j*bN:(j+1)*bN] += (a[i*bM:(i+1)*bM, k*bK:(k+1)*bK].float()
                                                          @ b[k*bK:(k+1)*bK, j*bN:(j+1)*bN].float())
    torch.testing.assert_close(c.float(), ref, rtol=1e-2, atol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("bK,stages,threads", [(32, 2, 128), (32, 3, 256), (64, 4, 128)])
def test_blocksparse_gemm_matches_torch(bK, stages, threads):
    _run(512, 384, 1024, bK, stages, threads, density=0.5, seed=bK + stages)
