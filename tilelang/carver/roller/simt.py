"""SIMT tile recommender for a memory-bound loop nest: an output over spatial axes, each
element reducing the input over reduction axes (none for an elementwise op). The input is
read in `axes` order, "S" spatial / "R" reduction, its last axis contiguous in memory.

Candidates. For each block of 64, 128, 256 or 512 threads and each vector width v of 1, 2,
4 or 8 elements (at most 16 bytes) on the contiguous axis, threads are dealt to the axes
from the contiguous one outwards, each axis taking at most its extent rounded up to a
power of two; the contiguous axis takes v elements per thread (threads left over when the
problem is smaller than the block go to the outermost axis and idle). A spatial axis's share is
`thread` and its tile `block` (threads x elements); a reduction axis's share is
`reduce_thread` (a tree reduction across those threads) and its tile per step `rstep`.
Reduction axes that get no threads are walked serially `rstep` = 1 at a time, except the
contiguous one which reads its v elements per thread per step.

Score (higher is better; the estimated fraction of the bandwidth peak, a product of factors
in (0, 1]):
  1. edge: useful / touched elements (padding of the tiles at the edges);
  2. waves: blocks / (slots * ceil(blocks / slots)), slots = SMs * blocks an SM holds
     (2048 threads, at most 32 blocks) -- memory-bound kernels want every slot busy;
  3. coalescing: min(1, c / 128), c the contiguous bytes a warp reads per access (threads
     of the warp along the contiguous axis x v x element bytes): a 128-byte line per access;
  4. vector: w / (w + 4), w = v x element bytes: fewer, wider load instructions;
  5. reduction: for reduce_thread t > 1, e / (e + log2(t)), e the elements each thread adds
     serially (the tree's steps against the useful work).
Ties go to fewer threads (less padding when nothing else differs), then the wider vector:
the order is total, so the result is deterministic."""
from __future__ import annotations

import math

from tilelang.carver.roller.hint import Hint

THREADS = (64, 128, 256, 512)
VECTORS = (1, 2, 4, 8)
MAX_THREADS_PER_SM = 2048
MAX_BLOCKS_PER_SM = 32


def _pow2_ceil(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _deal(axes, extents, threads, v):
    """Threads per axis, innermost first; the contiguous (last) axis counts v elements per
    thread against its extent."""
    share = [1] * len(axes)
    left = threads
    for i in reversed(range(len(axes))):
        room = _pow2_ceil(-(-extents[i] // (v if i == len(axes) - 1 else 1)))
        share[i] = min(left, room)
        left //= share[i]
        if left == 1:
            break
    return share, left


def recommend(arch, axes: str, extents, in_bits: int, topk: int) -> list[Hint]:
    n = len(axes)
    ranked, seen = [], set()
    for threads in THREADS:
        for v in VECTORS:
            if v * in_bits > 128 or (v > 1 and extents[-1] % v):
                continue
            share, left = _deal(axes, extents, threads, v)
            if left > 1:          # the problem is smaller than the block: the spare threads
                share[0] *= left  # go to the outermost axis and idle (edge counts the waste)
            if (tuple(share), v) in seen:
                continue
            seen.add((tuple(share), v))
            tile = [share[i] * (v if i == n - 1 else 1) for i in range(n)]
            blocks = math.prod(-(-extents[i] // tile[i]) for i in range(n) if axes[i] == "S")
            steps = math.prod(-(-extents[i] // tile[i]) for i in range(n) if axes[i] == "R")
            touched = math.prod(-(-extents[i] // tile[i]) * tile[i] for i in range(n))
            edge = math.prod(extents) / touched
            occ = min(MAX_THREADS_PER_SM // threads, MAX_BLOCKS_PER_SM)
            slots = arch.num_sms * occ
            waves = blocks / (slots * -(-blocks // slots))
            lane = min(share[-1], arch.warp_size)
            coalesce = min(1.0, lane * v * in_bits / 8 / 128)
            w = v * in_bits / 8
            vec = w / (w + 4)
            rthreads = math.prod(share[i] for i in range(n) if axes[i] == "R")
            red = 1.0
            if rthreads > 1:
                e = steps * math.prod(tile[i] // share[i] for i in range(n) if axes[i] == "R")
                red = e / (e + math.log2(rthreads))
            s = edge * waves * coalesce * vec * red
            ranked.append(((-round(s, 12), threads, -v), (share, tile, v, s)))
    ranked.sort(key=lambda t: t[0])
    out = []
    for _, (share, tile, v, s) in ranked[:topk]:
        h = Hint()
        h.arch = arch
        h.use_tc = False
        h.block = [tile[i] for i in range(n) if axes[i] == "S"]
        h.thread = [share[i] for i in range(n) if axes[i] == "S"]
        h.rstep = [tile[i] for i in range(n) if axes[i] == "R"]
        h.reduce_thread = [share[i] for i in range(n) if axes[i] == "R"]
        h._raxis_order = []
        h.vectorize = {"A": v} if v > 1 else {}
        h.score = round(s, 12)   # the value ranked on
        out.append(h)
    return out
