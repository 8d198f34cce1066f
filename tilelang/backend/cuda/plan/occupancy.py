"""Occupancy of memory-bound kernels, as a pass (`plan_streaming_occupancy`, after
plan_warp_specialize): a kernel that only streams memory through registers (no gemm, no
pipelined loop, no warp specialization) is as fast as the bytes its SM has in flight, and
those grow with the blocks resident on the SM. ptxas sizes registers for one block's speed:
an RMSNorm row of 4096 fp16 on 256 threads takes 39 registers, 6 blocks an SM where the
thread limit allows 8. This pass asks for the blocks that fill the SM's threads (the second
argument of `__launch_bounds__`, the launch annotation `min_blocks_per_sm` that
`T.annotate_min_blocks_per_sm` sets, printed in the IR), at most what shared memory allows.

A cap that makes ptxas spill is worse than the blocks it buys: the build compiles with
`-Xptxas -v` and, where the kernel spills, compiles again without the cap
(`CudaBackend.build`, `drop_streaming_caps`). A cap can also make ptxas split a thread's
loads into smaller groups (a 32 x 256 fp16 add: 8 vector loads in flight a thread at 40
registers, 6 then 2 at 32): whether the blocks gained outweigh that is measured on the GPU
(`benchmarks/memory_bound.py`), hence the switch TILELANG_CUDA_STREAMING_OCCUPANCY (off by
default until the H200 says otherwise). A user's own T.annotate_min_blocks_per_sm wins."""
from __future__ import annotations

import copy
import re

from tilelang.transform.pass_manager import function_pass
from tilelang.backend.cuda.target import RESERVED_SMEM, full_occupancy_blocks, sm_limits  # noqa: F401 - re-exported

MIN_BLOCKS = "min_blocks_per_sm"          # launch annotation, printed by the IR printer
AUTO = "streaming_occupancy"              # launch annotation: this pass set MIN_BLOCKS (the build may drop it)
def streaming_why_not(plan, pipelined=False) -> str:
    """Why the kernel of `plan` is not a streaming kernel, or "" when it is. `pipelined`:
    a T.Pipelined loop of copies (no gemm) counts as streaming (DeepSeek mHC pre's fused
    rest, when its converting copy held the next tile in registers: 104 a thread, 6 blocks
    of 96 threads an SM where shared memory allows 12; capped at 8 blocks, 80 and no spills;
    such a kernel now keeps the copy in place, plan/pipeline.py `staged_converting_copies`)."""
    if plan.gemms:
        return "it runs a gemm"
    if plan.pipelines and not pipelined:
        return "it has a pipelined loop"
    if plan.warp_specialized is not None or plan.sets_max_nreg:
        return "its warpgroups split the registers"
    if plan.user_cp_async:
        return "it issues its own cp.async groups"
    return ""


def decide(launch, plan, arch, pipelined=False) -> int:
    """The blocks per SM to ask ptxas for (0: leave the kernel alone)."""
    if launch.annotations.get(MIN_BLOCKS) or streaming_why_not(plan, pipelined):
        return 0
    n = full_occupancy_blocks(plan.nthreads, plan.smem_bytes, arch)
    return n if n >= 2 else 0


@function_pass("plan_streaming_occupancy")
def plan_streaming_occupancy(func, ctx=None):
    from tilelang.backend.cuda.plan.plan_kernels import map_planned_launches

    def rewrite(launch, plan, target, options):
        on = options.pipelined_occupancy if plan.pipelines else options.streaming_occupancy
        n = decide(launch, plan, target.arch, pipelined=bool(plan.pipelines)) if on else 0
        if n:
            launch = copy.copy(launch)   # the same body: the plan's node identities hold
            launch.annotations = {**launch.annotations, MIN_BLOCKS: n, AUTO: True}
        return launch
    return map_planned_launches(func, ctx, rewrite)


def spilling_entries(ptxas_log: str) -> set:
    """The kernels that `ptxas -v` (NVRTC `-Xptxas=-v`) reports spilling registers."""
    out = set()
    for m in re.finditer(r"Function properties for (\w+)\s*\n[^\n]*?(\d+) bytes spill stores, (\d+) bytes spill loads",
                         ptxas_log):
        if int(m.group(2)) or int(m.group(3)):
            out.add(m.group(1))
    return out


def drop_streaming_caps(source: str, entries) -> str:
    """`source` with the block count this pass asked for removed from the `__launch_bounds__`
    of each kernel in `entries` (compiled again where the cap made ptxas spill)."""
    for e in entries:
        source = re.sub(r"__launch_bounds__\((\d+), \d+\) " + re.escape(e) + r"\(",
                        lambda m: f"__launch_bounds__({m.group(1)}) {e}(", source)
    return source


def streaming_cap(source: str, entry: str):
    """The block count `entry`'s `__launch_bounds__` asks for in `source`, or None."""
    m = re.search(r"__launch_bounds__\(\d+, (\d+)\) " + re.escape(entry) + r"\(", source)
    return int(m.group(1)) if m else None


def set_streaming_cap(source: str, entry: str, n: int) -> str:
    """`source` with `entry`'s `__launch_bounds__` asking for `n` blocks an SM."""
    return re.sub(r"__launch_bounds__\((\d+), \d+\) " + re.escape(entry) + r"\(",
                  lambda m: f"__launch_bounds__({m.group(1)}, {n}) {entry}(", source)


def fit_streaming_caps(source: str, entries, spills, low=None):
    """(source, compiled or None): each kernel of `entries` (spilling at the cap this pass
    asked for) asks instead for the most blocks at which ptxas does not spill, searched
    between `low(cap)` (default: half the cap, assumed to fit: it is about what ptxas gives
    uncapped where the cap was a full SM) and the cap; its cap is dropped where even `low`
    spills. `spills(source)` -> (the entries that spill, the compiled source): at most
    log2(cap / 2) + 1 compiles a kernel; `compiled` is the last one's where it is the source
    returned."""
    low = low or (lambda cap: max(1, cap // 2))
    last = None
    for e in sorted(entries):
        cap = streaming_cap(source, e)
        if cap is None:
            continue
        lo, hi, fits_lo = low(cap), cap - 1, False
        while lo < hi:
            mid = (lo + hi + 1) // 2
            bad, compiled = spills(set_streaming_cap(source, e, mid))
            if e in bad:
                hi = mid - 1
            else:
                lo, fits_lo, last = mid, True, (set_streaming_cap(source, e, mid), compiled)
        if not fits_lo:
            bad, compiled = spills(set_streaming_cap(source, e, lo)) if lo > 1 else ({e}, None)
            if e in bad:
                source, last = drop_streaming_caps(source, {e}), None
                continue
            last = (set_streaming_cap(source, e, lo), compiled)
        source = set_streaming_cap(source, e, lo)
    return source, (last[1] if last is not None and last[0] == source else None)


__all__ = ["plan_streaming_occupancy", "fit_streaming_caps", "streaming_cap", "set_streaming_cap", "full_occupancy_blocks", "streaming_why_not", "spilling_entries",
           "drop_streaming_caps", "MIN_BLOCKS", "AUTO"]
