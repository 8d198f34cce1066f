"""Puzzle 5: Reduction — row sums
===============================

Write S[i] = sum over j < N of A[i, j], for i < M.

The idea. Each block owns block_M rows. A row may be longer than one tile, so the block walks
along it tile by tile with a sequential loop, `for k in T.serial(T.ceildiv(N, block_N)):`, and
keeps a running total per row in a fragment.

`T.reduce_sum(tile, part, dim=1)` sums a (block_M, block_N) fragment along dimension 1 into a
(block_M,) fragment — a block-level operation: the threads cooperate, you write no loop over j.
Start the totals at zero (`T.clear`) and add each tile's part in a `T.Parallel(block_M)` loop.

The ragged edge: the last column tile reaches past N, but `T.copy` reads zeros there, and zeros do
not change a sum. (Puzzle 6 is not so lucky.)

Check it:  python -m tilelang.puzzles check 5
"""
import tilelang.language as T


def row_sum(M, N, block_M=8, block_N=32, dtype="float32"):
    """Return a @T.prim_func `kernel(A: T.Tensor((M, N), dtype), S: T.Tensor((M,), dtype))`."""
    raise NotImplementedError("puzzle 5: write the row sum kernel")
