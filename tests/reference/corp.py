"""Plain-NumPy CORP score decomposition of binary forecasts (Dimitriadis, Gneiting, Jordan
2021, eq. 4): pool exact ties of the forecasts, pure-Python PAV of the outcomes, and the three
mean scores (forecast, recalibrated, marginal), one loop per row."""

from __future__ import annotations

import math

import numpy as np

from .classifier_recalibration import isotonic_fit


def _score(name, x, y):
    if name == "brier":
        return (x - y) ** 2
    # log score with 0 log 0 = 0
    out = 0.0
    if y > 0:
        out -= y * math.log(x) if x > 0 else -math.inf
    if y < 1:
        out -= (1 - y) * math.log(1 - x) if x < 1 else -math.inf
    return out


def decomposition(probs, labels, score="brier", sample_weight=None):
    """(score, MCB, DSC, UNC) as Python floats."""
    p = np.asarray(probs, np.float64)
    y = np.asarray(labels, np.float64)
    w = np.ones_like(p) if sample_weight is None else np.asarray(sample_weight, np.float64)
    xs, g = isotonic_fit(p, y, w)
    recal = {float(a): float(b) for a, b in zip(xs, g)}
    total = float(w.sum())
    ybar = float(np.sum(w * y)) / total
    s = sum(wi * _score(score, pi, yi) for pi, yi, wi in zip(p, y, w) if wi > 0) / total
    s_rc = sum(wi * _score(score, recal[float(pi)], yi) for pi, yi, wi in zip(p, y, w) if wi > 0) / total
    s_mg = sum(wi * _score(score, ybar, yi) for pi, yi, wi in zip(p, y, w) if wi > 0) / total
    return s, s - s_rc, s_mg - s_rc, s_mg


def consistency_band(probs, level, n_resamples, seed=0):
    """Pointwise band of PAV refits under the null (outcomes redrawn from the forecasts), over
    the sorted forecasts, by a loop of refits."""
    rng = np.random.default_rng(seed)
    p = np.sort(np.asarray(probs, np.float64))
    fits = []
    for _ in range(n_resamples):
        y = (rng.uniform(size=p.size) < p).astype(float)
        xs, g = isotonic_fit(p, y)
        fits.append(np.interp(p, xs, g))
    fits = np.array(fits)
    a = (1 - level) / 2
    return np.quantile(fits, a, axis=0), np.quantile(fits, 1 - a, axis=0)
