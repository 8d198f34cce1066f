"""Puzzle 1: Copy
================

Write a kernel that copies a vector: B[i] = A[i] for every i < N.

The idea. A TileLang kernel runs as a grid of *blocks*. `with T.Kernel(g, threads=t) as bx:`
launches g blocks of t threads, and `bx` is the index of the block running the body. Each block
works on one *tile*: here the block_N elements starting at bx * block_N. The whole grid must
cover the vector, so you need ceil(N / block_N) blocks: `T.ceildiv(N, block_N)`.

Tiles live in fast on-chip memory. `T.alloc_shared((block_N,), dtype)` gives the block a tile
in shared memory; `T.copy(src, dst)` moves a whole tile between global memory and a tile, and the
block's threads share that work. `T.copy(A[start], tile)` reads the tile that starts at `start`
(its length is the tile's length).

The ragged edge. N is not a multiple of block_N: the last tile hangs over the end of A. A copy
from global memory reads zeros outside the tensor, and a copy into global memory skips elements
outside it, so tile copies are safe at the edge without an `if`.

N is symbolic: the checker compiles your kernel once and runs it on several N, so write it for
any N (use `T.ceildiv`, not Python arithmetic that needs a number).

Check it:  python -m tilelang.puzzles check 1
"""
import tilelang.language as T


def copy(N, block_N=64, dtype="float32"):
    """Return a @T.prim_func `kernel(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype))`
    that copies A into B, one block per tile of block_N elements."""
    # Outline:
    #   @T.prim_func
    #   def kernel(A: ..., B: ...):
    #       with T.Kernel(<how many blocks?>, threads=64) as bx:
    #           tile = T.alloc_shared(...)
    #           T.copy(A[<this block's start>], tile)
    #           T.copy(tile, B[<this block's start>])
    #   return kernel
    raise NotImplementedError("puzzle 1: write the copy kernel")
