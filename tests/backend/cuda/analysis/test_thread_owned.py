"""Which shared addresses name their thread (analysis/thread_owned.py): the affine form of an
index with its `x // c`, `x % c` pairs folded back, and the mixed-radix rule."""
from tilelang.ir import expr as E
from tilelang.backend.cuda.analysis.thread_owned import affine_vars, determines_thread

tx, i, v, k = (E.Var(n, "int32") for n in ("tx", "i", "v", "k"))
THREADS = {id(tx): 256}


def coefs(aff):
    terms, const = aff
    return {var.name: c for var, c in terms.values()}, const


def test_a_row_and_column_split_of_one_offset_folds_back():
    e = i * 2048 + tx * 8 + v
    assert coefs(affine_vars((e // 128) * 128 + e % 128)) == ({"i": 2048, "tx": 8, "v": 1}, 0)
    assert coefs(affine_vars((e // 128) * 256 + (e % 128) * 2 + 3)) == ({"i": 4096, "tx": 16, "v": 2}, 3)


def test_a_division_without_its_remainder_is_not_affine():
    e = tx * 8 + v
    assert affine_vars(e // 128) is None
    assert affine_vars((e // 128) * 128 + (e % 64)) is None
    assert affine_vars((e // 128) * 64 + e % 128) is None   # the row's stride is not the divisor


def test_the_offset_names_the_thread_when_each_digit_outweighs_those_below():
    ranges = {id(i): (0, 8), id(v): (0, 8)}
    own = lambda e: determines_thread(affine_vars(e), THREADS, ranges, set())  # noqa: E731
    assert own(i * 2048 + tx * 8 + v)
    assert own(tx * 8 + v)                 # rounds of i need not be told apart: i is absent
    assert own(tx + i * 256)
    assert not own(tx * 4 + v)             # thread 1's lanes 0..3 are thread 0's lanes 4..7
    assert not own(i * 1024 + tx * 8 + v)  # round 1 of thread 0 is round 0 of thread 128
    assert not own(i * 8 + v)              # every thread writes the same elements
    assert not own(tx * 8 + v + k)         # k: no known range


def test_block_indices_are_the_same_for_every_thread():
    by = E.Var("by", "int32")
    ranges = {id(v): (0, 8)}
    assert determines_thread(affine_vars(by * 4096 + tx * 8 + v), THREADS, ranges, {id(by)})
    assert not determines_thread(affine_vars(by * 4096 + tx * 8 + v), THREADS, ranges, set())


def test_every_thread_dimension_must_be_told_apart():
    ty = E.Var("ty", "int32")
    threads = {id(tx): 32, id(ty): 4}
    ranges = {id(v): (0, 4)}
    assert determines_thread(affine_vars(ty * 128 + tx * 4 + v), threads, ranges, set())
    assert not determines_thread(affine_vars(tx * 4 + v), threads, ranges, set())
