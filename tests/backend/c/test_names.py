"""backend/c/names.py: one allocator of C identifiers for both backends."""
import pytest

from tilelang.ir import expr as E
from tilelang.backend.c.names import CNames, C_RESERVED
from tilelang.backend.cpu.expr import cpu_names
from tilelang.backend.cuda.emit.kernel import Names as CudaNames


def test_names_are_unique_and_stable_by_identity():
    n = CNames()
    a, b, c = E.Var("x"), E.Var("x"), E.Var("x_1")
    assert n.new(a, a.name) == "x"
    assert n.new(b, b.name) == "x_1"
    # a user's own `x_1` does not collide with the second `x`
    assert n.new(c, c.name) == "x_1_1"
    assert n.name(a, "ignored") == "x" and n[a] == "x" and n.get(id(b)) == "x_1"
    assert n.name(E.Var("y"), "y") == "y"


def test_unusable_names_are_escaped_each_backend_its_way():
    cuda, cpu = CudaNames(), cpu_names()
    for raw, cuda_name, cpu_name in [("int", "v_int", "int_"), ("2d", "v_2d", "v2d"), ("tl_acc", "v_tl_acc", "tl_acc_"),
                                     ("a.b-c", "a_b_c", "a_b_c"), ("threadIdx", "v_threadIdx", "threadIdx"),
                                     ("and", "v_and", "and_"), ("", "v", "v")]:
        assert cuda.new(object(), raw) == cuda_name, raw
        assert cpu.new(object(), raw) == cpu_name, raw
    assert "threadIdx" not in C_RESERVED   # CUDA's built-ins are the CUDA allocator's own


def test_internal_names_keep_the_tl_prefix_and_fresh_binds_nothing():
    n = CNames()
    assert n.new(object(), "tl_acc", internal=True) == "tl_acc"
    assert n.fresh("tl_acc") == "tl_acc_1"
    n.reserve("tl_tid")
    assert n.fresh("tl_tid") == "tl_tid_1"


def test_bound_rebinds_for_the_block_only_and_restores_on_error():
    n = CNames()
    v, w = E.Var("j"), E.Var("k")
    n.new(v, "j")
    with n.bound(v, "(j + 1)") as s:
        assert s == "(j + 1)" and n[v] == "(j + 1)"
        with n.bound(v, "(j + 2)"):
            assert n[v] == "(j + 2)"
        assert n[v] == "(j + 1)"
    assert n[v] == "j"
    with pytest.raises(RuntimeError):
        with n.bound(w, "k_next"):
            assert n[w] == "k_next"
            raise RuntimeError("emitter failed")
    assert w not in n and n.get(id(w)) is None
    with pytest.raises(KeyError, match="`k` has no C name"):
        n[w]


def test_bound_all_and_alias():
    n = CNames()
    a, b = E.Var("a"), E.Var("b")
    n.new(a, "a")
    n.new(b, "b")
    with n.bound_all([(a, "a_slot"), (b, "b_slot")]):
        assert (n[a], n[b]) == ("a_slot", "b_slot")
    assert (n[a], n[b]) == ("a", "b")
    n.alias(a, "0")
    assert n[a] == "0"


def test_child_scope_sees_the_parent_and_keeps_its_own():
    fn = CudaNames()
    p = E.Var("n")
    fn.new(p, "n")
    k1, k2 = fn.child(), fn.child()
    assert isinstance(k1, CudaNames) and k1[p] == "n"
    i = E.Var("i")
    assert k1.new(i, "i") == "i"
    assert k1.new(E.Var("n"), "n") == "n_1"   # the parameter's name stays taken
    assert i not in fn and i not in k2 and k2.new(E.Var("i"), "i") == "i"
    assert k1.new(object(), "int") == "v_int"   # the parent's reserved words
