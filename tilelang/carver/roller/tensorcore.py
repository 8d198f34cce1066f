"""Tensor-core tile recommender for a GEMM-shaped computation C[M, N] += A[M, K] B[K, N]
(batched: `batch` independent problems of that shape).

Candidates. Every combination of
  - block tile block_M x block_N, each a power of two from 16 to 256, not larger than the
    problem dimension rounded up to a power of two (a tile larger than the problem only
    computes padding);
  - warp grid rows x cols of 1, 2, 4 or 8 warps in all, the warp tile
    warp_M = block_M / rows, warp_N = block_N / cols a multiple of the 16 x 16 instruction
    tile;
  - K step block_K of 32, 64 or 128 bytes of operand row (fp16: 16, 32, 64 elements), a
    multiple of the instruction's K (32 bytes), not beyond K rounded up to it;
  - pipeline depth: the deepest of 4 (sm_90+), 3 (sm_80+) or 1 (older: no async copy) down to
    2 that fits, never more than the number of K steps;
is kept when it fits the arch:
  - shared memory: stages * (block_M + block_N) * block_K operand bytes plus a block_M x
    block_N output staging tile (the epilogue of the published GEMM examples) <= smem_cap;
  - registers: the warp tile's accumulators (warp_M * warp_N / 32 per thread, x2 for 64-bit
    accumulators) plus the fragments of one K step of A and B plus 32 for addresses and
    loop state, <= 255 per thread and (times the threads) <= the SM's register file.

Score (higher is better): the estimated fraction of the machine's tensor-core peak the hint
reaches, a product of factors in (0, 1], each a reason a real kernel runs below peak:
  1. edge: useful / computed MACs, M*N*K over ceil(M/bm)*bm * ceil(N/bn)*bn * ceil(K/bk)*bk
     (work spent on tile padding at the problem's edges);
  2. waves: tiles / (SMs * ceil(tiles / SMs)), the busiest SM computes ceil(tiles / SMs)
     tiles while the average one computes tiles / SMs (wave quantization; blocks sharing an
     SM share its tensor cores, so the SM and not the block slot is the unit);
  3. intensity: I / (I + ridge), I = 2 * bm * bn / ((bm + bn) * operand bytes) the flops per
     byte a block reads from L2, ridge the flops per L2 byte the arch's tensor cores need
     (16-bit operands: sm_90 64, sm_80/89 32, older 16; scaled by the instruction rate for
     other widths) -- how far a block is from being fed at tensor-core speed;
  4. reuse: r / (r + 8), r = warp_M * warp_N / (warp_M + warp_N), the MACs per operand
     element a warp reads from shared memory;
  5. schedulers: min(1, active warps per SM / 4), active = warps per block * the blocks an SM
     holds at once (limited by shared memory, registers, 2048 threads, and the tiles there
     are): an SM issues from 4 schedulers and needs a warp on each;
  6. K step: b / (b + 32), b = block_K in bytes: a loop iteration's fixed cost (barrier,
     address and pipeline bookkeeping) against its MMA work;
  7. pipeline: s / (s + 1), s = stages: the share of copy latency the pipeline hides.
Of the warp grids of one block, K step and warp count only the best is kept (a kernel's
`T.gemm` lays its warps out itself, so the others are the same schedule).
Ties (equal score) go to the larger block, then the larger block_K, then fewer warps, then
the smaller shared memory: the order is total, so the result is deterministic.

Rasterization: when A and B together do not fit in L2 and the grid has more than one tile
both ways, blocks walk the grid in panels of sqrt(SMs) columns (`Rasterization2DColumn`), so
that a wave's blocks share their rows of A and columns of B in L2; otherwise no plan."""
from __future__ import annotations

import math
from dataclasses import dataclass

from tilelang.carver.roller.hint import Hint, IntrinInfo
from tilelang.carver.roller.rasterization import NoRasterization, Rasterization2DColumn

INSTR = 16                      # the M and N of the instruction tile
BLOCK_SIZES = (16, 32, 64, 128, 256)
WARP_COUNTS = (1, 2, 4, 8)
K_STEP_BYTES = (32, 64, 128)
MAX_REGS_PER_THREAD = 255
MAX_THREADS_PER_SM = 2048
MAX_BLOCKS_PER_SM = 32
SCHEDULERS = 4
REUSE_HALF = 8                  # warp reuse r at which the reuse factor is 1/2
K_STEP_HALF_BYTES = 32          # block_K bytes at which the K-step factor is 1/2


@dataclass(frozen=True)
class GemmShape:
    """The problem: sizes, operand / accumulator / output bit widths, batch count."""
    M: int
    N: int
    K: int
    in_bits: int
    accum_bits: int
    out_bits: int
    batch: int = 1


def _pow2_ceil(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _ridge(arch, in_bits: int) -> float:
    """Flops per L2 byte the tensor cores of `arch` consume at peak: the 16-bit figure, scaled
    by the instruction rate (8-bit operands run twice as fast, 32-bit (tf32) half as fast)."""
    v = getattr(arch, "sm_version", 80)
    base = 64.0 if v >= 90 else 32.0 if v >= 80 else 16.0
    return base * 16 / in_bits


def pipeline_depth(arch) -> int:
    """The deepest copy pipeline worth asking for: TMA (sm_90) 4, cp.async (sm_80) 3, else 1."""
    v = getattr(arch, "sm_version", 80)
    return 4 if v >= 90 else 3 if v >= 80 else 1


def _smem(bm, bn, bk, stages, p: GemmShape) -> int:
    operands = stages * (bm + bn) * bk * p.in_bits // 8
    return operands + bm * bn * p.out_bits // 8


def _regs_per_thread(wm, wn, bk, p: GemmShape) -> int:
    acc = wm * wn // 32 * max(1, p.accum_bits // 32)
    # one K step of the warp's A (wm x bk) and B (bk x wn) fragments, 32-bit registers
    operands = (wm + wn) * min(bk, 32) * p.in_bits // 32 // 32
    return acc + operands + 32


def _blocks_per_sm(arch, smem, threads, regs) -> int:
    smem_sm = max(arch.max_smem_usage, arch.smem_cap)
    by_smem = smem_sm // max(smem, 1)
    by_regs = arch.reg_cap // (threads * regs)
    return min(by_smem, by_regs, MAX_THREADS_PER_SM // threads, MAX_BLOCKS_PER_SM)


def _rasterization(arch, p: GemmShape, grid):
    operand_bytes = (p.M + p.N) * p.K * p.in_bits // 8 * p.batch
    if operand_bytes <= arch.l2_cache_size_bytes or min(grid) <= 1:
        return NoRasterization()
    return Rasterization2DColumn(max(1, int(math.isqrt(arch.num_sms))))


def _candidates(arch, p: GemmShape):
    ws = arch.warp_size
    k_inst = 256 // p.in_bits                       # the instruction's K: 32 bytes of operand
    k_cap = -(-p.K // k_inst) * k_inst
    for bm in BLOCK_SIZES:
        if bm > max(INSTR, _pow2_ceil(p.M)):
            continue
        for bn in BLOCK_SIZES:
            if bn > max(INSTR, _pow2_ceil(p.N)):
                continue
            for nw in WARP_COUNTS:
                if nw * ws > arch.max_threads_per_block:
                    continue
                for rows in (r for r in WARP_COUNTS if nw % r == 0):
                    cols = nw // rows
                    if bm % (rows * INSTR) or bn % (cols * INSTR):
                        continue
                    wm, wn = bm // rows, bn // cols
                    for kb in K_STEP_BYTES:
                        bk = kb * 8 // p.in_bits
                        if bk % k_inst or (bk > k_cap and bk != K_STEP_BYTES[0] * 8 // p.in_bits):
                            continue
                        yield bm, bn, wm, wn, bk, nw * ws


def _fit(arch, p: GemmShape, bm, bn, wm, wn, bk, threads):
    """(stages, smem, regs, blocks per SM) of the deepest pipeline that fits, or None."""
    regs = _regs_per_thread(wm, wn, bk, p)
    if regs > MAX_REGS_PER_THREAD or threads * regs > arch.reg_cap:
        return None
    k_steps = -(-p.K // bk)
    for stages in range(min(pipeline_depth(arch), max(k_steps, 1)), 0, -1):
        smem = _smem(bm, bn, bk, stages, p)
        if smem <= arch.smem_cap:
            occ = _blocks_per_sm(arch, smem, threads, regs)
            if occ >= 1:
                return stages, smem, regs, occ
    return None


def _score(arch, p: GemmShape, bm, bn, wm, wn, bk, threads, occ, stages):
    tm, tn, tk = -(-p.M // bm), -(-p.N // bn), -(-p.K // bk)
    edge = (p.M * p.N * p.K) / (tm * bm * tn * bn * tk * bk)
    tiles = tm * tn * p.batch
    waves = tiles / (-(-tiles // arch.num_sms) * arch.num_sms)
    intensity_i = 2 * bm * bn / ((bm + bn) * p.in_bits / 8)
    intensity = intensity_i / (intensity_i + _ridge(arch, p.in_bits))
    r = wm * wn / (wm + wn)
    reuse = r / (r + REUSE_HALF)
    warps_per_sm = min(occ, max(1, -(-tiles // arch.num_sms))) * threads // arch.warp_size
    sched = min(1.0, warps_per_sm / SCHEDULERS)
    kb = bk * p.in_bits / 8
    kstep = kb / (kb + K_STEP_HALF_BYTES)
    pipe = stages / (stages + 1)
    return edge * waves * intensity * reuse * sched * kstep * pipe


def recommend(arch, p: GemmShape, topk: int, intrin: IntrinInfo | None = None) -> list[Hint]:
    """The `topk` best tensor-core hints for problem `p` on `arch` (see the module doc)."""
    ranked = []
    for bm, bn, wm, wn, bk, threads in _candidates(arch, p):
        fit = _fit(arch, p, bm, bn, wm, wn, bk, threads)
        if fit is None:
            continue
        stages, smem, _, occ = fit
        s = _score(arch, p, bm, bn, wm, wn, bk, threads, occ, stages)
        ranked.append(((-round(s, 12), -bm * bn, -bk, threads, smem, -bm, wm), (bm, bn, wm, wn, bk, stages, smem, s)))
    ranked.sort(key=lambda t: t[0])
    # a kernel's T.gemm lays its warps out itself: of the warp grids of one block, K step and
    # warp count only the best is a distinct schedule
    seen, distinct = set(), []
    for key, c in ranked:
        bm, bn, wm, wn, bk = c[:5]
        if (bm, bn, bk, bm * bn // (wm * wn)) not in seen:
            seen.add((bm, bn, bk, bm * bn // (wm * wn)))
            distinct.append((key, c))
    out = []
    for _, (bm, bn, wm, wn, bk, stages, smem, s) in distinct[:topk]:
        h = Hint()
        h.arch = arch
        h.use_tc = True
        h.block, h.warp, h.rstep = [bm, bn], [wm, wn], [bk]
        h.pipeline_stage = stages
        h.use_async = getattr(arch, "sm_version", 0) >= 80
        h.rasterization_plan = _rasterization(arch, p, (-(-p.N // bn), -(-p.M // bm)))
        h.intrin_info = intrin or h.intrin_info
        h.shared_scope = "shared.dyn"
        h.smem_usage, h.score = smem, round(s, 12)   # the value ranked on
        out.append(h)
    return out
