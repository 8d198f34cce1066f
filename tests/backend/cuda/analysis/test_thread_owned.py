"""Which shared addresses name their thread (analysis/thread_owned.py): the affine form of an
index with its `x // c`, `x % c` pairs folded back, and the mixed-radix rule."""
from tilelang.ir import expr as E
from tilelang.backend.cuda.analysis.thread_owned import address_terms, determines_thread

tx, i, v, k = (E.Var(n, "int32") for n in ("tx", "i", "v", "k"))
THREADS = {id(tx): (0, 256)}


def affine_vars(e):
    """address_terms when every atom is a variable, else None."""
    at = address_terms(e)
    return at if at is not None and all(isinstance(a, E.Var) for a, _ in at[0].values()) else None


def coefs(aff):
    terms, const = aff
    return {var.name: c for var, c in terms.values()}, const


def owns(e, threads=THREADS, ranges=None, uniform=()):
    ranges = {**(ranges or {}), **threads}
    return determines_thread(address_terms(e)[0], set(threads), ranges, set(uniform))


def test_a_row_and_column_split_of_one_offset_folds_back():
    e = i * 2048 + tx * 8 + v
    assert coefs(affine_vars((e // 128) * 128 + e % 128)) == ({"i": 2048, "tx": 8, "v": 1}, 0)
    assert coefs(affine_vars((e // 128) * 256 + (e % 128) * 2 + 3)) == ({"i": 4096, "tx": 16, "v": 2}, 3)


def test_a_division_without_its_remainder_stays_a_digit_of_its_own():
    e = tx * 8 + v
    assert affine_vars(e // 128) is None
    assert affine_vars((e // 128) * 128 + (e % 64)) is None
    assert affine_vars((e // 128) * 64 + e % 128) is None   # the row's stride is not the divisor
    assert sorted(a.op for a, _ in address_terms((e // 128) * 64 + e % 128)[0].values()) == ["%", "//"]


def test_the_offset_names_the_thread_when_each_digit_outweighs_those_below():
    ranges = {id(i): (0, 8), id(v): (0, 8)}
    own = lambda e: owns(e, ranges=ranges)  # noqa: E731
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
    assert owns(by * 4096 + tx * 8 + v, ranges=ranges, uniform={id(by)})
    assert not owns(by * 4096 + tx * 8 + v, ranges=ranges)


def test_every_thread_dimension_must_be_told_apart():
    ty = E.Var("ty", "int32")
    threads = {id(tx): (0, 32), id(ty): (0, 4)}
    ranges = {id(v): (0, 4)}
    assert owns(ty * 128 + tx * 4 + v, threads, ranges)
    assert not owns(tx * 4 + v, threads, ranges)


def test_row_and_column_of_the_thread_index_give_it_back():
    # the MLA decode producer's cp.async destination: KV[s, r * 16 + t // 8, u * 64 + t % 8 * 8]
    # (8 lanes), t = tx - 256 on the warpgroup of threads 256..383
    s, r, u, lane = (E.Var(n, "int32") for n in ("s", "r", "u", "lane"))
    t = tx - 256
    ranges = {id(s): (0, 2), id(r): (0, 4), id(u): (0, 8), id(lane): (0, 8)}
    producer = {id(tx): (256, 128)}
    kv = s * 32768 + (r * 16 + t // 8) * 512 + u * 64 + t % 8 * 8 + lane
    assert owns(kv, producer, ranges)
    assert not owns(kv, {id(tx): (0, 384)}, ranges)                         # t // 8 spans 48 rows
    assert not owns(s * 32768 + (r * 16 + t // 8) * 512 + u * 64 + lane, producer, ranges)  # t % 8 lost
    assert not owns(s * 32768 + (r * 16 + t // 8) * 512 + u * 64 + t % 8 * 4 + lane, producer, ranges)
