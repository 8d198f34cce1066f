"""A ~100-line kernel for the language server tests (examples/flash_attention, without torch)."""
import tilelang
import tilelang.language as T


# tilelang: batch=1, heads=4, seq_q=256, seq_kv=256, dim=64
@tilelang.jit(out_idx=[3])
def flash_attention(batch, heads, seq_q, seq_kv, dim, is_causal=False, layout="bhsd", block_M=64, block_N=64,
                    num_stages=1, threads=128, dtype=T.float16, accum_dtype=T.float32):
    assert layout in ("bhsd", "bshd"), layout
    assert seq_kv >= seq_q or not is_causal, "causal attention needs seq_kv >= seq_q"
    scale = (1.0 / dim)**0.5 * 1.44269504  # 1/sqrt(D) * log2(e)
    past_len = seq_kv - seq_q
    if layout == "bhsd":
        q_shape, kv_shape = [batch, heads, seq_q, dim], [batch, heads, seq_kv, dim]
    else:
        q_shape, kv_shape = [batch, seq_q, heads, dim], [batch, seq_kv, heads, dim]
    bhsd = layout == "bhsd"

    @T.prim_func
    def flash_fwd(
            Q: T.Tensor(q_shape, dtype),
            K: T.Tensor(kv_shape, dtype),
            V: T.Tensor(kv_shape, dtype),
            Output: T.Tensor(q_shape, dtype),
    ):
        with T.Kernel(T.ceildiv(seq_q, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([block_M, dim], dtype)
            acc_s = T.alloc_fragment([block_M, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
            acc_o = T.alloc_fragment([block_M, dim], accum_dtype)
            m_i = T.alloc_fragment([block_M], accum_dtype)
            m_prev = T.alloc_fragment([block_M], accum_dtype)
            alpha = T.alloc_fragment([block_M], accum_dtype)
            row_sum = T.alloc_fragment([block_M], accum_dtype)
            l_i = T.alloc_fragment([block_M], accum_dtype)

            q_start = bx * block_M
            if bhsd:
                T.copy(Q[bz, by, q_start:q_start + block_M, :], Q_shared)
            else:
                T.copy(Q[bz, q_start:q_start + block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(l_i, 0)
            T.fill(m_i, -T.infinity(accum_dtype))

            # Causal blocks stop at the last key any query of this block can see.
            num_kv_blocks = (
                T.min(T.ceildiv(seq_kv, block_N), T.ceildiv(q_start + block_M + past_len, block_N))
                if is_causal else T.ceildiv(seq_kv, block_N))

            for kb in T.Pipelined(num_kv_blocks, num_stages=num_stages):
                k_start = kb * block_N
                if bhsd:
                    T.copy(K[bz, by, k_start:k_start + block_N, :], K_shared)
                else:
                    T.copy(K[bz, k_start:k_start + block_N, by, :], K_shared)

                # Seed the scores with the mask (0 = visible, -inf = hidden); the gemm adds Q K^T.
                if is_causal:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(q_start + i + past_len >= k_start + j, 0,
                                                     -T.infinity(accum_dtype))
                else:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(k_start + j < seq_kv, 0, -T.infinity(accum_dtype))
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)

                # Online softmax update.
                T.copy(m_i, m_prev)
                T.reduce_max(acc_s, m_i, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    alpha[i] = T.exp2(m_prev[i] * scale - m_i[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m_i[i] * scale)
                T.reduce_sum(acc_s, row_sum, dim=1)
                for i in T.Parallel(block_M):
                    l_i[i] = l_i[i] * alpha[i] + row_sum[i]
                T.copy(acc_s, acc_s_cast)

                # Rescale the running output, then add P @ V.
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= alpha[i]
                if bhsd:
                    T.copy(V[bz, by, k_start:k_start + block_N, :], V_shared)
                else:
                    T.copy(V[bz, k_start:k_start + block_N, by, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= l_i[i]
            T.copy(acc_o, O_shared)
            if bhsd:
                T.copy(O_shared, Output[bz, by, q_start:q_start + block_M, :])
            else:
                T.copy(O_shared, Output[bz, q_start:q_start + block_M, by, :])

    return flash_fwd
