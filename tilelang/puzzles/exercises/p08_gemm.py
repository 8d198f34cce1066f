"""Puzzle 8: GEMM on tensor cores
==============================

Write C = A @ B for A of shape (M, K) and B of shape (K, N) in float16, accumulating and returning
float32.

The idea. Each block computes a block_M x block_N tile of C. That tile needs a band of block_M
rows of A and a band of block_N columns of B, both K long; the block walks along K in steps of
block_K, loads an A tile (block_M, block_K) and a B tile (block_K, block_N) into shared memory and
multiplies them into an accumulator fragment:

    T.gemm(a_shared, b_shared, c_fragment)      # c += a @ b, on the tensor cores of a GPU

`T.Pipelined(n, num_stages=2)` is a sequential loop whose copies for the next steps overlap the
math of the current one (on a GPU); the result is that of a plain loop. Clear the accumulator
first (`T.clear`), store it once at the end.

Ragged edges: the A and B tiles past K read zeros, which add nothing to the products; rows and
columns past M and N are skipped by the final store.

Check it:  python -m tilelang.puzzles check 8
"""
import tilelang.language as T


def gemm(M, N, K, block_M=32, block_N=32, block_K=32, dtype="float16", accum_dtype="float32"):
    """Return a @T.prim_func `kernel(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
    C: T.Tensor((M, N), accum_dtype))` with C = A @ B."""
    raise NotImplementedError("puzzle 8: write the GEMM kernel")
