"""emit/kernel.py `cooperative` only prints: every nest it shares out over the threads carries
the form plan_copy_forms chose (and the split plan_thread_splits chose) by the same
block-level rule (analysis/block_level.py); a nest without one is an internal error, not a
width and split chosen while printing."""
import pytest

import tilelang.language as T
from tilelang.backend.registry import parse_target
from tilelang.backend.cuda import pipeline as P
from tilelang.backend.cuda.analysis.block_level import BlockLevelWalk
from tilelang.backend.cuda.emit.module import generate
from tilelang.backend.cuda.plan.copy_form import COPY_FORM, copy_form
from tilelang.backend.cuda.plan.plan_kernels import kernel_plan
from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk
from tilelang.transform.pass_manager import PassContext, run_passes


def mixed(N=256):
    """Nests at block level, in warp-specialized sides and under thread-dependent control."""
    @T.prim_func
    def main(A: T.Tensor((N, 64), "float16"), B: T.Tensor((N, 64), "float16")):
        with T.Kernel(N // 64, threads=256) as bx:
            s = T.alloc_shared((64, 64), "float16")
            tx = T.get_thread_binding()
            T.copy(A[bx * 64, 0], s)
            if tx < 128:
                for i, j in T.Parallel(64, 64):
                    B[bx * 64 + i, j] = s[i, j] * 2.0
            else:
                T.fill(B[bx * 64:bx * 64 + 8, 0:64], 0)
            for t in T.serial(tx % 2):
                for k in T.Parallel(4):
                    B[bx * 64 + tx % 64, k + t] = s[tx % 64, k]
    return main


def lowered(func):
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS})
    target = parse_target({"kind": "cuda", "arch": "sm_90a"})
    ctx.target = target
    return run_passes(func, P.PASSES, ctx), target


def launch_of(func):
    out = []
    walk(func.body, lambda n: out.append(n) if isinstance(n, S.KernelLaunch) else None)
    (launch,) = out
    return launch


class _Cooperative(BlockLevelWalk):
    def __init__(self, plan):
        super().__init__(plan)
        self.nests = []

    def cooperative_nest(self, nest):
        self.nests.append(nest)


def cooperative_nests(func):
    launch = launch_of(func)
    w = _Cooperative(kernel_plan(launch))
    w.visit(launch.body, True)
    return w.nests


def test_every_cooperative_nest_has_its_form():
    func, _ = lowered(mixed())
    nests = cooperative_nests(func)
    assert len(nests) == 3   # the copy to shared, the element-wise side, the fill side
    assert all(copy_form(n) is not None for n in nests)


def test_a_nest_without_its_form_is_an_internal_error():
    func, target = lowered(mixed())
    generate(func, target)   # as planned: prints
    nest = cooperative_nests(func)[1]
    nest.annotations = {k: v for k, v in nest.annotations.items() if k != COPY_FORM}
    with pytest.raises(AssertionError, match="plan_copy_forms did not reach it"):
        generate(func, target)
