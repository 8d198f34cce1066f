"""plan/cp_async_pipeline.py `schedule_wgmma_in_flight`: a T.Pipelined GEMM loop on cp.async
copies (an im2col tile cannot go on the TMA ring) with one wgmma kept in flight becomes its
schedule in the IR (the pass pipeline_cp_async): it issues the copies of iteration
k + num_stages - 1, as the published package's pipeline does: after its wgmma (issued only)
and the wait for wgmma k - 1 (`T.warpgroup_wait(1)`) a second barrier frees the slot
iteration k - 1 read. (With one barrier per iteration only num_stages - 2 were ahead: the
published convolution autotune configuration, a 128 x 256 tile alone on its SM, then waited
for its im2col loads every iteration.) Checked on the printed IR after the pass and in SASS,
then the convolution against torch on the GPU."""
import functools
import re

import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_sass


def conv(N, H, W, C, F, K, S, D, P, bm=128, bn=256, bk=64, stages=3, threads=256):
    """The published convolution example's kernel (its Hopper epilogue through shared)."""
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1

    @T.prim_func
    def main(data: T.Tensor((N, H, W, C), "float16"), kernel: T.Tensor((K, K, C, F), "float16"),
             out: T.Tensor((N, OH, OW, F), "float16")):
        with T.Kernel(T.ceildiv(F, bn), T.ceildiv(N * OH * OW, bm), threads=threads) as (bx, by):
            data_shared = T.alloc_shared((bm, bk), "float16")
            kernel_shared = T.alloc_shared((bk, bn), "float16")
            out_local = T.alloc_fragment((bm, bn), "float32")
            out_shared = T.alloc_shared((bm, bn), "float16")
            kernel_flat = T.Tensor((K * K * C, F), "float16", kernel.data)
            out_flat = T.Tensor((N * OH * OW, F), "float16", out.data)
            T.clear(out_local)
            for k_iter in T.Pipelined(T.ceildiv(K * K * C, bk), num_stages=stages):
                T.im2col(data, data_shared, by, k_iter, K, S, D, P)
                T.copy(kernel_flat[k_iter * bk, bx * bn], kernel_shared)
                T.gemm(data_shared, kernel_shared, out_local)
            T.copy(out_local, out_shared)
            T.copy(out_shared, out_flat[by * bm, bx * bn])
    return main


# the regression suite's shape (example_convolution_autotune): F = 128 fills half of the
# 256-wide tile, 18 iterations of K = 3 * 3 * 128
REGRESSION = (128, 64, 64, 128, 128, 3, 1, 1, 1)


@functools.lru_cache(maxsize=None)   # one compile per depth for the module's tests
def _compiled(stages=3, case=REGRESSION):
    return tilelang.compile(conv(*case, stages=stages), out_idx=[2], target="cuda -arch=sm_90a")


def _schedule(stages):
    from tests.backend.cuda.plan.test_cp_async_pipeline import _before_after, _schedule
    return "\n".join(_schedule(_before_after(conv(*REGRESSION, stages=stages), arch="sm_90a")[1]))


@pytest.mark.parametrize("stages", [3, 4])
def test_copies_run_num_stages_minus_one_ahead(stages):
    text = _schedule(stages)
    assert f"for p in T.serial({stages - 1}):" in text   # the prologue fills s - 1 slots
    loop = text[text.index("for k_iter_1 in T.serial(18):"):]
    order = [loop.index(f"T.ptx_wait_group({stages - 2})"),
             loop.index("T.sync_threads()  # inserted, after a fence.proxy.async: this iteration's copies"),
             loop.index("T.gemm(data_shared, kernel_shared, out_local)  # issued only"),
             loop.index("'tl.warpgroup_wait', 1"),
             loop.index("T.sync_threads()  # inserted: every warpgroup's previous wgmma group retired"),
             loop.index(f"if k_iter_1 + {stages - 1} < 18:"), loop.index("T.ptx_commit_group()")]
    assert order == sorted(order), order
    # the refill goes to the slot iteration k - 1 read: (k + s - 1) % s
    assert f"k_iter_next = k_iter_1 + {stages - 1}" in loop
    assert f"slot=T.truncmod(k_iter_next, {stages})" in loop
    assert loop.count("T.sync_threads()") == 2
    tail = loop[loop.index("'tl.warpgroup_wait', 0"):]
    assert tail.index("'tl.warpgroup_fence_operand'") < tail.index("T.ptx_wait_group(0)")


@needs_sass
def test_sass_keeps_hgmma_and_cp_async_without_spills():
    sass = _compiled().get_sass()
    assert "HGMMA.64x256x16.F32" in sass and "LDGSTS" in sass
    assert not re.search(r"\b(STL|LDL)\b", sass)
    # the main loop (from its first barrier to the branch back) holds both barriers
    assert len(re.findall(r"BAR\.SYNC", sass)) >= 3


@pytest.mark.gpu
@pytest.mark.parametrize("stages", [3, 4])
@pytest.mark.parametrize("case", [(2, 16, 16, 128, 128, 3, 1, 1, 1),    # half of the N tile past F
                                  (1, 20, 18, 64, 256, 3, 2, 2, 2),     # strided, dilated: ragged K
                                  (3, 9, 11, 32, 96, 3, 1, 1, 1)])      # ragged M and F
def test_conv_against_torch(case, stages):
    import torch
    N, H, W, C, F, K, S, D, P = case
    fn = tilelang.compile(conv(*case, stages=stages), out_idx=[2], target="cuda")
    x = torch.randn(N, H, W, C, device="cuda", dtype=torch.float16)
    w = torch.randn(K, K, C, F, device="cuda", dtype=torch.float16)
    out = fn(x, w)
    ref = torch.nn.functional.conv2d(x.permute(0, 3, 1, 2).float(), w.permute(3, 2, 0, 1).float(),
                                     stride=S, padding=P, dilation=D).permute(0, 2, 3, 1)
    torch.testing.assert_close(out.float(), ref, rtol=1e-2, atol=5e-2)
