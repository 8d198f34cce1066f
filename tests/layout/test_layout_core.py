"""Layout: construction from a Python function, numeric map, output shape,
bijectivity, inverse, repeat/expand/reshape, symbolic substitution."""
import pytest

from tilelang.ir import expr as E
from tilelang.layout import Layout, make_linear_layout


def test_row_major_map_and_shape():
    L = Layout((4, 8), lambda i, j: i * 8 + j)
    assert L.get_input_shape() == [4, 8]
    assert L.get_output_shape() == [32]
    assert L.map(2, 3) == 19
    assert L.is_bijective()


def test_multi_dim_output_linearizes():
    L = Layout((16, 8), lambda i, j: [i // 8, j, i % 8])
    assert L.get_output_shape() == [2, 8, 8]
    assert L.forward(9, 5) == (1, 5, 1)
    assert L.map(9, 5) == 1 * 64 + 5 * 8 + 1
    assert L.is_bijective()


def test_padding_is_not_bijective_but_injective():
    L = Layout((4, 8), lambda i, j: i * 9 + j)
    assert L.is_injective() and not L.is_bijective()
    with pytest.raises(ValueError):
        L.inverse()


def test_inverse_table_roundtrip():
    L = Layout((4, 8), lambda i, j: j * 4 + i)    # column-major
    inv = L.inverse()
    for i in range(4):
        for j in range(8):
            assert inv.forward(L.map(i, j)) == (i, j)


def test_symbolic_substitution():
    L = Layout((4, 8), lambda i, j: i * 8 + j)
    x = E.Var("x")
    (e,) = L(x, 3)
    assert str(e) == "x * 8 + 3"
    assert str(L.map(x, 3)) == "x * 8 + 3"


def test_repeat_expand_reshape():
    L = Layout((4, 8), lambda i, j: i * 8 + j)
    R = L.repeat(0, 3)
    assert R.get_input_shape() == [12, 8] and R.get_output_shape() == [3, 32]
    assert R.forward(5, 2) == (1, 10)
    X = L.expand([2])
    assert X.forward(1, 2, 3) == (1, 19)
    S = L.reshape([32])
    assert [S.map(k) for k in range(32)] == list(range(32))


def test_linear_layout_any_rank():
    L = make_linear_layout((2, 3, 4))
    assert L.map(1, 2, 3) == 23 and L.is_bijective()


def test_repr_mentions_shapes():
    assert "[4, 8] -> [32]" in repr(Layout((4, 8), lambda i, j: i * 8 + j))


def test_out_of_range_index_rejected():
    with pytest.raises(IndexError):
        Layout((4, 8), lambda i, j: i * 8 + j).map(4, 0)
