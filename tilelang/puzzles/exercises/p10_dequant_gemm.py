"""Puzzle 10: GEMM with 4-bit weights (dequantize on the fly)
==========================================================

Large models store weights in 4 bits to save memory and bandwidth. Here the weight matrix W of
shape (N, K) comes packed two values per byte: Wq has shape (N, K / 2), uint8, and

    byte Wq[n, k // 2] holds W's entry (n, k) in its low 4 bits when k is even, high 4 bits when odd
    each 4-bit value q (0..15) stands for (q - 8) * Scale[n]      (Scale: (N,) float16)

Write C = A @ W^T: C[m, n] = sum over k of A[m, k] * W[n, k], for A of shape (M, K) float16,
with C in float32.

The idea. Never build W in global memory: that would cost the bandwidth the packing saved. A
block loads the packed bytes of its (block_N, block_K) slice of W into shared memory, unpacks them
in a `T.Parallel` loop into a float16 shared tile (shifts `>>`, masks `& 15`, `T.cast`), and feeds
that tile to `T.gemm(a, w, c, transpose_B=True)` (w is stored n-major, hence the transpose). The
rest is puzzle 8.

K is a fixed even number here (K // 2 is the packed width); M and N are symbolic.

Check it:  python -m tilelang.puzzles check 10
"""
import tilelang.language as T


def dequant_gemm(M, N, K=80, block_M=32, block_N=32, block_K=32, dtype="float16", accum_dtype="float32"):
    """Return a @T.prim_func `kernel(A: T.Tensor((M, K), dtype), Wq: T.Tensor((N, K // 2), "uint8"),
    Scale: T.Tensor((N,), dtype), C: T.Tensor((M, N), accum_dtype))`."""
    raise NotImplementedError("puzzle 10: write the dequantizing GEMM kernel")
