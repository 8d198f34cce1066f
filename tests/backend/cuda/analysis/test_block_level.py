"""The block-level rule (analysis/block_level.py): which T.Parallel nests the CUDA passes and
the printer run cooperatively, on which threads, and which run in one thread's own code."""
import tilelang.language as T
from tilelang.backend.registry import parse_target
from tilelang.backend.cuda import pipeline as P
from tilelang.backend.cuda.analysis.block_level import BlockLevelWalk
from tilelang.backend.cuda.plan.plan_kernels import kernel_plan
from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk
from tilelang.transform.pass_manager import PassContext, run_passes


class _Decisions(BlockLevelWalk):
    """Records each nest the walk reaches: (its loop variables, how it runs, its threads)."""

    def __init__(self, plan):
        super().__init__(plan)
        self.seen = []

    def _note(self, nest, how):
        names = []
        while isinstance(nest, S.For) and nest.kind == S.PARALLEL:
            names.append(nest.var.name)
            nest = nest.body
        self.seen.append((",".join(names), how, (self.range.lo, self.range.hi), self.nthreads))

    def cooperative_nest(self, nest):
        self._note(nest, "cooperative")

    def per_thread_nest(self, nest):
        self._note(nest, "per-thread")


def decisions(func, arch="sm_90a"):
    """The walk's decisions on the launch of `func` as the CUDA passes see it (right after
    plan_kernels and insert_barriers, before plan_copy_forms)."""
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS})
    ctx.target = parse_target({"kind": "cuda", "arch": arch})
    lowered = run_passes(func, P.PASSES[:P.PASSES.index(P.plan_copy_forms)], ctx)
    launches = []
    walk(lowered.body, lambda n: launches.append(n) if isinstance(n, S.KernelLaunch) else None)
    (launch,) = launches
    d = _Decisions(kernel_plan(launch))
    d.visit(launch.body, True)
    return d.seen


def test_thread_dependent_control_flow_makes_nests_per_thread():
    @T.prim_func
    def k(A: T.Tensor((256, 64), "float32"), B: T.Tensor((256, 64), "float32")):
        with T.Kernel(4, threads=128) as bx:
            s = T.alloc_shared((64, 64), "float32")
            acc = T.alloc_local((8,), "float32")
            tx = T.get_thread_binding()
            for i0, j0 in T.Parallel(64, 64):   # block level: shared out over the threads
                s[i0, j0] = A[bx * 64 + i0, j0]
            for r in T.serial(4):   # uniform bounds: still block level
                for i1, j1 in T.Parallel(64, 64):
                    B[bx * 64 + i1, j1] = s[i1, j1] + r
            for t in T.serial(tx % 4):   # bounds depend on the thread: its body is the thread's own code
                for i2 in T.Parallel(8):
                    B[bx * 64 + tx % 64, i2 + t] = s[tx % 64, i2]
            if tx % 3 == 0:   # a condition on the thread that no range describes
                for i3 in T.Parallel(8):
                    B[bx * 64 + tx % 64, i3] = 0
            for i4 in T.Parallel(8):   # a thread's own registers: every thread runs all of it
                acc[i4] = s[tx % 64, i4]
            B[bx * 64, tx % 64] = acc[0]
    assert decisions(k) == [
        ("i0,j0", "cooperative", (0, 128), 128),
        ("i1,j1", "cooperative", (0, 128), 128),
        ("i2", "per-thread", (0, 128), 128),
        ("i3", "per-thread", (0, 128), 128),
        ("i4", "per-thread", (0, 128), 128),
    ]


def test_warp_specialized_sides_run_cooperatively_on_their_ranges():
    @T.prim_func
    def k(A: T.Tensor((128, 64), "float32"), B: T.Tensor((128, 64), "float32")):
        with T.Kernel(1, threads=256):
            s = T.alloc_shared((128, 64), "float32")
            tx = T.get_thread_binding()
            if tx < 128:   # threads 0..127, as a block of 128
                for i0, j0 in T.Parallel(128, 64):
                    s[i0, j0] = A[i0, j0]
                if tx < 64:   # a range inside a range
                    for i1, j1 in T.Parallel(64, 64):
                        B[i1, j1] = s[i1, j1]
            else:   # threads 128..255
                for i2, j2 in T.Parallel(128, 64):
                    B[i2, j2] = 1.0
                for r in T.serial(tx - 128):   # still thread-dependent inside the range
                    for i3 in T.Parallel(4):
                        B[r, i3] = 2.0
    assert decisions(k) == [
        ("i0,j0", "cooperative", (0, 128), 128),
        ("i1,j1", "cooperative", (0, 64), 64),
        ("i2,j2", "cooperative", (128, 256), 128),
        ("i3", "per-thread", (128, 256), 128),
    ]


def test_pipelined_body_is_the_plans_statements_at_block_level():
    @T.prim_func
    def k(A: T.Tensor((1024, 64), "float16"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_shared((64, 64), "float32")
            T.clear(acc)
            for ko in T.Pipelined(16, num_stages=2):
                T.copy(A[ko * 64, 0], s)
                for i, j in T.Parallel(64, 64):
                    acc[i, j] += s[i, j]
            T.copy(acc, B)
    seen = decisions(k)
    # the clear, the body's element-wise nest (its copy is the pipeline's, not a statement
    # of the body), the store: all shared out over the block
    assert [how for _, how, _, _ in seen] == ["cooperative"] * 3
    assert seen[1][0] == "i,j"
