"""Puzzle 2: Vector add
======================

Write C[i] = A[i] + B[i] for every i < N.

The idea. Puzzle 1 moved tiles; now the block computes on them. A *fragment*
(`T.alloc_fragment(shape, dtype)`) is a tile held in the registers of the block's threads: the
compiler decides which thread holds which element. To compute on every element of a tile, write

    for i in T.Parallel(block_N):
        a[i] = a[i] + b[i]

`T.Parallel` is a loop whose iterations the block's threads share (and vectorize); its body
describes one element.

So: load a tile of A and a tile of B into fragments, add them in a `T.Parallel` loop, store the
result tile to C. The edge needs no care beyond what `T.copy` does (zeros in, nothing written
out of bounds).

Check it:  python -m tilelang.puzzles check 2
"""
import tilelang.language as T


def vector_add(N, block_N=64, dtype="float32"):
    """Return a @T.prim_func `kernel(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype),
    C: T.Tensor((N,), dtype))` with C = A + B."""
    raise NotImplementedError("puzzle 2: write the vector add kernel")
