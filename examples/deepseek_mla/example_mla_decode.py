"""MLA-style decode attention (DeepSeek multi-head latent attention), split over the
KV sequence.

    Q: [batch, heads, dim]          Q_pe: [batch, heads, pe_dim]
    KV: [batch, seqlen_kv, dim]     K_pe: [batch, seqlen_kv, pe_dim]   (one latent KV head)
    O[b, h] = softmax((Q[b, h] KV[b]^T + Q_pe[b, h] K_pe[b]^T) * scale) KV[b]

The latent KV serves as both keys and values. Kernel 1 (grid: head blocks x batch x
splits) computes a partial output and base-2 log-sum-exp per split into workspaces;
kernel 2 (grid: heads x batch) merges the splits.
"""
import argparse

import torch

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[4])
def mla_decode(batch, heads, seqlen_kv, dim, pe_dim, block_H=64, block_N=64, num_split=4, threads=256,
               dtype=T.float16, accum_dtype=T.float32):
    assert heads % block_H == 0
    scale = (1.0 / (dim + pe_dim)) ** 0.5 * 1.44269504  # softmax scale * log2(e)
    per_split = -(-seqlen_kv // num_split)
    per_split = -(-per_split // block_N) * block_N
    num_split = -(-seqlen_kv // per_split)
    blocks_per_split = per_split // block_N

    @T.prim_func
    def mla(
            Q: T.Tensor([batch, heads, dim], dtype),
            Q_pe: T.Tensor([batch, heads, pe_dim], dtype),
            KV: T.Tensor([batch, seqlen_kv, dim], dtype),
            K_pe: T.Tensor([batch, seqlen_kv, pe_dim], dtype),
            Output: T.Tensor([batch, heads, dim], dtype),
    ):
        lse_ws = T.alloc_global([batch, heads, num_split], accum_dtype)
        out_ws = T.alloc_global([batch, heads, num_split, dim], accum_dtype)

        with T.Kernel(heads // block_H, batch, num_split, threads=threads) as (hb, b, s):
            Q_shared = T.alloc_shared([block_H, dim], dtype)
            Q_pe_shared = T.alloc_shared([block_H, pe_dim], dtype)
            KV_shared = T.alloc_shared([block_N, dim], dtype)
            K_pe_shared = T.alloc_shared([block_N, pe_dim], dtype)
            acc_s = T.alloc_fragment([block_H, block_N], accum_dtype)
            P_shared = T.alloc_shared([block_H, block_N], dtype)
            acc_o = T.alloc_fragment([block_H, dim], accum_dtype)
            m_i = T.alloc_fragment([block_H], accum_dtype)
            m_prev = T.alloc_fragment([block_H], accum_dtype)
            row_sum = T.alloc_fragment([block_H], accum_dtype)
            l_i = T.alloc_fragment([block_H], accum_dtype)

            T.copy(Q[b, hb * block_H:(hb + 1) * block_H, :], Q_shared)
            T.copy(Q_pe[b, hb * block_H:(hb + 1) * block_H, :], Q_pe_shared)
            T.fill(acc_o, 0)
            T.fill(l_i, 0)
            T.fill(m_i, -T.infinity(accum_dtype))

            for kb in T.Pipelined(blocks_per_split, num_stages=2):
                k0 = s * per_split + kb * block_N
                T.copy(KV[b, k0:k0 + block_N, :], KV_shared)
                T.copy(K_pe[b, k0:k0 + block_N, :], K_pe_shared)
                T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True, clear_accum=True,
                       policy=T.GemmWarpPolicy.FullCol)
                T.gemm(Q_pe_shared, K_pe_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.if_then_else(k0 + j < seqlen_kv, acc_s[i, j], -T.infinity(accum_dtype))
                T.copy(m_i, m_prev)
                T.reduce_max(acc_s, m_i, dim=1, clear=False)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m_i[i] * scale)
                T.reduce_sum(acc_s, row_sum, dim=1)
                for i in T.Parallel(block_H):
                    l_i[i] = l_i[i] * T.exp2(m_prev[i] * scale - m_i[i] * scale) + row_sum[i]
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] *= T.exp2(m_prev[i] * scale - m_i[i] * scale)
                T.copy(acc_s, P_shared)
                T.gemm(P_shared, KV_shared, acc_o, policy=T.GemmWarpPolicy.FullCol)

            for i, j in T.Parallel(block_H, dim):
                acc_o[i, j] /= l_i[i]
            for i in T.Parallel(block_H):
                l_i[i] = T.log2(l_i[i]) + m_i[i] * scale
            T.copy(acc_o, out_ws[b, hb * block_H:(hb + 1) * block_H, s, :])
            T.copy(l_i, lse_ws[b, hb * block_H:(hb + 1) * block_H, s])

        with T.Kernel(heads, batch, threads=128) as (h, b):
            o_acc = T.alloc_fragment([dim], accum_dtype)
            lse_max = T.alloc_var(accum_dtype)
            lse_sum = T.alloc_var(accum_dtype)
            lse_max = -T.infinity(accum_dtype)
            for si in T.serial(num_split):
                lse_max = T.max(lse_max, lse_ws[b, h, si])
            lse_sum = 0
            for si in T.serial(num_split):
                lse_sum = lse_sum + T.exp2(lse_ws[b, h, si] - lse_max)
            T.clear(o_acc)
            for si in T.serial(num_split):
                for d in T.Parallel(dim):
                    o_acc[d] += out_ws[b, h, si, d] * T.exp2(lse_ws[b, h, si] - lse_max) / lse_sum
            T.copy(o_acc, Output[b, h, :])

    return mla


def ref_program(Q, Q_pe, KV, K_pe):
    dim, pe_dim = Q.shape[-1], Q_pe.shape[-1]
    s = (torch.einsum("bhd,bsd->bhs", Q.float(), KV.float()) +
         torch.einsum("bhd,bsd->bhs", Q_pe.float(), K_pe.float())) / (dim + pe_dim) ** 0.5
    return torch.einsum("bhs,bsd->bhd", torch.softmax(s, dim=-1), KV.float()).to(Q.dtype)


def make_inputs(batch, heads, seqlen_kv, dim, pe_dim, device="cpu", dtype=torch.float16):
    g = lambda *s: torch.randn(*s, device=device, dtype=dtype)  # noqa: E731
    return g(batch, heads, dim), g(batch, heads, pe_dim), g(batch, seqlen_kv, dim), g(batch, seqlen_kv, pe_dim)


def main(batch=2, heads=32, seqlen_kv=300, dim=64, pe_dim=16, block_H=16, num_split=3):
    target = tilelang.determine_target("auto")
    device = "cpu" if target.kind == "cpu" else "cuda"
    kernel = mla_decode(batch, heads, seqlen_kv, dim, pe_dim, block_H=block_H, num_split=num_split)
    ins = make_inputs(batch, heads, seqlen_kv, dim, pe_dim, device)
    out = kernel(*ins)
    torch.testing.assert_close(out.float(), ref_program(*ins).float(), atol=2e-2, rtol=2e-2)
    print(f"MLA decode ({target}): matches the reference")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--seqlen_kv", type=int, default=300)
    a = ap.parse_args()
    main(a.batch, a.heads, a.seqlen_kv)
