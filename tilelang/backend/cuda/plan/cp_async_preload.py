"""Tiles loaded right before a cp.async pipeline join its first group (`preload_cp_async`,
right after pipeline_cp_async).

The FlashAttention backward loads K and V into shared memory, then pipelines Q and dO:

    K_s <- K[...]; V_s <- V[...]       vector loads and stores: a round trip to memory ...
    T.sync_threads()                   ... that ends here,
    prologue: Q, dO of the first iterations as cp.async; T.ptx_commit_group()
    for k: T.ptx_wait_group(s - 1); T.sync_threads(); ... reads K_s, V_s, the Q/dO slot

so every block waits for two round trips before its first product (the published package's
producer issues all those loads at once). A global -> shared copy nest of 16-byte vectors that
stands before the prologue of a pipeline scheduled by plan/cp_async_pipeline.py (`schedule`,
`schedule_wgmma_in_flight`: the prologue is annotated `cp_async_prologue`), in the same
statement sequence, whose tile nothing but that copy and the pipelined loop's body uses, is
issued as cp.async instead (form `cp.async x8 (16 B)`). It belongs to the prologue's first
commit group, which the loop's first iteration waits for (`T.ptx_wait_group`) and whose
landing that iteration's barrier makes visible to every thread before any statement of the
body reads it; the final `T.ptx_wait_group(0)` covers a loop that runs no iteration.

A num_stages=1 schedule (`schedule_after_use`: its loop is annotated `cp_async_after_use`, its
prologue is the `if lo < hi:` before it) waits for each group just before that group's first
reader, so a tile joins its first group only where the body reads it after its first
`T.ptx_wait_group` and a barrier after that (FlashAttention forward with one stage: Q, read by
the same gemm as K, lands with K's first tile instead of a round trip of its own first), and
only where the prologue certainly runs (a constant trip count of at least one): its commit
closes the group. A copy already issued as `cp.async + wait` (plan/copy_forms.py) is taken too.

Statements after the loop may use the tile (FlashAttention's output tile sharing Q's storage)
where the loop certainly runs an iteration: its first wait and barrier come before them.
TILELANG_CUDA_CP_ASYNC_PRELOAD=0 keeps those copies synchronous (A/B)."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.transform.pass_manager import function_pass
from tilelang.backend.cuda.plan.copy_form import COPY_FORM, CopyForm, copy_form
from tilelang.ir.buffer import storage_root

CP_ASYNC_PROLOGUE = "cp_async_prologue"   # on the prologue loop of a cp.async pipeline schedule
CP_ASYNC_AFTER_USE = "cp_async_after_use"  # on the loop of a num_stages=1 schedule (its prologue: the `if` before)


def preloadable(st):
    """The shared tile a cooperative copy nest fills from global memory in 16-byte vectors
    (a plain copy: no conversion, no L2 hint), or None."""
    from tilelang.backend.cuda.analysis.facts import parallel_nest
    from tilelang.backend.cuda.ops.vector_copy import match_copy, without_assumes
    form = copy_form(st)
    if form is None or form.kind not in ("vector", "cp_async_wait") or form.nbytes != 16 or \
            form.eviction is not None:
        return None
    m = match_copy(without_assumes(parallel_nest(st)[3]))
    if m is None or m[2].buffer.scope != "global" or not m[1].buffer.scope.startswith("shared") or \
            m[1].buffer.dtype != m[2].buffer.dtype:
        return None
    return storage_root(m[1].buffer)


def _uses(node, buf, skip, holders):
    """Whether a statement under `node`, other than those in `skip` (ids), reads or writes
    `buf` (`holders`: ids of the statements that hold a skipped one)."""
    from tilelang.backend.cuda.analysis.facts import accesses
    if id(node) in skip:
        return False
    if id(node) not in holders:
        r, w = accesses(node)
        return any(storage_root(b) is buf for b in r + w)
    kids = list(node.stmts) if isinstance(node, S.SeqStmt) else \
        [getattr(node, a, None) for a in ("body", "then_body", "else_body")]
    return any(_uses(c, buf, skip, holders) for c in kids if isinstance(c, S.Stmt))


def _runs(loop):
    """Whether `loop` certainly runs an iteration (a constant trip count of one or more)."""
    return (E.const_int_value(loop.extent) or 0) >= 1


def _call_name(st):
    return getattr(st.value, "name", None) if isinstance(st, S.Evaluate) else None


def _read_after_first_wait(loop, buf):
    """Whether the first top-level statement of `loop`'s body that uses `buf` comes after the
    body's first `T.ptx_wait_group` and a barrier after that wait."""
    from tilelang.backend.cuda.analysis.facts import accesses
    from tilelang.ir import mbarrier as M
    stmts = list(loop.body.stmts) if isinstance(loop.body, S.SeqStmt) else [loop.body]
    waited = barrier = False
    for st in stmts:
        if _call_name(st) == M.CP_ASYNC_WAIT:
            waited = True
        elif isinstance(st, S.Barrier) and st.kind == "block" and st.barrier_id is None:
            barrier = barrier or waited
        else:
            r, w = accesses(st)
            if any(storage_root(b) is buf for b in r + w):
                return waited and barrier
    return False


def _prologue_then_loop(pro, main):
    """Whether `pro` is the prologue of the cp.async pipeline `main` whose first commit certainly
    runs: the prologue loop of a multi-stage schedule or the `if` of a num_stages=1 one."""
    if not isinstance(main, S.For):
        return False
    if isinstance(pro, S.For) and pro.annotations.get(CP_ASYNC_PROLOGUE):
        return (E.const_int_value(pro.extent) or 0) >= 1   # (its first commit closes the group)
    return bool(main.annotations.get(CP_ASYNC_AFTER_USE)) and isinstance(pro, S.IfThenElse) and _runs(main)


def preload(launch):
    """The copy nests of `launch` issued as cp.async (changed in place in their sequences)."""
    from tilelang.backend.cuda.plan.pipelined_loops import parents
    pairs = parents(launch)
    up = {id(c): p for p, c in pairs}
    changed = []
    for seq in [p for p, _ in pairs if isinstance(p, S.SeqStmt)]:
        stmts = seq.stmts
        for i, pro in enumerate(stmts[:-1]):
            main = stmts[i + 1]
            if not _prologue_then_loop(pro, main):
                continue
            # after a loop that certainly runs, its first wait and barrier precede every use
            after = {id(s) for s in stmts[i + 2:]} if _runs(main) else set()
            for j in range(i):
                buf = preloadable(stmts[j])
                if buf is None:
                    continue
                holders, n = set(), seq
                while n is not None:
                    holders.add(id(n))
                    n = up.get(id(n))
                if _uses(launch, buf, {id(stmts[j]), id(main)} | after, holders):
                    continue
                if main.annotations.get(CP_ASYNC_AFTER_USE) and not _read_after_first_wait(main, buf):
                    continue
                form = copy_form(stmts[j])   # (the nest keeps its identity: plan records name it)
                stmts[j].annotations = {**stmts[j].annotations,
                                        COPY_FORM: CopyForm("cp_async", form.width, form.nbytes)}
                changed.append(stmts[j])
    return changed


@function_pass("preload_cp_async")
def preload_cp_async(func, ctx=None):
    from tilelang.backend.cuda.plan.plan_kernels import map_planned_launches

    def rewrite(launch, plan, target, options):
        if not options.cp_async_preload:
            return launch
        preload(launch)   # in place, as the pipelining passes change the kernel's tree
        return launch
    return map_planned_launches(func, ctx, rewrite)


__all__ = ["preload_cp_async", "preload", "preloadable", "CP_ASYNC_PROLOGUE", "CP_ASYNC_AFTER_USE"]
