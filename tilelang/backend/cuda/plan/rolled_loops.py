"""Loops that issue wgmma on an accumulator they clear stay rolled in the binary, as a pass (`plan_rolled_loops`, after
plan_thread_splits, when the pipelining passes have written every loop the code generator
prints).

ptxas treats an HGMMA as a function of its registers only (the descriptors and the
accumulator), not of the shared memory it reads. Where it unrolls a loop whose iterations
issue the same descriptors on a freshly cleared accumulator (one buffer refilled every
iteration: `num_stages=1`; or the same ring slot every `stages` iterations), it merged the
later iteration's products with the earlier one's and used stale results: a GemmChain of the
differential fuzzer (S = Q K^T cleared every iteration, 64 x 32 on two warpgroups, 4
iterations, `num_stages=1`) computed iteration 1 from iteration 0's S (`tests/backend/cuda/
plan/test_rolled_loops.py` checks the SASS). A serial loop whose body issues a wgmma gemm on
an accumulator it clears in that body (attention's S = Q K^T) gets the annotation ROLLED
(printed `# rolled: ...`), which emit/kernel.py prints as `#pragma unroll 1`: each
iteration's HGMMA then is one instruction of one loop body, which ptxas cannot merge with
another. A GEMM's K loop accumulates across iterations (different inputs every time) and
keeps its unrolling: ptxas unrolls the convolution example's 18 iterations fully. (A loop
whose variable picks register slots keeps its full unroll: its slots must be constants.)"""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk
from tilelang.transform.pass_manager import function_pass

ROLLED = "rolled"   # S.For annotation: the reason the loop is not unrolled
REASON = "it clears a wgmma accumulator (ptxas would merge HGMMAs of unrolled iterations reading refilled buffers)"


def _wgmma_on_a_cleared_accumulator(body, plan) -> bool:
    """Whether `body` issues a wgmma gemm whose accumulator it resets to constants first (a
    T.clear, or clear_accum): then every iteration hands ptxas the same HGMMA inputs. An
    accumulator that carries over from the previous iteration (a GEMM's K loop) differs
    from one iteration to the next: nothing to merge, and the loop may unroll."""
    gemms, cleared = [], set()

    def f(n):
        if isinstance(n, TO.Gemm) and \
                (getattr(plan.gemms.get(id(n)), "kind", "") == "wgmma" or n.annotations.get(TO.WGMMA)):
            gemms.append(n)
        elif isinstance(n, S.BufferStore) and isinstance(n.value, (E.IntImm, E.FloatImm)):
            cleared.add(id(n.buffer))
    walk(body, f)
    return any(g.clear_accum or id(g.C.buffer) in cleared for g in gemms)


def mark(body, plan):
    """Annotate the serial loops of `body` that issue a wgmma gemm on an accumulator they
    clear (in place: nodes of the CUDA passes' own tree)."""
    def f(n):
        if isinstance(n, S.For) and n.kind in (S.SERIAL, S.PIPELINED) and ROLLED not in n.annotations and \
                _wgmma_on_a_cleared_accumulator(n.body, plan):
            n.annotations = {**n.annotations, ROLLED: REASON}
    walk(body, f)


@function_pass("plan_rolled_loops")
def plan_rolled_loops(func, ctx=None):
    from tilelang.backend.cuda.plan.plan_kernels import map_planned_launches

    def rewrite(launch, plan, target, options):
        if plan.uses_wgmma or plan.wgmma_requested:
            mark(launch.body, plan)
        return launch
    return map_planned_launches(func, ctx, rewrite)


__all__ = ["ROLLED", "plan_rolled_loops"]
