"""Search strategies (tilelang.autotuner.search) on a fake benchmark whose landscape is
known: which configs each strategy times, at which fidelity, and what it finds."""
import itertools
import math

import numpy as np
import pytest

from tilelang.autotuner.search import (SearchContext, SuccessiveHalving, make_strategy, resolve_budget,
                                       run_search)
from tilelang.autotuner.surrogate import GaussianProcess, config_features

WARMUP, REP = 9, 27
SPACE = [dict(bm=bm, bn=bn, stages=s, policy=p)
         for bm, bn, s, p in itertools.product((16, 32, 64, 128), (16, 32, 64, 128), (1, 2, 3, 4),
                                               ("square", "full_row"))]


def latency(c):
    """A smooth bowl around bm=64, bn=32, stages=3, policy=square; tiles too large fail."""
    if c["bm"] * c["bn"] * c["stages"] > 128 * 64 * 3:
        return None
    return (1.0 + 0.3 * (math.log2(c["bm"]) - 6) ** 2 + 0.2 * (math.log2(c["bn"]) - 5) ** 2
            + 0.1 * abs(c["stages"] - 3) + (0.05 if c["policy"] == "full_row" else 0.0))


TRUE = {i: latency(c) for i, c in enumerate(SPACE)}
OPT = min((i for i in TRUE if TRUE[i] is not None), key=lambda i: TRUE[i])


class FakeBench:
    """Times configs from the landscape; with `noise`, a short benchmark is noisier
    (relative error ~ noise / sqrt(rep)), seeded so the test is repeatable."""

    def __init__(self, noise=0.0, seed=0):
        self.calls = []
        self.noise, self.rng = noise, np.random.default_rng(seed)

    def __call__(self, indices, fidelity):
        self.calls.extend((i, fidelity) for i in indices)
        out = {}
        for i in indices:
            t = TRUE[i]
            if t is not None:
                out[i] = t * (1 + self.noise / math.sqrt(fidelity[1]) * self.rng.standard_normal())
        return out


def search(name, budget=None, seed=0, bench=None, **options):
    bench = bench or FakeBench()
    ctx = run_search(make_strategy(name, budget, seed, **options), SPACE, bench, WARMUP, REP)
    full = ctx.measured()
    best = min((i for i in full if math.isfinite(full[i])), key=lambda i: (full[i], i))
    return ctx, bench, best


def test_the_landscape_has_one_optimum_and_invalid_configs():
    assert SPACE[OPT] == dict(bm=64, bn=32, stages=3, policy="square")
    assert sum(v is None for v in TRUE.values()) > 0


def test_exhaustive_times_every_config_once_at_full_fidelity():
    ctx, bench, best = search("exhaustive")
    assert best == OPT
    assert sorted(bench.calls) == [(i, (WARMUP, REP)) for i in range(len(SPACE))]
    assert ctx.used == len(SPACE)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_times_exactly_budget_distinct_configs_and_reports_their_best(seed):
    ctx, bench, best = search("random", budget=20, seed=seed)
    idx = [i for i, _ in bench.calls]
    assert len(idx) == 20 == len(set(idx)) == ctx.used
    assert {f for _, f in bench.calls} == {(WARMUP, REP)}
    valid = [i for i in idx if TRUE[i] is not None]
    assert best == min(valid, key=lambda i: TRUE[i])


def test_random_with_the_whole_space_as_budget_finds_the_optimum():
    _, bench, best = search("random", budget=1.0, seed=5)
    assert best == OPT and len(bench.calls) == len(SPACE)


def test_same_seed_same_search_other_seed_other_search():
    a = search("random", budget=10, seed=3)[1].calls
    assert a == search("random", budget=10, seed=3)[1].calls
    assert a != search("random", budget=10, seed=4)[1].calls
    m = search("model", budget=24, seed=3)[1].calls
    assert m == search("model", budget=24, seed=3)[1].calls


def test_halving_rungs_fit_the_budget_and_the_fidelities():
    sh = SuccessiveHalving(eta=3)
    assert sh.rungs(128, 40) == [27, 9, 3, 1]
    assert sh.rungs(128, math.inf, rep=27) == [128, 43, 15, 5]      # 27, 9, 3, 1 repetitions
    assert sh.rungs(128, math.inf, rep=100) == [128, 43, 15, 5, 2]  # 100, 33, 11, 4, 1
    assert sh.rungs(5, 2) == [1]


def test_halving_times_short_then_long_keeps_the_fastest_and_never_a_pair_twice():
    ctx, bench, best = search("halving", seed=0)       # no budget: every config starts
    assert len(bench.calls) == len(set(bench.calls)) == ctx.used == 128 + 43 + 15 + 5
    by_fid = {}
    for i, f in bench.calls:
        by_fid.setdefault(f, []).append(i)
    assert [(f, len(v)) for f, v in sorted(by_fid.items(), key=lambda kv: kv[0][1])] == [
        ((1, 1), 128), ((1, 3), 43), ((3, 9), 15), ((WARMUP, REP), 5)]
    order = sorted(by_fid.items(), key=lambda kv: kv[0][1])
    for (_, prev), (_, nxt) in zip(order, order[1:]):
        ranked = sorted((i for i in prev if TRUE[i] is not None), key=lambda i: (TRUE[i], i))
        assert sorted(nxt) == sorted(ranked[:len(nxt)])    # noiseless: exactly the fastest survive
    assert best == OPT


def test_halving_finds_the_optimum_through_noisy_short_benchmarks():
    """Rung 0 (1 repetition) is noisy; the survivors are re-timed longer, so the true
    optimum wins although short timings alone would often pick another config."""
    wins_short_only = 0
    for seed in range(5):
        ctx, bench, best = search("halving", seed=seed, bench=FakeBench(noise=0.08, seed=seed))
        assert best == OPT
        r0 = {i: lat for i, lat in ctx.measured((1, 1)).items() if math.isfinite(lat)}
        wins_short_only += min(r0, key=r0.get) == OPT
    assert wins_short_only < 5


@pytest.mark.parametrize("seed", range(6))
def test_model_finds_the_optimum_with_a_third_of_the_benchmarks(seed):
    ctx, bench, best = search("model", budget=len(SPACE) // 3, seed=seed, bench=FakeBench(noise=0.08, seed=seed))
    assert best == OPT
    assert len(bench.calls) == len(set(bench.calls))          # no (config, fidelity) pair twice
    assert ctx.spent <= len(SPACE) // 3
    screen = [i for i, f in bench.calls if f == (1, 3)]       # a tenth of (9, 27), rounded
    full = [i for i, f in bench.calls if f == (WARMUP, REP)]
    assert sorted(screen) == list(range(len(SPACE))) and 1 <= len(full) < len(SPACE) // 3 - 14
    assert all(TRUE[i] is not None for i in full)             # a config that failed its screen is not re-timed


def test_model_costs_count_short_benchmarks_by_their_length():
    ctx, bench, _ = search("model", budget=len(SPACE) // 3, seed=0)
    cost = sum((w + r) / (WARMUP + REP) for _, (w, r) in bench.calls)
    assert ctx.spent == pytest.approx(cost) and ctx.used == len(bench.calls)


def test_model_without_a_screen_or_with_a_budget_too_small_for_one_starts_at_random():
    for kw in (dict(budget=len(SPACE) // 3, screen=False), dict(budget=20)):   # 128 screens cost 14.2 > 20 / 2
        ctx, bench, _ = search("model", seed=1, **kw)
        assert {f for _, f in bench.calls} == {(WARMUP, REP)} and ctx.used == kw["budget"]
    with pytest.raises(ValueError, match="screen_divisor"):
        make_strategy("model", 10, 0, screen_divisor=1)


def test_model_beats_random_on_a_small_budget():
    """With 24 of 128 evaluations random sampling rarely meets the optimum (p ~ 0.19 a
    run); the model should, most of the time."""
    hits = {"model": 0, "random": 0}
    for name in hits:
        for seed in range(10):
            hits[name] += search(name, budget=24, seed=seed)[2] == OPT
    assert hits["model"] >= 5 and hits["model"] >= hits["random"] + 3


def test_model_when_everything_fails_keeps_sampling_and_stops_at_the_budget():
    calls = []

    def nothing_works(indices, fidelity):
        calls.extend(indices)
        return {}
    ctx = run_search(make_strategy("model", 12, 0), SPACE, nothing_works, WARMUP, REP)
    assert ctx.used == 12 and len(calls) == len(set(calls)) == 12


def test_context_answers_repeats_from_memory_and_drops_what_exceeds_the_budget():
    bench = FakeBench()
    ctx = SearchContext(SPACE, bench, 3, WARMUP, REP)
    assert set(ctx.evaluate([0, 1])) == {0, 1}
    assert set(ctx.evaluate([1, 2, 3, 4])) == {1, 2}     # 1 from memory, 2 in budget, 3/4 dropped
    assert [i for i, _ in bench.calls] == [0, 1, 2] and ctx.remaining == 0
    with pytest.raises(IndexError, match="outside the space of 128 configs"):
        ctx.evaluate([500])


def test_features_log_scale_numbers_and_one_hot_the_rest():
    x = config_features([dict(b=16, p="a"), dict(b=64, p="b"), dict(b=32, p="a")])
    assert x.shape == (3, 3)
    np.testing.assert_allclose(x[:, 0], [0.0, 1.0, 0.5])
    np.testing.assert_allclose(x[:, 1:], [[1, 0], [0, 1], [1, 0]])


def test_gaussian_process_interpolates_a_smooth_function():
    x = np.linspace(0, 1, 9)[:, None]
    gp = GaussianProcess().fit(x, np.sin(3 * x[:, 0]))
    mean, std = gp.predict(np.array([[0.0625], [0.5]]))
    np.testing.assert_allclose(mean, np.sin(3 * np.array([0.0625, 0.5])), atol=0.02)
    assert std[1] < 0.1


@pytest.mark.parametrize("kw, err, match", [
    (dict(strategy="anneal"), ValueError, "strategy must be one of"),
    (dict(strategy="exhaustive", budget=5), ValueError, "a budget needs strategy"),
    (dict(strategy="random", budget=0), ValueError, "budget must be >= 1"),
    (dict(strategy="random", budget=1.5), ValueError, "fraction must be in"),
    (dict(strategy="random", budget="10"), TypeError, "budget must be an int"),
    (dict(strategy="random", seed=1.5), TypeError, "seed must be an int"),
    (dict(strategy="halving", eta=1), ValueError, "eta must be an int >= 2"),
    (dict(strategy="model", depth=3), TypeError, "strategy='model'"),
])
def test_bad_search_arguments_name_the_parameter(kw, err, match):
    with pytest.raises(err, match=match):
        make_strategy(**kw)


def test_budget_fraction():
    assert resolve_budget(0.25, 128) == 32 and resolve_budget(None, 7) == 7 and resolve_budget(0.01, 10) == 1
