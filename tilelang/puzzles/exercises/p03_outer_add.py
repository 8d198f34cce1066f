"""Puzzle 3: Outer add (broadcasting)
===================================

Write C[i, j] = A[i] + B[j] for i < M, j < N: a matrix from two vectors.

The idea. The output is two-dimensional, so the grid is too:
`with T.Kernel(gx, gy, threads=128) as (bx, by):` launches gx * gy blocks. Give each block a
block_M x block_N tile of C: rows by * block_M onwards, columns bx * block_N onwards (the first
grid dimension usually walks the columns).

A block needs only block_M values of A and block_N values of B to fill its whole tile: load the
two small tiles once, then combine them in a two-dimensional `T.Parallel(block_M, block_N)` loop
(`for i, j in T.Parallel(...)`). This reuse of loaded data is the heart of every fast kernel.

`T.copy(tile, C[row0, col0])` stores a 2-D tile whose top-left corner is (row0, col0); parts
outside C are skipped.

Check it:  python -m tilelang.puzzles check 3
"""
import tilelang.language as T


def outer_add(M, N, block_M=16, block_N=32, dtype="float32"):
    """Return a @T.prim_func `kernel(A: T.Tensor((M,), dtype), B: T.Tensor((N,), dtype),
    C: T.Tensor((M, N), dtype))` with C[i, j] = A[i] + B[j]."""
    raise NotImplementedError("puzzle 3: write the outer add kernel")
