"""Puzzle 6: Softmax over rows
===========================

Write P[i, j] = exp(A[i, j] - m_i) / sum over j' of exp(A[i, j'] - m_i), with m_i the maximum of
row i (subtracting it keeps exp from overflowing; it does not change the result).

The idea. A row is longer than one tile, and softmax needs two things over the whole row before it
can write anything: its maximum and its sum of exponentials. The *online softmax* trick gets both
in one sweep: keep a running maximum m and a running sum l; for each new tile with maximum m_t,

    m_new = max(m, m_t)
    l     = l * exp(m - m_new) + sum_j exp(a_j - m_new)
    m     = m_new

(the factor rescales what was summed under the old maximum). A second sweep writes
exp(a - m) / l. Start m at -infinity (`T.fill(m, -T.infinity(dtype))`) and l at 0.

The ragged edge matters now: past N, `T.copy` reads zeros, and a zero may be larger than every
real element of the row. Replace those by -infinity before taking the maximum, e.g.
`tile[i, j] = T.if_then_else(k * block_N + j < N, tile[i, j], -T.infinity(dtype))`.
Useful: `T.reduce_max`, `T.reduce_sum`, `T.max`, `T.exp`.

Check it:  python -m tilelang.puzzles check 6
"""
import tilelang.language as T


def softmax(M, N, block_M=8, block_N=32, dtype="float32"):
    """Return a @T.prim_func `kernel(A: T.Tensor((M, N), dtype), P: T.Tensor((M, N), dtype))`."""
    raise NotImplementedError("puzzle 6: write the softmax kernel")
