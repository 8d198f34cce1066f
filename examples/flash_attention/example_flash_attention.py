"""FlashAttention forward (multi-head, fp16 in / fp32 accumulate).

    O = softmax(Q K^T / sqrt(D) + mask) V

Layouts: "bhsd" ([batch, heads, seq, dim]) or "bshd" ([batch, seq, heads, dim]).
With `is_causal`, query i may attend to keys j <= i + (seq_kv - seq_q), i.e. the
mask is aligned to the bottom-right corner as in FlashAttention-2.

Each block owns `block_M` queries of one (batch, head) and streams the keys in
blocks of `block_N` with an online softmax kept in base 2 (scores are scaled by
log2(e) / sqrt(D) so that `exp2` can be used).
"""
import argparse
import math
import os

import torch

import tilelang
import tilelang.language as T


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


def ref_program(Q, K, V, is_causal=False, layout="bhsd"):
    q, k, v = Q.float(), K.float(), V.float()
    if layout == "bshd":
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    seq_q, seq_kv, dim = q.shape[2], k.shape[2], q.shape[3]
    scores = q @ k.transpose(-1, -2) / math.sqrt(dim)
    if is_causal:
        visible = torch.ones(seq_q, seq_kv, dtype=torch.bool, device=q.device).tril(seq_kv - seq_q)
        scores = scores.masked_fill(~visible, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v
    if layout == "bshd":
        out = out.transpose(1, 2)
    return out.contiguous().to(Q.dtype)


def make_inputs(batch, heads, seq_q, seq_kv, dim, layout="bhsd", dtype=torch.float16, device=None):
    device = device or default_device()
    if layout == "bhsd":
        q_shape, kv_shape = (batch, heads, seq_q, dim), (batch, heads, seq_kv, dim)
    else:
        q_shape, kv_shape = (batch, seq_q, heads, dim), (batch, seq_kv, heads, dim)
    q = torch.randn(q_shape, device=device).to(dtype)
    k = torch.randn(kv_shape, device=device).to(dtype)
    v = torch.randn(kv_shape, device=device).to(dtype)
    return q, k, v


def default_device():
    if os.environ.get("TILELANG_DEFAULT_TARGET", "auto") != "cpu" and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def main(batch=1, heads=2, seq_q=256, seq_kv=256, dim=64, is_causal=False, layout="bhsd", bench=True):
    kernel = flash_attention(batch, heads, seq_q, seq_kv, dim, is_causal, layout)
    q, k, v = make_inputs(batch, heads, seq_q, seq_kv, dim, layout)
    out = kernel(q, k, v)
    torch.testing.assert_close(out, ref_program(q, k, v, is_causal, layout), rtol=1e-2, atol=1e-2)
    print(f"FlashAttention ({layout}, causal={is_causal}) matches torch.")

    profiler = kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)
    profiler.assert_allclose(lambda q, k, v: ref_program(q, k, v, is_causal, layout), rtol=1e-2, atol=1e-2)
    if bench:
        flops = 4.0 * batch * heads * seq_q * seq_kv * dim * (0.5 if is_causal else 1.0)
        latency = profiler.do_bench(warmup=1, rep=3)
        print(f"Latency: {latency:.3f} ms ({flops / latency * 1e-9:.3f} TFLOPS)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--seq_q", type=int, default=256)
    parser.add_argument("--seq_kv", type=int, default=256)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--is_causal", action="store_true")
    parser.add_argument("--layout", choices=["bhsd", "bshd"], default="bhsd")
    args = parser.parse_args()
    main(args.batch, args.heads, args.seq_q, args.seq_kv, args.dim, args.is_causal, args.layout)
