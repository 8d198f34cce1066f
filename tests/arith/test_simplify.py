from tilelang.ir import Var, IntImm
from tilelang.arith import simplify, prove


def test_affine_extent_folds():
    by = Var("by")
    assert isinstance(simplify((by + 1) * 128 - by * 128), IntImm)
    assert simplify((by + 1) * 128 - by * 128).value == 128


def test_cancel_and_constant_fold():
    i, j = Var("i"), Var("j")
    assert str(simplify(i * 4 + j - i * 4)) == "j"
    assert simplify(IntImm(7) // 2).value == 3
    assert simplify(IntImm(-7) // 2).value == -4   # floor division
    assert simplify(IntImm(-7) % 2).value == 1     # floor modulo


def test_div_mod_of_aligned_sums():
    by = Var("by")
    assert str(simplify((by * 128 + 5) // 128)) == "by"
    assert simplify((by * 128 + 5) % 128).value == 5


def test_prove():
    i = Var("i")
    assert prove(IntImm(3) < 4)
    assert not prove(i < 4)
