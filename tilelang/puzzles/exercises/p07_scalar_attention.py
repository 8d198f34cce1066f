"""Puzzle 7: Scalar flash attention
=================================

Attention with a head dimension of one, for B independent sequences of length S:

    O[b, i] = sum over j of softmax_j(Q[b, i] * K[b, j]) * V[b, j]

(softmax over j, as in puzzle 6, of the scores Q[b, i] * K[b, j]).

The idea. Written naively this builds an S x S matrix of scores per sequence. *Flash attention*
never does: a block takes block_Q queries, walks over the keys tile by tile, and keeps per query
the running maximum m, the running sum l of exponentials and the running weighted sum acc of V.
For each key tile:

    s[i, j] = q[i] * k[j]                     (-infinity where the key is past S)
    m_new   = max(m, max_j s[i, j])
    scale   = exp(m - m_new)
    l       = l * scale + sum_j exp(s[i, j] - m_new)
    acc     = acc * scale + sum_j exp(s[i, j] - m_new) * v[j]
    m       = m_new

and at the end O = acc / l. This is puzzle 6's online softmax with a weighted sum carried along.
Use a two-dimensional grid: query tiles along one axis, the sequence index b along the other
(`T.copy(Q[b, i0], q)` reads the block_Q queries of row b from i0).

Check it:  python -m tilelang.puzzles check 7
"""
import tilelang.language as T


def scalar_attention(B, S, block_Q=16, block_K=32, dtype="float32"):
    """Return a @T.prim_func `kernel(Q, K, V, O)`, all four `T.Tensor((B, S), dtype)`."""
    raise NotImplementedError("puzzle 7: write the scalar flash attention kernel")
