"""Search strategies: which configs to benchmark, and how long.

A strategy drives a `SearchContext`: it asks for a batch of config indices to be
evaluated at a fidelity (warm-up and timed iterations) and gets their latencies back
(`inf` for a config that does not compile, fails the check or times out). The context
keeps the budget and never evaluates a (config, fidelity) pair twice.

    exhaustive  every config at full fidelity (the default)
    random      `budget` configs drawn without replacement (seeded)
    halving     successive halving: many configs with short benchmarks, the best
                1/eta of them again with eta times longer ones, ... the last rung at
                full fidelity
    model       multi-fidelity model-guided search: every config timed once with a short
                benchmark (a tenth of the warm-up and repetitions: the screen), then
                full benchmarks of the configs with the highest expected improvement
                under a Gaussian process over config features (`surrogate.py`) that
                learns how full latencies differ from the screen; it stops early when
                no config is expected to improve on the best by more than 0.05%. Where
                the screen does not fit in half the budget: a seeded random start and
                the same model without a screen.

budget: benchmark cost counted in full benchmarks — an evaluation (one config at one
fidelity: compile once, check, time) at (warm-up w, repetitions r) costs
(w + r) / (warmup + rep), so a full benchmark costs 1 and a screen a tenth; an int >= 1,
or a float in (0, 1] = that fraction of the space. For strategies that only time at full
fidelity (exhaustive, random) it is the number of evaluations. Strategies are
deterministic for a given seed and given latencies.
"""
from __future__ import annotations

import math

import numpy as np

INF = float("inf")


class SearchContext:
    """What a strategy sees: `evaluate(indices, fidelity)` returns {index: latency in ms
    or inf}; `fidelity(divisor)` gives the (warmup, rep) of a shorter benchmark."""

    def __init__(self, configs, evaluate, budget, warmup, rep, features=None):
        self.configs = configs
        self.n = len(configs)
        self._evaluate = evaluate
        self.budget = self.n if budget is None else budget
        self.warmup, self.rep = warmup, rep
        self._features = features
        self.results = {}      # (index, (warmup, rep)) -> latency
        self.used = 0          # evaluations
        self.spent = 0.0       # their cost in full benchmarks

    @property
    def remaining(self):
        return self.budget - self.spent

    def cost(self, fidelity=None):
        """What one evaluation at `fidelity` costs, in full benchmarks."""
        w, r = fidelity if fidelity is not None else (self.warmup, self.rep)
        return (w + r) / max(1, self.warmup + self.rep)

    @property
    def features(self):
        if self._features is None:
            from tilelang.autotuner.surrogate import config_features
            self._features = config_features(self.configs)
        return self._features

    def fidelity(self, divisor=1.0):
        """(warmup, rep) with both divided by `divisor` (rep >= 1; warm-up >= 1 when the
        full warm-up is: a first launch also loads the module)."""
        if divisor <= 1:
            return self.warmup, self.rep
        return max(min(self.warmup, 1), int(round(self.warmup / divisor))), max(1, int(round(self.rep / divisor)))

    def evaluate(self, indices, fidelity=None):
        """Latencies of `indices` at `fidelity` ((warmup, rep); default full). Pairs
        already evaluated are answered from memory; new ones beyond the budget are
        dropped (not evaluated, absent from the answer)."""
        fid = tuple(fidelity) if fidelity is not None else (self.warmup, self.rep)
        each = self.cost(fid)
        new = []
        for i in dict.fromkeys(int(i) for i in indices):
            if not 0 <= i < self.n:
                raise IndexError(f"config index {i} is outside the space of {self.n} configs")
            if (i, fid) not in self.results and (len(new) + 1) * each <= self.remaining + 1e-9:
                new.append(i)
        if new:
            got = self._evaluate(new, fid)
            self.used += len(new)
            self.spent += len(new) * each
            for i in new:
                lat = got.get(i)
                self.results[(i, fid)] = INF if lat is None or not math.isfinite(lat) else float(lat)
        return {i: self.results[(i, fid)] for i in indices if (i, fid) in self.results}

    def measured(self, fidelity=None):
        fid = tuple(fidelity) if fidelity is not None else (self.warmup, self.rep)
        return {i: lat for (i, f), lat in self.results.items() if f == fid}


class Strategy:
    name = "?"

    def __init__(self, budget=None, seed=0):
        resolve_budget(budget, 1 << 30, self.name)     # type and range errors now, not mid-run
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {seed!r}")
        self.budget, self.seed = budget, seed

    def resolve_budget(self, n):
        return resolve_budget(self.budget, n, self.name)

    def search(self, ctx: SearchContext):
        raise NotImplementedError

    def describe(self):
        return (self.name, self.budget, self.seed)


class Exhaustive(Strategy):
    name = "exhaustive"

    def search(self, ctx):
        ctx.evaluate(range(ctx.n))


class RandomSearch(Strategy):
    name = "random"

    def search(self, ctx):
        order = np.random.default_rng(self.seed).permutation(ctx.n)
        ctx.evaluate(order[:ctx.budget])


class SuccessiveHalving(Strategy):
    """Rung sizes n0, ceil(n0/eta), ... down to 1 config or to as many rungs as there are
    distinct fidelities (rep, rep/eta, ... >= 1 timed iteration); rung k of R is timed
    with warm-up and repetitions divided by eta**(R-1-k), so the last rung is at full
    fidelity. n0 is the largest start whose rungs fit the budget (every config when no
    budget is given)."""
    name = "halving"

    def __init__(self, budget=None, seed=0, eta=3):
        super().__init__(budget, seed)
        if isinstance(eta, bool) or not isinstance(eta, int) or eta < 2:
            raise ValueError(f"halving: eta must be an int >= 2, got {eta!r}")
        self.eta = eta

    def resolve_budget(self, n, rep=None):
        if self.budget is None:
            return sum(self.rungs(n, math.inf, rep))
        return super().resolve_budget(n)

    def levels(self, rep):
        k = 1
        while rep is not None and self.eta ** k <= rep:
            k += 1
        return k

    def rungs(self, n, budget, rep=None):
        """The rung sizes for `n` configs, `budget` evaluations, `rep` timed iterations."""
        levels = self.levels(rep) if rep is not None else math.inf
        best = [1]
        for n0 in range(1, n + 1):
            sizes = [n0]
            while sizes[-1] > 1 and len(sizes) < levels:
                sizes.append(math.ceil(sizes[-1] / self.eta))
            if sum(sizes) > budget:
                break
            best = sizes
        return best

    def search(self, ctx):
        sizes = self.rungs(ctx.n, ctx.budget, ctx.rep)
        alive = [int(i) for i in np.random.default_rng(self.seed).permutation(ctx.n)[:sizes[0]]]
        for k, size in enumerate(sizes):
            alive = alive[:size]
            got = ctx.evaluate(alive, ctx.fidelity(self.eta ** (len(sizes) - 1 - k)))
            alive = sorted((i for i in alive if math.isfinite(got.get(i, INF))), key=lambda i: (got[i], i))
            if not alive:
                return

    def describe(self):
        return (self.name, self.budget, self.seed, self.eta)


class ModelGuided(Strategy):
    """Screen, then model (see the module docstring). `screen_divisor`: how much shorter the
    screen's benchmarks are; `screen=False`: no screen, `n_init` random configs first.
    Configs that failed count as the worst latency seen, so the model steers away from
    their neighbourhood; a config that failed its screen is not timed again."""
    name = "model"
    STOP_EI = 5e-4   # expected improvement (in log-latency) below which a search stops early
    MIN_FULL = 3     # ... but not before this many full benchmarks

    def __init__(self, budget=None, seed=0, n_init=None, batch_size=None, screen=True, screen_divisor=10):
        super().__init__(budget, seed)
        if isinstance(screen_divisor, bool) or not isinstance(screen_divisor, (int, float)) or screen_divisor < 2:
            raise ValueError(f"model: screen_divisor must be a number >= 2, got {screen_divisor!r}")
        self.n_init, self.batch_size = n_init, batch_size
        self.screen, self.screen_divisor = bool(screen), screen_divisor

    def search(self, ctx):
        low = ctx.fidelity(self.screen_divisor)
        if self.screen and ctx.cost(low) < 1 and ctx.n * ctx.cost(low) <= 0.5 * ctx.budget + 1e-9:
            screened = ctx.evaluate(range(ctx.n), low)
            prior = {i: math.log(v) for i, v in screened.items() if math.isfinite(v)}
            if prior:
                return self._refine(ctx, prior)
            return None   # nothing compiled and passed its check: nothing left to time
        return self._from_random_start(ctx)

    def _refine(self, ctx, prior):
        """Full benchmarks, chosen by expected improvement of prior + GP(residual)."""
        from tilelang.autotuner.surrogate import GaussianProcess, expected_improvement
        x = ctx.features
        ranked = sorted(prior, key=lambda i: (prior[i], i))
        ctx.evaluate(ranked[:1])
        while ctx.remaining >= 1 - 1e-9:
            full = {i: v for i, v in ctx.measured().items() if i in prior}
            todo = [i for i in ranked if i not in full]
            ok = {i: v for i, v in full.items() if math.isfinite(v)}
            if not todo:
                return
            if not ok:    # the best screened configs failed at full length: next in the ranking
                ctx.evaluate(todo[:1])
                continue
            worst = max(ok.values())
            idx = list(full)
            resid = [math.log(full[i] if math.isfinite(full[i]) else worst) - prior[i] for i in idx]
            best = min(math.log(v) for v in ok.values())
            if len(idx) >= 2:
                mean_r, std_r = GaussianProcess().fit(x[idx], resid).predict(x[todo])
            else:   # one point: the screen's bias is that point's; its spread unknown yet
                mean_r = np.full(len(todo), resid[0])
                std_r = np.full(len(todo), 0.1)
            mean = np.array([prior[i] for i in todo]) + mean_r
            # a screen is a short, noisy benchmark: its error is the config's own, not smooth
            # over the features, so the model is never surer than the residuals' spread
            floor = max(0.03, 1.5 * float(np.std(resid))) if len(idx) >= self.MIN_FULL else 0.05
            std = np.maximum(std_r, floor)
            ei = expected_improvement(mean, std, best)
            if ei.max() < self.STOP_EI and len(idx) >= self.MIN_FULL:
                return
            ctx.evaluate([todo[int(np.argmax(ei))]])

    def _from_random_start(self, ctx):
        from tilelang.autotuner.surrogate import GaussianProcess, expected_improvement
        budget = int(ctx.budget)
        n_init = self.n_init or max(3, min(budget, budget // 4))
        batch = self.batch_size or max(1, min(8, budget // 10))
        order = np.random.default_rng(self.seed).permutation(ctx.n)
        ctx.evaluate(order[:n_init])
        x = ctx.features
        while ctx.remaining >= 1 - 1e-9:
            seen = ctx.measured()
            todo = np.array([i for i in range(ctx.n) if i not in seen])
            if len(todo) == 0:
                return
            finite = [v for v in seen.values() if math.isfinite(v)]
            if not finite:       # nothing valid yet: keep sampling at random
                ctx.evaluate([int(i) for i in order if int(i) not in seen][:batch])
                continue
            worst = max(finite)
            idx = list(seen)
            y = [math.log(seen[i] if math.isfinite(seen[i]) else worst) for i in idx]
            picks = []
            for _ in range(min(batch, int(ctx.remaining + 1e-9), len(todo))):
                gp = GaussianProcess().fit(x[idx], y)
                cand = np.array([i for i in todo if i not in picks])
                mean, std = gp.predict(x[cand])
                ei = expected_improvement(mean, std, min(y))
                j = int(np.argmax(ei)) if ei.max() > 1e-12 else int(np.argmin(mean))
                picks.append(int(cand[j]))
                idx.append(int(cand[j]))
                y.append(float(mean[j]))
            ctx.evaluate(picks)

    def describe(self):
        return (self.name, self.budget, self.seed, self.n_init, self.batch_size, self.screen, self.screen_divisor)


STRATEGIES = {s.name: s for s in (Exhaustive, RandomSearch, SuccessiveHalving, ModelGuided)}


def resolve_budget(budget, n, who="strategy"):
    """An evaluation count from an int, a fraction of the space or None (everything)."""
    if budget is None:
        return n
    if isinstance(budget, bool) or not isinstance(budget, (int, float)):
        raise TypeError(f"budget must be an int (evaluations) or a float in (0, 1] (a fraction of the space), "
                        f"got {budget!r}")
    if isinstance(budget, float):
        if not 0.0 < budget <= 1.0:
            raise ValueError(f"budget given as a fraction must be in (0, 1], got {budget}")
        return max(1, int(math.ceil(budget * n)))
    if budget < 1:
        raise ValueError(f"budget must be >= 1 evaluation, got {budget}")
    return budget


def make_strategy(strategy="exhaustive", budget=None, seed=0, **options):
    """A `Strategy` from its name (or the instance itself)."""
    if isinstance(strategy, Strategy):
        if budget is not None or options:
            raise ValueError("give budget and options to the Strategy object itself, not alongside it")
        return strategy
    cls = STRATEGIES.get(strategy) if isinstance(strategy, str) else None
    if cls is None:
        raise ValueError(f"strategy must be one of {sorted(STRATEGIES)} or a Strategy object, got {strategy!r}")
    if cls is Exhaustive and budget is not None:
        raise ValueError("strategy='exhaustive' evaluates every config; a budget needs strategy='random', "
                         "'halving' or 'model'")
    try:
        return cls(budget=budget, seed=seed, **options)
    except TypeError as e:
        raise TypeError(f"strategy={strategy!r}: {e}") from None


def run_search(strategy, configs, evaluate, warmup, rep, features=None):
    """Run `strategy` over `configs` with `evaluate(indices, (warmup, rep)) -> {index:
    latency}`; returns the context (its `results` and `used`)."""
    budget = (strategy.resolve_budget(len(configs), rep) if isinstance(strategy, SuccessiveHalving)
              else strategy.resolve_budget(len(configs)))
    ctx = SearchContext(configs, evaluate, budget, warmup, rep, features)
    strategy.search(ctx)
    return ctx
