"""How each cooperative nest is shared out over the block's threads, decided once, as an
IR-to-IR pass (`plan_thread_splits`, after the pipelining passes, when every nest the code
generator prints is in the tree): a nest that plan/copy_forms.py gave a vector, scalar or
cp.async form runs its iterations (vectors) by the one rule ops/vector_copy.py
`thread_split` (so does the copy nest of a T.tma_copy issued as cp.async on its mbarrier,
whose split is recorded on the op):

- `exact split, n a thread`: the threads divide the iterations, n <= 8 each: a fully
  unrolled loop with no bound check;
- `guarded split, at most n a thread`: a constant count the threads do not divide, at most
  4 each: a fully unrolled loop whose last copy checks the bound (TILELANG_CUDA_GUARDED_SPLIT=0:
  the strided loop instead);
- `strided split[, unrolled]`: a loop striding by the thread count (unrolled where a thread
  runs at most 4 iterations).

A cp.async nest may run up to 16 vectors a thread as one unrolled run (ASYNC_EXACT_SPLIT: the
copies hold no registers in flight). Where its addresses are gathered, read from memory
(`KV[Indices[...], d]` of the sparse MLA kernels), always: in a strided loop each iteration
waits for its index load before issuing its copy, so the index loads of a stage run one after
another; unrolled, they are all in flight at once. Affine nests too unless
TILELANG_CUDA_CP_ASYNC_UNROLL=0: the unrolled run takes the loop's counter and bound checks out
of the issuing threads' instructions (DeepSeek mHC's gemm, one warp a scheduler issuing both its
copies and its mma: 0.0837 -> 0.0791 ms on the H200,
`benchmarks/results/2026-12-03_h200_mhc_pre_kernels_6b3d1ed.md`).

The pass records the split on the nest (annotation `thread_split`, printed after the form:
`for i, j in T.Parallel(100, 64):  # copy -> vector x8 (16 B); guarded split, at most 2 a
thread`); emit/kernel.py `cooperative` prints the loop it says. plan/copy_forms.py reads the
same rule to choose `cp.async + wait` (where a strided loop would not keep every load in
flight). Its own pass and not a field of the copy form: the split depends on the block's
thread count at printing time (the kernel plan after warp specialization), and on nothing
the form's choice reads but its width."""
from __future__ import annotations

from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir import tile_ops as TO
from tilelang.ir.visitor import walk
from tilelang.transform.pass_manager import function_pass
from tilelang.backend.cuda.analysis.block_level import BlockLevelWalk
from tilelang.backend.cuda.analysis.facts import parallel_nest
from tilelang.backend.cuda.plan.copy_form import COPY_FORM, copy_form

THREAD_SPLIT = "thread_split"
# the forms run as a cooperative loop over the block's threads (the others: bulk copies, the
# TMA ring, loops over register slots, a thread's own code)
SPLIT_FORMS = ("vector", "scalar", "cp_async", "cp_async_wait")


def thread_split_of(st):
    """The ThreadSplit this pass recorded on nest `st`, or None."""
    return st.annotations.get(THREAD_SPLIT) if isinstance(st, S.For) else None


class _Splits(BlockLevelWalk):
    """Records the split of each cooperative nest the walk reaches (analysis/block_level.py),
    over the threads that run it: a warp-specialized side such as `if tx < 128:` runs on its
    range as if the block had only those threads (emit/kernel.py `_ranged_if`)."""

    def __init__(self, plan, options):
        super().__init__(plan)
        self.options = options

    def cooperative_nest(self, n):
        from tilelang.backend.cuda.ops.vector_copy import nest_split, ASYNC_EXACT_SPLIT
        form = copy_form(n)
        if form is None or form.kind not in SPLIT_FORMS:
            return
        # a cp.async thread holds no registers for its copies in flight: more of them unrolled
        unroll = form.kind == "cp_async" and (self.options.cp_async_unroll or gathers(n))
        most = ASYNC_EXACT_SPLIT if unroll else 8
        split = nest_split(parallel_nest(n)[2], form.width, self.nthreads, self.options.guarded_split, most)
        n.annotations = {**n.annotations, THREAD_SPLIT: split}   # a node of the CUDA passes' own tree

    def tile_op(self, n, block):
        from tilelang.backend.cuda.ops.vector_copy import nest_split
        from tilelang.transform.lower_tile_ops import lower_copy
        form = n.annotations.get(COPY_FORM) if isinstance(n, TO.Copy) else None
        if getattr(form, "kind", None) == "cp_async_mbarrier":
            # a T.tma_copy issued as cp.async on its mbarrier: its copy nest, printed from the op
            split = nest_split(parallel_nest(lower_copy(n))[2], form.width, self.nthreads, self.options.guarded_split)
            n.annotations = {**n.annotations, THREAD_SPLIT: split}   # plan_copy_forms' own copy of the op


def gathers(nest) -> bool:
    """Whether an address in `nest` reads memory: an index that is itself a load."""
    found = []

    def f(n):
        if isinstance(n, (E.BufferLoad, S.BufferStore)) and not found:
            for i in n.indices:
                walk(i, lambda m: found.append(m) if isinstance(m, E.BufferLoad) else None)
    walk(nest, f)
    return bool(found)


@function_pass("plan_thread_splits")
def plan_thread_splits(func, ctx=None):
    from tilelang.backend.cuda.plan.plan_kernels import map_planned_launches

    def rewrite(launch, plan, target, options):
        _Splits(plan, options).visit(launch.body, True)
        return launch
    return map_planned_launches(func, ctx, rewrite)


__all__ = ["THREAD_SPLIT", "SPLIT_FORMS", "thread_split_of", "gathers", "plan_thread_splits"]
