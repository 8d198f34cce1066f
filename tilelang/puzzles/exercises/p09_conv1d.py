"""Puzzle 9: 1-D convolution as GEMMs
==================================

A batch of sequences X of shape (batch, L, C) (C channels per position) and filters W of shape
(KW, C, F) give, with no padding and stride 1, an output of shape (batch, L - KW + 1, F):

    O[b, l, f] = sum over t < KW and c < C of X[b, l + t, c] * W[t, c, f]

The idea. For one tap t, the sum over c is a matrix product: rows l..l+block_L-1 of X[b] shifted
down by t, times the (C, F) matrix W[t]. The convolution is the sum of KW such products, so a
block that owns an output tile (block_L positions, block_F filters) of one sequence b runs a loop
over t, loads the shifted X rows and the W[t] slice into shared memory, and accumulates them with
`T.gemm` — the same loop as puzzle 8, with taps in place of K steps. (This is the "implicit GEMM"
way convolution libraries work.)

A slice with a fixed index copies a lower-rank tile: `T.copy(X[b, r0:r0 + block_L, 0:C], x_shared)`
fills a (block_L, C) tile. Use a three-dimensional grid (filter tiles, position tiles, batch).

C, F and KW are fixed numbers here; batch and L are symbolic.

Check it:  python -m tilelang.puzzles check 9
"""
import tilelang.language as T


def conv1d(batch, L, C=32, F=64, KW=3, block_L=32, block_F=32, dtype="float16", accum_dtype="float32"):
    """Return a @T.prim_func `kernel(X: T.Tensor((batch, L, C), dtype), W: T.Tensor((KW, C, F), dtype),
    O: T.Tensor((batch, L - KW + 1, F), accum_dtype))`."""
    raise NotImplementedError("puzzle 9: write the convolution kernel")
