"""`tilelang.math` host helpers for choosing tile sizes."""
import pytest

import tilelang
from tilelang.math import cdiv, next_power_of_2


@pytest.mark.parametrize("x,want", [(1, 1), (2, 2), (3, 4), (64, 64), (65, 128), (576, 1024)])
def test_next_power_of_2(x, want):
    assert next_power_of_2(x) == want


def test_cdiv():
    assert cdiv(1024, 64) == 16 and cdiv(1025, 64) == 17 and cdiv(1, 64) == 1
    assert tilelang.cdiv is cdiv and tilelang.math.next_power_of_2 is next_power_of_2


def test_cdiv_of_an_index_expression():
    import tilelang.language as T
    n = T.dynamic("n")
    e = cdiv(n, 32)
    assert "n" in str(e)
