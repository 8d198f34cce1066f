"""plan/pipeline.py issues ahead a copy whose indices read block-uniform scalars the loop
does not write (varlen attention's `kv_start_idx = cu_seqlens_k[bz]`, read before the
loop): the published `example_mha_fwd_varlen` ran its T.Pipelined(num_stages=2) loop
unpipelined, every K/V tile loaded synchronously. A scalar the loop writes keeps the copy
in its own iteration. Plans of the CUDA passes (no GPU); the GPU test compares with torch."""
import pytest

import tilelang
import tilelang.language as T
from tests.backend.cuda.plan.test_pipeline import _plan, _pipeline


def _varlen_attention(batch, total, heads, dim, block=64, stages=2, threads=128, moving_start=False):
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    shape = [total, heads, dim]

    @T.prim_func
    def main(Q: T.Tensor(shape, "float16"), K: T.Tensor(shape, "float16"), V: T.Tensor(shape, "float16"),
             cu_seqlens: T.Tensor([batch + 1], "int32"), max_seqlen: T.int32, O: T.Tensor(shape, "float16")):
        with T.Kernel(T.ceildiv(max_seqlen, block), heads, batch, threads=threads) as (bx, by, bz):
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
            start = T.alloc_var("int32")
            start = cu_seqlens[bz]
            seqlen = cu_seqlens[bz + 1] - start
            T.copy(Q[start + bx * block:start + bx * block + block, by, :], Q_s)
            T.fill(acc_o, 0)
            T.fill(l_sum, 0)
            T.fill(m, -T.infinity("float32"))
            for k in T.Pipelined(T.ceildiv(seqlen, block), num_stages=stages):
                T.copy(K[start + k * block:start + k * block + block, by, :], K_s)
                if moving_start:
                    start = start + 0
                for i, j in T.Parallel(block, block):
                    acc_s[i, j] = T.if_then_else(bx * block + i >= seqlen or k * block + j >= seqlen, -1e9, 0)
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
                T.copy(V[start + k * block:start + k * block + block, by, :], V_s)
                T.gemm(acc_p, V_s, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block, dim):
                acc_o[i, j] /= l_sum[i]
            for i, d in T.Parallel(block, dim):
                if bx * block + i < seqlen:
                    O[start + bx * block + i, by, d] = acc_o[i, d]
    return main


@pytest.mark.parametrize("arch,form", [("sm_80", "cp.async"), ("sm_90a", "TMA ring")])
def test_copies_indexed_by_a_loop_invariant_scalar_are_issued_ahead(arch, form):
    plan, text = _plan(_varlen_attention(2, 160, 2, 64), arch)
    assert _pipeline(text) == ["2 stages over K_s, V_s"]
    copies = [ln for ln in text.splitlines() if "-> K_s" in ln or "-> V_s" in ln]
    assert len(copies) == 2 and all(form in ln for ln in copies), copies


def test_a_scalar_the_loop_writes_keeps_the_copy_in_its_iteration():
    plan, text = _plan(_varlen_attention(2, 160, 2, 64, moving_start=True), "sm_90a")
    assert _pipeline(text) == [] and not plan.pipelines
    assert [ln for ln in text.splitlines() if "-> K_s" in ln][0].endswith("vector x8 (16 B)")


@pytest.mark.gpu
@pytest.mark.parametrize("stages", [1, 2])
def test_varlen_attention_matches_torch_on_the_gpu(stages):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    lens = [70, 130, 1]
    batch, heads, dim = len(lens), 2, 64
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), dtype=torch.int32, device="cuda")
    total = int(cu[-1])
    q, k, v = (torch.randn(total, heads, dim, dtype=torch.float16, device="cuda") for _ in range(3))
    kern = tilelang.compile(_varlen_attention(batch, total, heads, dim, stages=stages), out_idx=[5], target="cuda")
    out = kern(q, k, v, cu, max(lens))
    for b in range(batch):
        s, e = int(cu[b]), int(cu[b + 1])
        qb, kb, vb = (x[s:e].transpose(0, 1).float() for x in (q, k, v))
        ref = torch.softmax(qb @ kb.transpose(1, 2) / dim ** 0.5, dim=-1) @ vb
        torch.testing.assert_close(out[s:e].transpose(0, 1).float(), ref, rtol=2e-2, atol=2e-2)
