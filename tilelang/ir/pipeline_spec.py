"""`T.Pipelined`'s arguments as one value: the `PipelineSpec` a pipelined loop carries
(`loop.annotations[PIPELINE]`, read through `pipeline_spec(loop)`), from the frontend to
the pass that pipelines the loop, under one name.

The statements `order`, `stage`, `sync` and `group` speak about are the loop body's
top-level statements that do work: declarations (`x: T.int32 = ...`, `T.alloc_var`) are
replayed where they are used and take no entry. An older form that gave them an entry too
is accepted; those entries are dropped."""
from __future__ import annotations

from dataclasses import dataclass

from tilelang.ir import stmt as S
from tilelang.ir.errors import located
from tilelang.ir.expr import IntImm

PIPELINE = "pipeline"   # the For annotation that holds the PipelineSpec


@dataclass(frozen=True)
class PipelineSpec:
    num_stages: int = 0            # buffers in flight; 0 with `stage`: max(stage) + 1
    order: tuple | None = None     # emission position of each scheduled statement
    stage: tuple | None = None     # pipeline stage of each scheduled statement
    sync: tuple | None = None      # published manual-lowering metadata (tuples of statement indices)
    group: tuple | None = None

    @property
    def depth(self) -> int:
        """How many iterations are in flight: `num_stages`, else `max(stage) + 1` for a
        manual schedule, else 0 (not pipelined)."""
        if self.num_stages:
            return self.num_stages
        return max(self.stage) + 1 if self.stage else 0

    def kwargs(self) -> dict:
        """The `T.Pipelined` keyword arguments that give this spec (the printer's form)."""
        out = {"num_stages": self.num_stages}
        for k in ("order", "stage", "sync", "group"):
            v = getattr(self, k)
            if v is not None:
                out[k] = [list(g) for g in v] if k in ("sync", "group") else list(v)
        return out

    def for_body(self, body, span=None) -> "PipelineSpec":
        """This spec checked against the loop body `body` (a located ValueError names the
        argument that does not fit); entries of declarations in the older long form are
        dropped."""
        stmts = body_statements(body)
        scheduled = [k for k, st in enumerate(stmts) if not isinstance(st, S.DeclBuffer)]
        n = len(scheduled)
        order, stage = self.order, self.stage
        if (order is None) != (stage is None):
            given = "order" if stage is None else "stage"
            raise located(ValueError, f"T.Pipelined: {given}= needs "
                          f"{'stage' if given == 'order' else 'order'}= as well (one entry per statement "
                          f"of the loop body each)", span,
                          hint="give both, e.g. order=[0, 1, 2], stage=[0, 0, 1]")
        if order is not None:
            if len(order) != len(stage):
                raise located(ValueError, f"T.Pipelined: order has {len(order)} entries and stage "
                              f"{len(stage)}; they describe the same statements", span)
            if len(stmts) != n and len(order) == len(stmts) and sorted(order) == list(range(len(stmts))):
                # the older form: the declarations have entries too
                ranks = sorted(scheduled, key=lambda k: order[k])
                order = tuple(ranks.index(k) for k in scheduled)
                stage = tuple(stage[k] for k in scheduled)
            if len(order) != n:
                raise located(ValueError, f"T.Pipelined: order/stage have {len(order)} entries, the loop body "
                              f"has {n} statement{'s' * (n != 1)} to schedule", span,
                              hint="one entry per statement of the body (declarations take none)")
            dup = next((j for j in range(n) if order[j] in order[:j]), None)
            if dup is not None:   # pointed at the second statement that asks for the same place
                raise located(ValueError, f"T.Pipelined: order={list(order)} gives statements "
                              f"{order.index(order[dup])} and {dup} the same order {order[dup]}",
                              getattr(stmts[scheduled[dup]], "span", None) or span,
                              hint=f"order is a permutation of 0..{n - 1}: where each statement is issued")
            if sorted(order) != list(range(n)):
                raise located(ValueError, f"T.Pipelined: order={list(order)} must be a permutation of "
                              f"0..{n - 1}", span)
            if min(stage) < 0:
                raise located(ValueError, f"T.Pipelined: stage={list(stage)} has a negative stage", span)
        for name in ("sync", "group"):
            for g in getattr(self, name) or ():
                bad = [i for i in g if not 0 <= i < n]
                if bad:
                    raise located(ValueError, f"T.Pipelined: {name}={[list(x) for x in getattr(self, name)]} "
                                  f"names statement {bad[0]}; the loop body has {n} (0..{n - 1})", span)
        if (order, stage) == (self.order, self.stage):
            return self
        return PipelineSpec(self.num_stages, order, stage, self.sync, self.group)


def body_statements(body) -> list:
    """The top-level statements of a loop body, in order."""
    return list(body.stmts) if isinstance(body, S.SeqStmt) else [body]


def make_pipeline_spec(num_stages=0, order=None, stage=None, sync=None, group=None, span=None) -> PipelineSpec:
    """A PipelineSpec from `T.Pipelined`'s arguments, their types checked (located errors)."""
    if isinstance(num_stages, bool) or not isinstance(num_stages, int) or num_stages < 0:
        raise located(ValueError, f"T.Pipelined: num_stages must be an int >= 0, got {num_stages!r}", span)

    def ints(name, v, what="a list of ints"):
        out = tuple(x.value if isinstance(x, IntImm) else x for x in v) if isinstance(v, (list, tuple)) else None
        if out is None or any(isinstance(x, bool) or not isinstance(x, int) for x in out):
            raise located(TypeError, f"T.Pipelined: {name} must be {what}, got {v!r}", span)
        return out

    def groups(name, v):
        if not isinstance(v, (list, tuple)):
            raise located(TypeError, f"T.Pipelined: {name} must be a list of lists of ints, got {v!r}", span)
        return tuple(ints(name, g, "a list of lists of ints") for g in v)

    # the published package passes [] for an argument not given
    order, stage, sync, group = (None if isinstance(v, (list, tuple)) and not v else v
                                 for v in (order, stage, sync, group))
    return PipelineSpec(int(num_stages),
                        None if order is None else ints("order", order),
                        None if stage is None else ints("stage", stage),
                        None if sync is None else groups("sync", sync),
                        None if group is None else groups("group", group))


def pipeline_spec(loop) -> PipelineSpec:
    """The PipelineSpec of a `T.Pipelined` loop (the default spec for any other loop)."""
    return loop.annotations.get(PIPELINE) or PipelineSpec()
