"""ir/pipeline_spec.py: T.Pipelined's arguments travel as one PipelineSpec on the loop,
checked against the loop body with errors at the user's line, and print back as the
arguments that made them."""
import pytest

import tilelang.language as T
from tilelang.ir import stmt as S
from tilelang.ir.errors import TileLangError
from tilelang.ir.pipeline_spec import PIPELINE, PipelineSpec, make_pipeline_spec, pipeline_spec
from tilelang.ir.visitor import walk


def _line_of(err):
    first = str(err).splitlines()[0]
    assert first.startswith(__file__ + ":"), first
    return int(first.split(":")[1])


def _line(marker):
    src = open(__file__).read().splitlines()
    return next(i + 1 for i, text in enumerate(src) if text.rstrip().endswith("# " + marker))


def _copy_copy_gemm(**kw):
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            As = T.alloc_shared((64, 16), "float16")
            Bs = T.alloc_shared((16, 64), "float16")
            Cf = T.alloc_fragment((64, 64), "float32")
            T.clear(Cf)
            for ko in T.Pipelined(4, **kw):  # the-loop
                T.copy(A[0, ko * 16], As)
                T.copy(B[ko * 16, 0], Bs)  # second-copy
                T.gemm(As, Bs, Cf)
            T.copy(Cf, C)
    return k


def _loop(f):
    loops = []
    walk(f.body, lambda n: loops.append(n) if isinstance(n, S.For) and n.kind == S.PIPELINED else None)
    assert len(loops) == 1
    return loops[0]


def test_the_loop_carries_one_spec_and_prints_its_arguments():
    f = _copy_copy_gemm(num_stages=0, order=[1, 2, 0], stage=[0, 0, 2], group=[[0, 1], [2]])
    spec = pipeline_spec(_loop(f))
    assert spec == PipelineSpec(0, (1, 2, 0), (0, 0, 2), None, ((0, 1), (2,)))
    assert list(_loop(f).annotations) == [PIPELINE]
    assert spec.depth == 3    # a manual schedule: max(stage) + 1
    assert "for ko in T.Pipelined(4, num_stages=0, order=[1, 2, 0], stage=[0, 0, 2], group=[[0, 1], [2]]):" \
        in f.script()
    assert pipeline_spec(_loop(_copy_copy_gemm(num_stages=3))).depth == 3
    assert _copy_copy_gemm(num_stages=2, stage=[0, 0, 1], order=[0, 1, 2]).script() != \
        _copy_copy_gemm(num_stages=2).script()   # the schedule is part of the kernel's identity


def test_published_empty_lists_mean_not_given():
    assert make_pipeline_spec(2, [], [], [], []) == PipelineSpec(2)


def test_declarations_take_no_entry_and_the_older_long_form_is_accepted():
    def k(order, stage):
        @T.prim_func
        def f(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=32):
                s = T.alloc_shared((16,), "float32")
                for i in T.Pipelined(4, order=order, stage=stage):
                    base: T.int32 = i * 16
                    T.copy(A[base], s)
                    T.copy(s, B[base])
        return pipeline_spec(_loop(f))
    assert k([1, 0], [0, 1]) == PipelineSpec(0, (1, 0), (0, 1))
    # an entry for the declaration too (statement 0): dropped, the others renumbered
    assert k([0, 2, 1], [0, 0, 1]) == PipelineSpec(0, (1, 0), (0, 1))


@pytest.mark.parametrize("kw,message", [
    (dict(order=[0, 1, 2]), "order= needs stage= as well"),
    (dict(stage=[0, 0, 1]), "stage= needs order= as well"),
    (dict(order=[0, 1], stage=[0, 0, 1]), "order has 2 entries and stage 3"),
    (dict(order=[0, 1], stage=[0, 1]), "order/stage have 2 entries, the loop body has 3 statements"),
    (dict(order=[0, 1, 3], stage=[0, 0, 1]), r"order=\[0, 1, 3\] must be a permutation of 0..2"),
    (dict(order=[0, 1, 2], stage=[0, -1, 1]), "has a negative stage"),
    (dict(num_stages=2, sync=[[0, 3]]), r"sync=\[\[0, 3\]\] names statement 3; the loop body has 3"),
    (dict(num_stages=2, group=[[5]]), "group=.* names statement 5"),
])
def test_a_schedule_that_does_not_fit_the_body_is_an_error_at_the_loop(kw, message):
    with pytest.raises(ValueError, match=message) as e:
        _copy_copy_gemm(**kw)
    assert isinstance(e.value, TileLangError)
    assert _line_of(e.value) == _line("the-loop")


def test_a_duplicate_order_points_at_the_second_statement():
    # the published package rejects it too ("same order"), at the same statement
    with pytest.raises(ValueError, match="statements 0 and 1 the same order 0") as e:
        _copy_copy_gemm(order=[0, 0, 1], stage=[0, 0, 1])
    assert _line_of(e.value) == _line("second-copy")


@pytest.mark.parametrize("kw,message", [
    (dict(num_stages=-1), "num_stages must be an int >= 0"),
    (dict(num_stages=2.0), "num_stages must be an int >= 0"),
    (dict(order=(0, "1", 2), stage=[0, 0, 1]), "order must be a list of ints"),
    (dict(order=[0, 1, 2], stage=3), "stage must be a list of ints"),
    (dict(num_stages=2, sync=[0, 1]), "sync must be a list of lists of ints"),
    (dict(num_stages=2, group=5), "group must be a list of lists of ints"),
])
def test_argument_types_are_checked_where_they_are_given(kw, message):
    with pytest.raises((ValueError, TypeError), match=message) as e:
        _copy_copy_gemm(**kw)
    assert _line_of(e.value) == _line("the-loop")
