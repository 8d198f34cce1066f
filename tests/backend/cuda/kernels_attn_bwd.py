"""FlashAttention backward (the published examples' algorithm: one block per 128 or 64 keys,
a pipelined loop over query tiles, dQ accumulated atomically in float32), and its torch
reference. Shared by the CPU plan / SASS tests and the GPU runs of the CUDA backend."""
import tilelang.language as T

LOG2E = 1.44269504


def attention_bwd(batch, heads, seq, dim, block_M=128, block_N=32, threads=256, stages=2, causal=True):
    """dQ (float32, accumulated: pass zeros), dK, dV of softmax(Q K^T * dim^-0.5) V, given
    lse (log2 units: log2 sum exp2(s * scale)) and Delta = rowsum(O * dO)."""
    sm_scale = dim ** -0.5
    scale = sm_scale * LOG2E
    shape = [batch, heads, seq, dim]
    dt, acc = "float16", "float32"

    @T.prim_func
    def attn_bwd(Q: T.Tensor(shape, dt), K: T.Tensor(shape, dt), V: T.Tensor(shape, dt),
                 dO: T.Tensor(shape, dt), lse: T.Tensor([batch, heads, seq], acc),
                 Delta: T.Tensor([batch, heads, seq], acc), dQ: T.Tensor(shape, acc),
                 dK: T.Tensor(shape, dt), dV: T.Tensor(shape, dt)):
        with T.Kernel(heads, T.ceildiv(seq, block_M), batch, threads=threads) as (bh, bm, bb):
            k_s = T.alloc_shared([block_M, dim], dt)
            v_s = T.alloc_shared([block_M, dim], dt)
            q_s = T.alloc_shared([block_N, dim], dt)
            do_s = T.alloc_shared([block_N, dim], dt)
            ds_s = T.alloc_shared([block_M, block_N], dt)
            lse_s = T.alloc_shared([block_N], acc)
            delta_s = T.alloc_shared([block_N], acc)
            p = T.alloc_fragment([block_M, block_N], acc)       # P^T: keys x queries
            dp = T.alloc_fragment([block_M, block_N], acc)
            p16 = T.alloc_fragment([block_M, block_N], dt)
            ds16 = T.alloc_fragment([block_M, block_N], dt)
            dv = T.alloc_fragment([block_M, dim], acc)
            dk = T.alloc_fragment([block_M, dim], acc)
            dq = T.alloc_fragment([block_N, dim], acc)
            T.copy(K[bb, bh, bm * block_M:(bm + 1) * block_M, :], k_s)
            T.copy(V[bb, bh, bm * block_M:(bm + 1) * block_M, :], v_s)
            T.clear(dv)
            T.clear(dk)
            first = T.floordiv(bm * block_M, block_N) if causal else 0
            for t in T.Pipelined(first, T.ceildiv(seq, block_N), num_stages=stages):
                T.copy(Q[bb, bh, t * block_N:(t + 1) * block_N, :], q_s)
                T.clear(p)
                T.gemm(k_s, q_s, p, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(lse[bb, bh, t * block_N:(t + 1) * block_N], lse_s)
                for i, j in T.Parallel(block_M, block_N):
                    p[i, j] = T.exp2(p[i, j] * scale - lse_s[j])
                if causal:
                    for i, j in T.Parallel(block_M, block_N):
                        p[i, j] = T.if_then_else(bm * block_M + i <= t * block_N + j, p[i, j], 0)
                T.copy(dO[bb, bh, t * block_N:(t + 1) * block_N, :], do_s)
                T.clear(dp)
                T.gemm(v_s, do_s, dp, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(p, p16)
                T.gemm(p16, do_s, dv, policy=T.GemmWarpPolicy.FullRow)          # dV += P^T dO
                T.copy(Delta[bb, bh, t * block_N:(t + 1) * block_N], delta_s)
                for i, j in T.Parallel(block_M, block_N):
                    ds16[i, j] = p[i, j] * (dp[i, j] - delta_s[j]) * sm_scale
                T.gemm(ds16, q_s, dk, policy=T.GemmWarpPolicy.FullRow)          # dK += dS^T Q
                T.copy(ds16, ds_s)
                T.clear(dq)
                T.gemm(ds_s, k_s, dq, transpose_A=True)                         # dQ = dS K
                T.atomic_add(dQ[bb, bh, t * block_N:(t + 1) * block_N, :], dq)
            T.copy(dv, dV[bb, bh, bm * block_M:(bm + 1) * block_M, :])
            T.copy(dk, dK[bb, bh, bm * block_M:(bm + 1) * block_M, :])
    return attn_bwd


def reference(q, k, v, do, causal):
    """(lse in log2 units, Delta, dQ, dK, dV) from torch autograd in float32."""
    import torch
    q, k, v = (x.detach().float().requires_grad_() for x in (q, k, v))
    s = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5
    if causal:
        n = q.shape[-2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    o = torch.softmax(s, -1) @ v
    o.backward(do.float())
    lse = torch.logsumexp(s, -1) * LOG2E
    delta = (o * do.float()).sum(-1)
    return lse.detach(), delta.detach(), q.grad, k.grad, v.grad
