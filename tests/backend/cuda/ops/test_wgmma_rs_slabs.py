"""wgmma with A from registers over several 64-row slabs per warpgroup (ops/wgmma.py,
include/tl_cuda/wgmma.h wgmma_rs_issue<.., S>): FlashAttention's second product
`P @ V` with the published decode/inference tile (128 query rows on 128 threads, the
`example_mha_inference` configuration). Slab s multiplies the P registers of each warp's
s-th 16-row tile into the accumulator registers of the same rows. Such chains take
wgmma while their accumulators leave registers for the rest (plan/kernel.py
_SLAB_CHAIN_REGS); the 128 x 128 tile on 128 threads (256 accumulator registers) keeps
mma.sync."""
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.conftest import needs_sass
from tests.backend.cuda.helpers import build
from tests.backend.cuda.plan.test_pipeline import _plan


def attention(seq, heads, dim, block_M=128, block_N=64, threads=128, stages=2):
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
            for k in T.Pipelined(T.ceildiv(seq, block_N), num_stages=stages):
                T.copy(K[0, k * block_N:(k + 1) * block_N, by, :], K_s)
                T.clear(acc_s)
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


def _gemm_lines(text):
    return [ln.strip() for ln in text.splitlines() if ln.startswith("  T.gemm(")]


@pytest.mark.parametrize("dim", [64, 128])
def test_the_chain_runs_on_wgmma_with_two_slabs(dim):
    plan, text = _plan(attention(256, 2, dim), "sm_90a")
    g1, g2 = _gemm_lines(text)
    assert "wgmma m64n64k16" in g1 and "2 slabs per warpgroup" in g1 and "A from shared" in g1
    assert f"wgmma m64n{dim}k16" in g2 and "2 slabs per warpgroup" in g2 and g2.endswith("A from registers")
    assert [ln for ln in text.splitlines() if "-> K_s" in ln][0].endswith("TMA ring (pipelined)")


def test_a_num_stages_1_loop_issues_its_tiles_as_cp_async_after_their_readers():
    # plan/pipeline.py: num_stages=1 prefetches each tile for the next iteration after its last reader
    plan, text = _plan(attention(256, 2, 128, block_N=128, stages=1), "sm_90a")
    copies = [ln for ln in text.splitlines() if ("-> K_s" in ln or "-> V_s" in ln) and "group" not in ln]
    assert len(copies) == 2 and all(ln.endswith("cp.async x8 (16 B)") for ln in copies), copies
    assert "  1 stage over K_s, V_s: one version each; the next iteration's copies issued after their last reader" \
        in text.splitlines()


def test_accumulators_past_the_budget_keep_mma_sync():
    # 128 x 128 scores and 128 x 128 output on 128 threads: 256 accumulator registers
    plan, text = _plan(attention(256, 2, 128, block_N=128), "sm_90a")
    assert all("mma.sync" in ln or "wgmma" not in ln for ln in _gemm_lines(text)), _gemm_lines(text)


@needs_sass
def test_sass_has_hgmma_and_no_spills():
    from tilelang.backend.cuda.host.nvrtc import sass
    text = sass(build(attention(256, 2, 128), arch="sm_90a").binary)
    assert text.count("HGMMA.64x128x16") >= 8 and "STL" not in text and "LDL" not in text


@pytest.mark.gpu
@pytest.mark.parametrize("dim,block_N,stages", [(64, 64, 2), (128, 64, 2), (128, 128, 2), (128, 128, 1), (64, 128, 1)])
def test_attention_matches_torch_on_the_gpu(dim, block_N, stages):
    # stages=1 (example_mha_fwd_bshd's form): each K/V tile issued for the next iteration after its reader
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    seq, heads = 384, 2
    q, k, v = (torch.randn(1, seq, heads, dim, dtype=torch.float16, device="cuda") for _ in range(3))
    kern = tilelang.compile(attention(seq, heads, dim, block_N=block_N, stages=stages), out_idx=[3], target="cuda")
    ref = torch.nn.functional.scaled_dot_product_attention(*(x.transpose(1, 2) for x in (q, k, v))).transpose(1, 2)
    torch.testing.assert_close(kern(q, k, v), ref, rtol=2e-2, atol=2e-2)
