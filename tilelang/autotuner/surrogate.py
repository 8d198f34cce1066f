"""The model behind `strategy="model"`: config features and a small Gaussian-process
regressor (numpy only) that predicts log-latency with an uncertainty.

Features: a numeric tunable (tile sizes, stages, threads) becomes one column, on a
log2 scale when every value is positive (tile sizes grow by factors of two); any other
tunable (a policy enum, a bool mixed with strings, a pass_configs dict) becomes one
0/1 column per distinct value. Columns are scaled to [0, 1] over the whole space.
"""
from __future__ import annotations

import math

import numpy as np


def config_features(configs):
    """An (n, d) float array describing `configs` (a list of dicts)."""
    keys = []
    for c in configs:
        keys.extend(k for k in c if k not in keys)
    cols = []
    for k in keys:
        vals = [c.get(k, _MISSING) for c in configs]
        if all(_is_number(v) for v in vals):
            x = np.array([float(v) for v in vals])
            if (x > 0).all():
                x = np.log2(x)
            cols.append(x)
        else:
            names = sorted({repr(v) for v in vals})
            if len(names) > 1:
                cols.extend(np.array([1.0 if repr(v) == name else 0.0 for v in vals]) for name in names)
    if not cols:
        return np.zeros((len(configs), 1))
    x = np.stack(cols, axis=1)
    lo, hi = x.min(axis=0), x.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return (x - lo) / span


class _Missing:
    def __repr__(self):
        return "<absent>"


_MISSING = _Missing()


def _is_number(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and math.isfinite(v)


class GaussianProcess:
    """RBF-kernel GP on standardized targets; the length scale and noise level are
    chosen from a small grid by the marginal likelihood (deterministic)."""

    LENGTH_SCALES = (0.15, 0.25, 0.4, 0.6, 1.0, 1.6)
    NOISES = (1e-4, 1e-2, 1e-1)

    def fit(self, x, y):
        x, y = np.asarray(x, float), np.asarray(y, float)
        self.mu, self.sd = y.mean(), (y.std() if y.std() > 0 else 1.0)
        z = (y - self.mu) / self.sd
        d = x.shape[1]
        best = None
        for ls in self.LENGTH_SCALES:
            k = _rbf(x, x, ls * math.sqrt(d))
            for noise in self.NOISES:
                try:
                    chol = np.linalg.cholesky(k + noise * np.eye(len(x)))
                except np.linalg.LinAlgError:
                    continue
                alpha = np.linalg.solve(chol.T, np.linalg.solve(chol, z))
                nll = 0.5 * z @ alpha + np.log(np.diag(chol)).sum()
                if best is None or nll < best[0] - 1e-12:
                    best = (nll, ls * math.sqrt(d), chol, alpha)
        if best is None:
            raise np.linalg.LinAlgError("the surrogate's kernel matrix is not positive definite")
        _, self.ls, self.chol, self.alpha = best
        self.x = x
        return self

    def predict(self, xq):
        """(mean, standard deviation) of log-latency at the rows of `xq`."""
        ks = _rbf(np.asarray(xq, float), self.x, self.ls)
        mean = ks @ self.alpha
        v = np.linalg.solve(self.chol, ks.T)
        var = np.clip(1.0 - (v * v).sum(axis=0), 1e-12, None)
        return mean * self.sd + self.mu, np.sqrt(var) * self.sd


def _rbf(a, b, ls):
    d2 = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    return np.exp(-0.5 * d2 / (ls * ls))


def expected_improvement(mean, std, best):
    """E[max(best - f, 0)] for f ~ N(mean, std) (we minimise)."""
    from math import erf, sqrt
    z = (best - mean) / std
    cdf = 0.5 * (1.0 + np.vectorize(erf)(z / sqrt(2.0)))
    pdf = np.exp(-0.5 * z * z) / sqrt(2.0 * math.pi)
    return (best - mean) * cdf + std * pdf
