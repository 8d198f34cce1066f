"""Tile programs written for CDNA by the HIP backend tests: the shapes an AMD port of a
kernel uses, beside the repository's examples (tests/examples/)."""
import tilelang.language as T


def mla_decode_registers(batch, heads, seqlen_kv, dim, pe_dim, block_H=64, block_N=32, num_split=2, threads=256,
                         dtype="float16", accum_dtype="float32"):
    """MLA decode (examples/deepseek_mla/example_mla_decode.py) in the form its AMD port
    takes: the 64 query heads of a block stay in registers (fragments read as the MFMA A
    operand) instead of LDS, so that the latent KV tile of 512 columns fits the 64 KiB of a
    CDNA block; P goes to the second gemm from registers (FullRow: a wave owns whole rows)."""
    scale = (1.0 / (dim + pe_dim)) ** 0.5 * 1.44269504
    per_split = -(-seqlen_kv // num_split)
    per_split = -(-per_split // block_N) * block_N
    num_split = -(-seqlen_kv // per_split)
    blocks_per_split = per_split // block_N

    @T.prim_func
    def mla_regs(
            Q: T.Tensor([batch, heads, dim], dtype),
            Q_pe: T.Tensor([batch, heads, pe_dim], dtype),
            KV: T.Tensor([batch, seqlen_kv, dim], dtype),
            K_pe: T.Tensor([batch, seqlen_kv, pe_dim], dtype),
            Output: T.Tensor([batch, heads, dim], dtype),
    ):
        lse_ws = T.alloc_global([batch, heads, num_split], accum_dtype)
        out_ws = T.alloc_global([batch, heads, num_split, dim], accum_dtype)

        with T.Kernel(heads // block_H, batch, num_split, threads=threads) as (hb, b, s):
            Q_frag = T.alloc_fragment([block_H, dim], dtype)
            Q_pe_frag = T.alloc_fragment([block_H, pe_dim], dtype)
            KV_shared = T.alloc_shared([block_N, dim], dtype)
            K_pe_shared = T.alloc_shared([block_N, pe_dim], dtype)
            acc_s = T.alloc_fragment([block_H, block_N], accum_dtype)
            P = T.alloc_fragment([block_H, block_N], dtype)
            acc_o = T.alloc_fragment([block_H, dim], accum_dtype)
            m_i = T.alloc_fragment([block_H], accum_dtype)
            m_prev = T.alloc_fragment([block_H], accum_dtype)
            row_sum = T.alloc_fragment([block_H], accum_dtype)
            l_i = T.alloc_fragment([block_H], accum_dtype)

            T.copy(Q[b, hb * block_H:(hb + 1) * block_H, :], Q_frag)
            T.copy(Q_pe[b, hb * block_H:(hb + 1) * block_H, :], Q_pe_frag)
            T.fill(acc_o, 0)
            T.fill(l_i, 0)
            T.fill(m_i, -T.infinity(accum_dtype))

            for kb in T.Pipelined(blocks_per_split, num_stages=2):
                k0 = s * per_split + kb * block_N
                T.copy(KV[b, k0:k0 + block_N, :], KV_shared)
                T.copy(K_pe[b, k0:k0 + block_N, :], K_pe_shared)
                T.gemm(Q_frag, KV_shared, acc_s, transpose_B=True, clear_accum=True,
                       policy=T.GemmWarpPolicy.FullRow)
                T.gemm(Q_pe_frag, K_pe_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
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
                T.copy(acc_s, P)
                T.gemm(P, KV_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

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

    return mla_regs
