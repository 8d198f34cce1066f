"""A lightning-indexer kernel (deepseek_v32 fp8_lighting_indexer's shape of computation):
scores of block_Q queries x H heads against block_N keys, relu, weighted per head, summed
over the heads through a `T.reshape` of the score accumulator, scaled per key."""
import tilelang.language as T


def indexer(S=64, SKV=512, H=32, D=64, block_N=256, block_Q=4, threads=512, dtype="float8_e4m3fn", stages=2):
    QH = block_Q * H

    @T.prim_func
    def k(Q: T.Tensor((S * H, D), dtype), K: T.Tensor((SKV, D), dtype), Scale: T.Tensor((SKV,), "float32"),
          W: T.Tensor((S, H), "float32"), Out: T.Tensor((S, SKV), "float32")):
        with T.Kernel(S // block_Q, threads=threads) as bx:
            q = T.alloc_shared((QH, D), dtype)
            kv = T.alloc_shared((block_N, D), dtype)
            scale = T.alloc_fragment((block_N,), "float32")
            score = T.alloc_fragment((block_N, QH), "float32")
            per_head = T.reshape(score, (block_N, block_Q, H))
            logits = T.alloc_fragment((block_N, block_Q), "float32")
            w = T.alloc_fragment((block_Q, H), "float32")
            T.copy(Q[bx * QH, 0], q)
            T.copy(W[bx * block_Q, 0], w)
            for n in T.Pipelined(SKV // block_N, num_stages=stages):
                T.copy(K[n * block_N, 0], kv)
                T.copy(Scale[n * block_N], scale)
                T.gemm(kv, q, score, transpose_B=True, clear_accum=True, policy=T.GemmWarpPolicy.FullCol)
                for i, b, h in T.Parallel(block_N, block_Q, H):
                    per_head[i, b, h] = T.max(per_head[i, b, h], 0) * w[b, h] * scale[i]
                T.reduce_sum(per_head, logits, dim=-1, clear=True)
                for b, i in T.Parallel(block_Q, block_N):
                    Out[bx * block_Q + b, n * block_N + i] = logits[i, b]
    return k


def indexer_reference(q, kv, scale, w, H):
    """torch: q (S * H, D), kv (SKV, D), scale (SKV,), w (S, H) -> (S, SKV) float32."""
    import torch
    S = w.shape[0]
    score = torch.einsum("shd,nd->shn", q.float().view(S, H, -1), kv.float())
    return (score.relu() * w[:, :, None]).sum(1) * scale[None, :]
