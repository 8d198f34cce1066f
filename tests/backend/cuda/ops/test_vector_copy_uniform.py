"""ops/vector_copy.py: an index may read the vector's loop variable v through
`(v + multiples of V) // m` (constant over a vector) and step through
`(v + multiples of V) % m` (consecutive) when m is a multiple of V: the channel, row
and column of an im2col tile. Checked on IR expressions."""
from tilelang.ir import expr as E
from tilelang.backend.cuda.ops.vector_access import _mult_except, _steps_with, _uniform, consecutive

v = E.Var("j", "int32")
k = E.Var("k", "int32")
x = k * 32 + v


def test_floor_division_by_a_multiple_of_the_width_is_uniform():
    assert _uniform(x // 384, v, 8) and _uniform((x // 128) % 3, v, 8)
    assert not _uniform(x // 12, v, 8)          # 12 is not a multiple of 8: a vector can cross it
    assert not _uniform(x, v, 8) and not _uniform((v + 1) // 8, v, 8)   # v + 1 is misaligned


def test_modulo_by_a_multiple_of_the_width_steps():
    assert _steps_with(x % 128, v, 8) and consecutive(x % 128 + (x // 384) * 128, v, 8)
    assert not _steps_with(x % 12, v, 8) and _steps_with(x % 12, v, 4)
    assert not consecutive(x // 128 * 8, v, 8)  # reads v only through a division: a broadcast
    assert not _mult_except(x % 128 + v, v, 8)  # two steps per element


def test_uniform_terms_need_a_multiple_of_the_width_as_coefficient():
    assert consecutive(v + (x // 128) * 16, v, 8)
    assert not consecutive(v + (x // 128) * 4, v, 8)
