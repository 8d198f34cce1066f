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


def _in_loops(expr, loops):
    """`expr` simplified inside `for v in range(lo, lo + n)` loops ((v, lo, n) outermost first),
    as the simplify pass visits it."""
    from tilelang.ir import stmt as S
    from tilelang.arith.simplify import Simplifier
    body = S.Evaluate(expr)
    for v, lo, n in reversed(loops):
        body = S.For(v, IntImm(lo), IntImm(n), S.SERIAL, body)
    out = Simplifier().visit(body)
    while isinstance(out, S.For):
        out = out.body
    return out.value


def test_div_mod_split_by_a_loop_variables_range():
    # an im2col column k * 64 + j (j < 64) of a [KH, KW, C=128] filter: its tap and channel
    k, j = Var("k"), Var("j")
    col = k * 64 + j
    assert str(_in_loops(col // 384, [(j, 0, 64)])) == "k // 6"
    assert str(_in_loops(col // 128 % 3, [(j, 0, 64)])) == "k // 2 % 3"
    assert str(_in_loops(col % 128, [(j, 0, 64)])) == "k % 2 * 64 + j"
    assert str(_in_loops(col % 64, [(j, 0, 64)])) == "j"


def test_div_mod_split_checks_the_range():
    k, j = Var("k"), Var("j")
    assert "j" in str(_in_loops((k * 64 + j) // 384, [(j, 0, 65)]))      # j may reach 64
    assert "j" in str(_in_loops((k * 64 + j) // 384, [(j, -1, 64)]))     # or -1
    assert "j" in str(_in_loops((k * 64 + j) // 384, [])) and "j" in str(simplify((k * 64 + j) // 384))
    assert str(_in_loops((k * 64 + j + 8) // 128, [(j, 0, 56)])) == "k // 2"
    assert "j" in str(_in_loops((k * 64 + j + 8) // 128, [(j, 0, 57)]))


def test_div_mod_split_matches_python_on_every_value():
    # floor semantics for negative high parts too
    from tilelang.ir.visitor import substitute
    k, j = Var("k"), Var("j")
    for e, ref in (((k * 64 + j) // 384, lambda kv, jv: (kv * 64 + jv) // 384),
                   ((k * 64 + j) % 384, lambda kv, jv: (kv * 64 + jv) % 384),
                   ((k * 96 + j * 2) // 64, lambda kv, jv: (kv * 96 + jv * 2) // 64)):
        s = _in_loops(e, [(j, 0, 16)])
        assert "k" in str(s)
        for kv in range(-20, 20):
            for jv in range(16):
                got = simplify(substitute(s, {k: IntImm(kv), j: IntImm(jv)})).value
                assert got == ref(kv, jv), (str(s), kv, jv)


def test_a_comparison_the_loop_ranges_decide_folds():
    # FlashAttention's key mask `k * 128 + j >= seq_len` that no iteration reaches (seq_len 256,
    # two 128-column tiles) folds; one the last tile reaches stays
    k, j = Var("k"), Var("j")
    assert str(_in_loops(k * 128 + j >= 256, [(k, 0, 2), (j, 0, 128)])) == "False"
    assert str(_in_loops(k * 128 + j < 256, [(k, 0, 2), (j, 0, 128)])) == "True"
    assert str(_in_loops(k * 128 + j >= 200, [(k, 0, 2), (j, 0, 128)])) == "k * 128 + j >= 200"
    assert str(_in_loops(k * 128 + j != 300, [(k, 0, 2), (j, 0, 128)])) == "True"
    n = Var("n")   # a variable without a known range keeps it
    assert str(_in_loops(k * 128 + j < n, [(k, 0, 2), (j, 0, 128)])) == "k * 128 + j < n"


def test_range_decided_comparisons_match_python_on_every_value():
    import itertools
    import operator
    from tilelang.ir import expr as E
    k, j = Var("k"), Var("j")
    ops = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
           "!=": operator.ne}
    for op, c in itertools.product(ops, [-1, 0, 5, 127, 128, 255, 256, 300]):
        out = _in_loops(E.binop(op, k * 128 + j, IntImm(c)), [(k, 0, 2), (j, 0, 128)])
        values = {ops[op](kk * 128 + jj, c) for kk in range(2) for jj in range(128)}
        if len(values) == 1:
            assert str(out) == str(values.pop()), (op, c, out)
        else:
            assert str(out) not in ("True", "False"), (op, c, out)
