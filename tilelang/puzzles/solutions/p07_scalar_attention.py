"""Reference solution of puzzle 7 (scalar flash attention)."""
import tilelang.language as T


def scalar_attention(B, S, block_Q=16, block_K=32, dtype="float32"):
    @T.prim_func
    def kernel(Q: T.Tensor((B, S), dtype), K: T.Tensor((B, S), dtype), V: T.Tensor((B, S), dtype),
               O: T.Tensor((B, S), dtype)):
        with T.Kernel(T.ceildiv(S, block_Q), B, threads=128) as (bx, b):
            q = T.alloc_fragment((block_Q,), dtype)
            k = T.alloc_fragment((block_K,), dtype)
            v = T.alloc_fragment((block_K,), dtype)
            scores = T.alloc_fragment((block_Q, block_K), dtype)
            run_max = T.alloc_fragment((block_Q,), dtype)
            new_max = T.alloc_fragment((block_Q,), dtype)
            run_sum = T.alloc_fragment((block_Q,), dtype)
            acc = T.alloc_fragment((block_Q,), dtype)
            part = T.alloc_fragment((block_Q,), dtype)
            T.copy(Q[b, bx * block_Q], q)
            T.fill(run_max, -T.infinity(dtype))
            T.clear(run_sum)
            T.clear(acc)
            for t in T.serial(T.ceildiv(S, block_K)):
                T.copy(K[b, t * block_K], k)
                T.copy(V[b, t * block_K], v)
                for i, j in T.Parallel(block_Q, block_K):
                    scores[i, j] = T.if_then_else(t * block_K + j < S, q[i] * k[j], -T.infinity(dtype))
                T.reduce_max(scores, new_max, dim=1)
                for i in T.Parallel(block_Q):
                    new_max[i] = T.max(new_max[i], run_max[i])
                    # rescale what was summed under the old maximum
                    run_sum[i] = run_sum[i] * T.exp(run_max[i] - new_max[i])
                    acc[i] = acc[i] * T.exp(run_max[i] - new_max[i])
                    run_max[i] = new_max[i]
                for i, j in T.Parallel(block_Q, block_K):
                    scores[i, j] = T.exp(scores[i, j] - run_max[i])
                T.reduce_sum(scores, part, dim=1)
                for i in T.Parallel(block_Q):
                    run_sum[i] += part[i]
                for i, j in T.Parallel(block_Q, block_K):
                    scores[i, j] = scores[i, j] * v[j]
                T.reduce_sum(scores, part, dim=1)
                for i in T.Parallel(block_Q):
                    acc[i] += part[i]
            for i in T.Parallel(block_Q):
                acc[i] = acc[i] / run_sum[i]
            T.copy(acc, O[b, bx * block_Q])
    return kernel
