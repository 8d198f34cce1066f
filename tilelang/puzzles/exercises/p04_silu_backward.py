"""Puzzle 4: A backward op — the gradient of SiLU
===============================================

SiLU is the activation y = x * sigmoid(x). Training needs its backward pass: given the input X
and the gradient dY of the loss with respect to Y, compute the gradient with respect to X:

    s = 1 / (1 + exp(-x))
    dX = dY * s * (1 + x * (1 - s))          (element by element, X and dY of shape (M, N))

The idea. Backward passes of element-wise ops are element-wise too, but they read more than one
tensor and recompute forward values (here s) instead of storing them: recomputing is cheaper than
another trip to memory. Tile the (M, N) matrices as in puzzle 3, load the X and dY tiles, compute
with `T.exp`, store dX.

Inside a `T.Parallel` body you may name intermediate values with plain Python assignments
(`s = 1.0 / (1.0 + T.exp(-x[i, j]))`).

Check it:  python -m tilelang.puzzles check 4
"""
import tilelang.language as T


def silu_backward(M, N, block_M=16, block_N=32, dtype="float32"):
    """Return a @T.prim_func `kernel(X: T.Tensor((M, N), dtype), dY: T.Tensor((M, N), dtype),
    dX: T.Tensor((M, N), dtype))`."""
    raise NotImplementedError("puzzle 4: write the SiLU backward kernel")
