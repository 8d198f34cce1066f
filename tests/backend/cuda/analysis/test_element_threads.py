"""analysis/element_threads.py: which thread reaches which element of a buffer in a nest, as the
CUDA code generator shares the nest out (cooperative vector splits, loops over register tiles),
and whether some written element is reached by two threads."""
import numpy as np

from tilelang.backend.registry import parse_target
from tilelang.backend.cuda import pipeline as P
from tilelang.backend.cuda.analysis.element_threads import Touches, element_threads, shared_by_threads
from tilelang.backend.cuda.plan.plan_kernels import kernel_plan
from tilelang.backend.cuda.plan.private_barriers import drop_private_barriers
from tilelang.ir import stmt as S
from tilelang.transform.pass_manager import PassContext, run_passes
from tests.backend.cuda.plan.test_private_barriers import elementwise


def planned(func):
    """(plan, the top-level statements) of func's kernel as drop_private_barriers finds them."""
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS})
    ctx.target = parse_target({"kind": "cuda", "arch": "sm_90a"})
    f = run_passes(func, P.PASSES[:P.PASSES.index(drop_private_barriers)], ctx)
    launch = f.body.stmts[0] if isinstance(f.body, S.SeqStmt) else f.body
    return kernel_plan(launch), launch.body.stmts


def nests(stmts):
    return [s for s in stmts if isinstance(s, S.For)]


def test_a_vector_copy_and_a_register_tile_loop_agree_on_every_element():
    plan, stmts = planned(elementwise())
    copy_a, _, add, _, _ = nests(stmts)
    t = element_threads(plan, copy_a)
    (a_shared,) = [x for x in t.values() if x.buffer.name == "A_shared"]
    assert a_shared.writes.all()
    # element f of the 32 x 32 tile: vector f // 4, on thread (f // 4) % 128
    assert np.array_equal(a_shared.threads, (a_shared.elements // 4) % 128)
    assert sorted(a_shared.elements.tolist()) == list(range(1024))
    (a_read,) = [x for x in element_threads(plan, add).values() if x.buffer.name == "A_shared"]
    assert not a_read.writes.any()
    order = np.argsort(a_read.elements)
    assert np.array_equal(a_read.threads[order], (np.arange(1024) // 4) % 128)
    # a global tensor indexed by the block: its elements are not a function of the nest alone
    (a_global,) = [x for x in t.values() if x.buffer.name == "A"]
    assert a_global.elements is None and not a_global.writes.any()


def test_shared_by_threads():
    def touch(el, th, wr):
        return Touches(None, np.array(el), np.array(th), np.array(wr))
    mine = touch([0, 1], [0, 1], [True, True])
    assert not shared_by_threads([mine, touch([0, 1], [0, 1], [False, False])])   # each reads its own
    assert shared_by_threads([mine, touch([0, 1], [1, 0], [False, False])])       # each reads the other's
    assert not shared_by_threads([touch([0, 0], [0, 1], [False, False])])         # reads only
    assert shared_by_threads([touch([0], [0], [True]), Touches(None, None, None, np.array([False]))])
    assert not shared_by_threads([Touches(None, None, None, np.array([False]))])


def test_a_transposed_read_reaches_other_threads_elements():
    plan, stmts = planned(elementwise(transposed=True))
    copy_a, _, add, _, _ = nests(stmts)
    touches = [x for n in (copy_a, add) for x in element_threads(plan, n).values() if x.buffer.name == "A_shared"]
    assert shared_by_threads(touches)
