"""ir/visitor.py Mutator: a node it rebuilds (a child changed) keeps the annotations passes
recorded on the old one, whatever its constructor takes; every tile op has annotations."""
import pytest

from tilelang.ir import expr as E
from tilelang.ir import tile_ops as TO
from tilelang.ir.buffer import Buffer, BufferRegion
from tilelang.ir.visitor import substitute


def _region(buf, start):
    return BufferRegion(buf, [(start, E.IntImm(4)), (E.IntImm(0), E.IntImm(8))])


@pytest.fixture
def parts():
    a = Buffer("a", (16, 8), "float32", scope="shared")
    b = Buffer("b", (16,), "float32", scope="shared")
    i = E.Var("i", "int32")
    return a, b, i


def _ops(a, b, i):
    src, dst = _region(a, i), BufferRegion(b, [(i, E.IntImm(4))])
    return [TO.Reduce("sum", src, dst, 1), TO.Fill(src, E.FloatImm(0.0, "float32")), TO.CumSum(src, src, 1),
            TO.Atomic("add", src, src), TO.Copy(src, src), TO.Gemm(src, src, src)]


def test_every_tile_op_has_annotations(parts):
    assert all(op.annotations == {} for op in _ops(*parts))


def test_a_rebuilt_op_keeps_its_annotations(parts):
    a, b, i = parts
    for op in _ops(a, b, i):
        op.annotations["form"] = "chosen by a pass"
        new = substitute(op, {i: E.IntImm(4)})
        assert new is not op and type(new) is type(op)
        assert new.annotations == {"form": "chosen by a pass"}, type(op).__name__
        assert new.annotations is not op.annotations   # the new node's own record
        region = new.A if isinstance(new, TO.Gemm) else new.dst
        assert E.const_int_value(region.ranges[0][0]) == 4   # rebuilt with the new child


def test_an_unchanged_op_is_the_same_node(parts):
    a, b, i = parts
    op = _ops(a, b, i)[0]
    op.annotations["form"] = 1
    assert substitute(op, {E.Var("j", "int32"): E.IntImm(0)}) is op
