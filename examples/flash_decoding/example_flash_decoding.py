"""Split-KV decode attention (FlashDecoding) with grouped-query heads.

    Q: [batch, heads, dim]                 (one new token per sequence)
    K, V: [batch, seqlen_kv, kv_heads, dim]
    O: [batch, heads, dim],  O[b, h] = softmax(Q[b, h] K[b, :, g]^T / sqrt(dim)) V[b, :, g]
    with g = h // (heads // kv_heads).

One `T.prim_func`, two kernels:
  1. split: grid (kv_heads, batch, num_split). Each block takes the query heads
     that share one KV head (rows of a gemm tile) and one slice of the KV
     sequence, and writes the normalised partial output plus its base-2
     log-sum-exp into global workspaces made with `T.alloc_global`.
  2. combine: grid (heads, batch). Merges the partial results:
     O = sum_s 2^(lse_s - lse) * O_s,   lse = log2(sum_s 2^lse_s).
"""
import argparse
import math
import os

import torch

import tilelang
import tilelang.language as T


def split_plan(seqlen_kv, num_split, block_N):
    """Keys per split (a multiple of block_N) and the number of non-empty splits."""
    per_split = -(-seqlen_kv // num_split)
    per_split = -(-per_split // block_N) * block_N
    return per_split, -(-seqlen_kv // per_split)


@tilelang.jit(out_idx=[3])
def flash_decoding(batch, heads, kv_heads, seqlen_kv, dim, num_split=4, block_N=64, block_H=None, threads=None,
                   dtype=T.float16, accum_dtype=T.float32):
    assert heads % kv_heads == 0
    groups = heads // kv_heads
    # Rows of the per-block query tile: the heads of one KV group, padded to a
    # multiple of 16 (the row granularity of tensor-core gemms); padded rows are
    # computed but never stored.
    block_H = max(16, -(-groups // 16) * 16) if block_H is None else block_H
    assert block_H >= groups
    # One warp per 16 query rows keeps whole rows inside a warp for both gemms.
    threads = min(256, max(32, 2 * block_H)) if threads is None else threads
    scale = (1.0 / dim)**0.5 * 1.44269504  # 1/sqrt(dim) * log2(e)
    per_split, num_split = split_plan(seqlen_kv, num_split, block_N)
    blocks_per_split = per_split // block_N

    @T.prim_func
    def flash_decode(
            Q: T.Tensor([batch, heads, dim], dtype),
            K: T.Tensor([batch, seqlen_kv, kv_heads, dim], dtype),
            V: T.Tensor([batch, seqlen_kv, kv_heads, dim], dtype),
            Output: T.Tensor([batch, heads, dim], dtype),
    ):
        lse_ws = T.alloc_global([batch, heads, num_split], accum_dtype)
        out_ws = T.alloc_global([batch, heads, num_split, dim], accum_dtype)

        # ---- kernel 1: one block per (kv head, batch, split) -------------------
        with T.Kernel(kv_heads, batch, num_split, threads=threads) as (g, b, s):
            Q_shared = T.alloc_shared([block_H, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            acc_s = T.alloc_fragment([block_H, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_H, block_N], dtype)
            acc_o = T.alloc_fragment([block_H, dim], accum_dtype)
            m_i = T.alloc_fragment([block_H], accum_dtype)
            m_prev = T.alloc_fragment([block_H], accum_dtype)
            alpha = T.alloc_fragment([block_H], accum_dtype)
            row_sum = T.alloc_fragment([block_H], accum_dtype)
            l_i = T.alloc_fragment([block_H], accum_dtype)

            T.copy(Q[b, g * groups:g * groups + block_H, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(l_i, 0)
            T.fill(m_i, -T.infinity(accum_dtype))

            for kb in T.Pipelined(blocks_per_split, num_stages=1):
                k_start = s * per_split + kb * block_N
                T.copy(K[b, k_start:k_start + block_N, g, :], K_shared)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.if_then_else(k_start + j < seqlen_kv, 0, -T.infinity(accum_dtype))
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)

                T.copy(m_i, m_prev)
                T.reduce_max(acc_s, m_i, dim=1, clear=False)
                for i in T.Parallel(block_H):
                    alpha[i] = T.exp2(m_prev[i] * scale - m_i[i] * scale)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m_i[i] * scale)
                T.reduce_sum(acc_s, row_sum, dim=1)
                for i in T.Parallel(block_H):
                    l_i[i] = l_i[i] * alpha[i] + row_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] *= alpha[i]
                T.copy(V[b, k_start:k_start + block_N, g, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

            for i, j in T.Parallel(block_H, dim):
                acc_o[i, j] /= l_i[i]
            for i in T.Parallel(block_H):
                l_i[i] = T.log2(l_i[i]) + m_i[i] * scale
            # Only the first `groups` rows belong to this KV head.
            for i, d in T.Parallel(block_H, dim):
                if i < groups:
                    out_ws[b, g * groups + i, s, d] = acc_o[i, d]
            for i in T.Parallel(block_H):
                if i < groups:
                    lse_ws[b, g * groups + i, s] = l_i[i]

        # ---- kernel 2: one block per (head, batch) ------------------------------
        with T.Kernel(heads, batch, threads=threads) as (hid, bid):
            o_part = T.alloc_fragment([dim], accum_dtype)
            o_acc = T.alloc_fragment([dim], accum_dtype)
            lse_max = T.alloc_local([1], accum_dtype)
            lse_sum = T.alloc_local([1], accum_dtype)
            weight = T.alloc_local([1], accum_dtype)

            lse_max[0] = -T.infinity(accum_dtype)
            for si in T.serial(num_split):
                lse_max[0] = T.max(lse_max[0], lse_ws[bid, hid, si])
            T.clear(lse_sum)
            for si in T.serial(num_split):
                lse_sum[0] += T.exp2(lse_ws[bid, hid, si] - lse_max[0])
            lse_sum[0] = T.log2(lse_sum[0]) + lse_max[0]

            T.clear(o_acc)
            for si in T.serial(num_split):
                T.copy(out_ws[bid, hid, si, :], o_part)
                weight[0] = T.exp2(lse_ws[bid, hid, si] - lse_sum[0])
                for d in T.Parallel(dim):
                    o_acc[d] += o_part[d] * weight[0]
            T.copy(o_acc, Output[bid, hid, :])

    return flash_decode


def ref_program(Q, K, V):
    batch, heads, dim = Q.shape
    kv_heads = K.shape[2]
    groups = heads // kv_heads
    q = Q.float()
    k = K.float().repeat_interleave(groups, dim=2)  # [b, s, heads, d]
    v = V.float().repeat_interleave(groups, dim=2)
    scores = torch.einsum("bhd,bshd->bhs", q, k) / math.sqrt(dim)
    out = torch.einsum("bhs,bshd->bhd", torch.softmax(scores, dim=-1), v)
    return out.to(Q.dtype)


def default_device():
    if os.environ.get("TILELANG_DEFAULT_TARGET", "auto") != "cpu" and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def main(batch=1, heads=8, kv_heads=2, seqlen_kv=256, dim=64, num_split=4, bench=True):
    kernel = flash_decoding(batch, heads, kv_heads, seqlen_kv, dim, num_split)
    device = default_device()
    q = torch.randn(batch, heads, dim, device=device).half()
    k = torch.randn(batch, seqlen_kv, kv_heads, dim, device=device).half()
    v = torch.randn(batch, seqlen_kv, kv_heads, dim, device=device).half()
    out = kernel(q, k, v)
    torch.testing.assert_close(out, ref_program(q, k, v), rtol=1e-2, atol=1e-2)
    print("Flash decoding matches torch.")

    profiler = kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)
    profiler.assert_allclose(ref_program, rtol=1e-2, atol=1e-2)
    if bench:
        print(f"Latency: {profiler.do_bench(warmup=1, rep=3):.3f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--kv_heads", type=int, default=2)
    parser.add_argument("--seqlen_kv", type=int, default=256)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--num_split", type=int, default=4)
    args = parser.parse_args()
    main(args.batch, args.heads, args.kv_heads, args.seqlen_kv, args.dim, args.num_split)
