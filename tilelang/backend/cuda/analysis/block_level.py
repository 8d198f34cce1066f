"""Which statements of a launch run at block level and which in one thread's own code: the
rule, in one place, that the CUDA passes and the printer share.

- The launch body runs at block level: every thread of the block runs it, uniformly.
- A `T.Parallel` nest at block level is cooperative: its iterations are shared out over
  the block's threads; one that works on per-thread arrays only (analysis/facts.py
  `registers_only`) runs whole in every thread, and so does every nest below thread-
  dependent control flow (per-thread).
- The body of a `For` stays at block level where its bounds do not depend on the thread
  index (`KernelPlan.depends`), that of a `While` or an `if` where its condition does not,
  that of a `LetStmt` or a ring slot (`T.stage_slot`) always.
- A warp-specialized branch (`if tx < 128:`, `KernelPlan.regions.branches`) is not
  thread-dependent control flow: each side runs at block level on its own range of
  threads, as if the block had only those (the else side: its range, or the enclosing
  one); the producer warpgroup of a warp-specialized loop (`T.producer_warpgroup`) runs
  in its threads' own code.
- A `T.Pipelined` loop at block level (`KernelPlan.pipelines`) runs its body as the plan's
  statements (`PipelineInfo.rest`), at block level, until a pipelining pass writes its
  schedule into the IR.

`BlockLevelWalk` does the recursion with that rule; a pass overrides the hooks it needs
(plan/copy_forms.py, plan/register_chunks.py, plan/thread_splits.py). The printer
(emit/kernel.py), which writes code around each statement, asks the same functions.
"""
from __future__ import annotations

import contextlib

from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.backend.cuda.analysis.facts import registers_only


def cooperative(plan, nest, block):
    """Whether the T.Parallel nest `nest`, reached with `block`, is shared out over the threads."""
    return block and not registers_only(plan, nest)


def body_block(plan, st, block):
    """Whether the body of control statement `st` (a For, While, IfThenElse that is not a
    warp-specialized branch, LetStmt), reached with `block`, runs at block level."""
    if isinstance(st, S.For):
        return block and not plan.depends(st.min) and not plan.depends(st.extent)
    if isinstance(st, (S.IfThenElse, S.While)):
        return block and not plan.depends(st.cond)
    return block


def branch_sides(plan, st, enclosing):
    """The sides of a warp-specialized branch `st` with the thread range each runs on
    ([(body, range)], the else side only where there is one), or None for an ordinary `if`.
    `enclosing`: the range the branch itself runs on."""
    ranges = plan.regions.branches.get(id(st))
    if ranges is None:
        return None
    then, other = ranges
    sides = [(st.then_body, then)]
    if st.else_body is not None:
        sides.append((st.else_body, other if other is not None else enclosing))
    return sides


def pipeline_of(plan, loop, block):
    """The plan's PipelineInfo of `loop` where it is a pipelined loop at block level, else None."""
    return plan.pipelines.get(id(loop)) if block and isinstance(loop, S.For) else None


class BlockLevelWalk:
    """Visits a launch's statements with the rule above. `range` and `nthreads` are the
    threads that run the statement visited (a warp-specialized side: its range, as many
    threads). Hooks, each with a default:

    - `cooperative_nest(nest)`, `per_thread_nest(nest)`: a T.Parallel nest (its body is not
      visited: it is one iteration's code);
    - `pipelined(loop, info)`: a pipelined loop at block level (default: the plan's
      statements of its body, at block level);
    - `tile_op(op, block)`: a tile op kept for the backend;
    - `after_seq(seq)`: a statement sequence, once its statements are visited;
    - `ranged(rng)`: a context in which `rng`'s threads run (default: sets `range`, `nthreads`).
    """

    def __init__(self, plan):
        self.plan = plan
        self.range = plan.regions.full
        self.nthreads = plan.nthreads

    def visit(self, st, block=True):
        plan = self.plan
        if st is None:
            return
        if isinstance(st, S.SeqStmt):
            for s in st.stmts:
                self.visit(s, block)
            self.after_seq(st)
        elif isinstance(st, S.For) and st.kind == S.PARALLEL:
            if cooperative(plan, st, block):
                self.cooperative_nest(st)
            else:
                self.per_thread_nest(st)
        elif isinstance(st, S.For) and pipeline_of(plan, st, block) is not None:
            self.pipelined(st, plan.pipelines[id(st)])
        elif isinstance(st, S.For):
            self.visit(st.body, body_block(plan, st, block))
        elif isinstance(st, S.IfThenElse) and branch_sides(plan, st, self.range) is not None:
            for body, rng in branch_sides(plan, st, self.range):
                with self.ranged(rng):
                    self.visit(body, block)
        elif isinstance(st, S.IfThenElse):
            inner = body_block(plan, st, block)
            self.visit(st.then_body, inner)
            self.visit(st.else_body, inner)
        elif isinstance(st, (S.While, S.LetStmt, S.StageSlot)):
            self.visit(st.body, body_block(plan, st, block))
        elif isinstance(st, S.ProducerWarpgroup):
            from tilelang.backend.cuda.analysis.thread_ranges import ThreadRange
            saved = self.range   # (the printer keeps the block's thread count there: emit/kernel.py)
            self.range = ThreadRange(st.lo, st.lo + 128)
            self.visit(st.body, False)
            self.range = saved
        elif isinstance(st, TO.TileOp):
            self.tile_op(st, block)

    # hooks -----------------------------------------------------------------------------
    def cooperative_nest(self, nest):
        pass

    def per_thread_nest(self, nest):
        pass

    def pipelined(self, loop, info):
        for s in info.rest:
            self.visit(s, True)

    def tile_op(self, op, block):
        pass

    def after_seq(self, seq):
        pass

    @contextlib.contextmanager
    def ranged(self, rng):
        saved = self.range, self.nthreads
        self.range, self.nthreads = rng, rng.size
        try:
            yield
        finally:
            self.range, self.nthreads = saved


__all__ = ["BlockLevelWalk", "cooperative", "body_block", "branch_sides", "pipeline_of"]
