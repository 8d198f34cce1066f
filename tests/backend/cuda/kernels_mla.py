"""MLA decode kernels in the shape of the published deepseek_mla decode example (one
latent KV head, a 64-head block, the latent part of width `dim` and the rope part of width
`pe_dim`, online softmax over a pipelined KV loop, both products on the tensor cores), and
a torch reference. Shared by the plan/SASS checks and the GPU tests."""
import tilelang
import tilelang.language as T


def mla_decode_no_split(batch, heads, seqlen_kv, dim, pe_dim, block_H=64, block_N=64, num_stages=2,
                        threads=256, s_in_shared=True):
    """O[b, h] = softmax((Q[b,h] KV[b]^T + Q_pe[b,h] K_pe[b]^T) / sqrt(dim + pe_dim)) KV[b].
    `s_in_shared`: the probabilities reach the second gemm through shared memory (the
    published no-split kernel); otherwise as a fp16 fragment (its split kernel)."""
    log2e_scale = (dim + pe_dim) ** -0.5 * 1.4426950408889634
    f16, f32 = T.float16, T.float32

    @T.prim_func
    def mla(Q: T.Tensor([batch, heads, dim], f16), Q_pe: T.Tensor([batch, heads, pe_dim], f16),
            KV: T.Tensor([batch, seqlen_kv, 1, dim], f16), K_pe: T.Tensor([batch, seqlen_kv, 1, pe_dim], f16),
            Out: T.Tensor([batch, heads, dim], f16)):
        with T.Kernel(heads // block_H, batch, threads=threads) as (hb, b):
            q_s = T.alloc_shared([block_H, dim], f16)
            qpe_s = T.alloc_shared([block_H, pe_dim], f16)
            kv_s = T.alloc_shared([block_N, dim], f16)
            kpe_s = T.alloc_shared([block_N, pe_dim], f16)
            p_s = T.alloc_shared([block_H, block_N], f16)
            o_s = T.alloc_shared([block_H, dim], f16)
            s = T.alloc_fragment([block_H, block_N], f32)
            p = T.alloc_fragment([block_H, block_N], f16)
            o = T.alloc_fragment([block_H, dim], f32)
            m = T.alloc_fragment([block_H], f32)
            m_prev = T.alloc_fragment([block_H], f32)
            alpha = T.alloc_fragment([block_H], f32)
            row_sum = T.alloc_fragment([block_H], f32)
            l = T.alloc_fragment([block_H], f32)
            T.copy(Q[b, hb * block_H:(hb + 1) * block_H, :], q_s)
            T.copy(Q_pe[b, hb * block_H:(hb + 1) * block_H, :], qpe_s)
            T.fill(o, 0)
            T.fill(l, 0)
            T.fill(m, -T.infinity(f32))
            for k in T.Pipelined(T.ceildiv(seqlen_kv, block_N), num_stages=num_stages):
                T.copy(KV[b, k * block_N:(k + 1) * block_N, 0, :], kv_s)
                T.copy(K_pe[b, k * block_N:(k + 1) * block_N, 0, :], kpe_s)
                T.gemm(q_s, kv_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullCol, clear_accum=True)
                T.gemm(qpe_s, kpe_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
                T.copy(m, m_prev)
                T.fill(m, -T.infinity(f32))
                T.reduce_max(s, m, dim=1, clear=False)
                for i in T.Parallel(block_H):
                    m[i] = T.max(m[i], m_prev[i])
                for i in T.Parallel(block_H):
                    alpha[i] = T.exp2((m_prev[i] - m[i]) * log2e_scale)
                for i, j in T.Parallel(block_H, block_N):
                    s[i, j] = T.exp2((s[i, j] - m[i]) * log2e_scale)
                T.reduce_sum(s, row_sum, dim=1)
                for i in T.Parallel(block_H):
                    l[i] = l[i] * alpha[i] + row_sum[i]
                for i, j in T.Parallel(block_H, dim):
                    o[i, j] *= alpha[i]
                if s_in_shared:
                    T.copy(s, p_s)
                    T.gemm(p_s, kv_s, o, policy=T.GemmWarpPolicy.FullCol)
                else:
                    T.copy(s, p)
                    T.gemm(p, kv_s, o, policy=T.GemmWarpPolicy.FullCol)
            for i, j in T.Parallel(block_H, dim):
                o[i, j] /= l[i]
            T.copy(o, o_s)
            T.copy(o_s, Out[b, hb * block_H:(hb + 1) * block_H, :])

    return mla


def reference(q, q_pe, kv, k_pe):
    """The same in float32 torch: [b, h, dim] out of the four inputs."""
    import torch
    qf = torch.cat([q, q_pe], -1).float()                  # b h (d + pe)
    kf = torch.cat([kv, k_pe], -1)[:, :, 0].float()        # b s (d + pe)
    scores = torch.einsum("bhd,bsd->bhs", qf, kf) / (qf.shape[-1] ** 0.5)
    return torch.einsum("bhs,bsd->bhd", scores.softmax(-1), kv[:, :, 0].float())
