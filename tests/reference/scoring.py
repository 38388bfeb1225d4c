"""Plain NumPy/SciPy references for the scoring rules of real and ordinal outcomes: the
definitions evaluated directly (double sums over ensemble members, loops over categories and
intervals, and the CRPS integral $\\int (F(z) - 1[y \\le z])^2 dz$ by adaptive quadrature or, for a
step CDF, as an exact sum over the steps). Slow and obviously correct."""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, stats


def crps_ensemble(x, y, w=None, fair=False):
    """Energy form with the m x m matrix of differences, one forecast (``x`` of shape (m,))."""
    x = np.asarray(x, float)
    m = len(x)
    w = np.full(m, 1.0 / m) if w is None else np.asarray(w, float) / np.sum(w)
    e1 = sum(w[i] * abs(x[i] - y) for i in range(m))
    e2 = sum(w[i] * w[j] * abs(x[i] - x[j]) for i in range(m) for j in range(m))
    if fair:
        e2 /= 1 - np.sum(w * w)
    return e1 - 0.5 * e2


def crps_step(atoms, masses, y, lo=-np.inf, hi=np.inf):
    """$\\int_{lo}^{hi} (F(z) - 1[y \\le z])^2 dz$ for a discrete distribution, exactly: the
    integrand is constant between consecutive points of ``atoms``, ``y`` and the window's ends
    (and 0 outside the range of the atoms and ``y``)."""
    order = np.argsort(atoms)
    atoms, masses = np.asarray(atoms, float)[order], np.asarray(masses, float)[order]
    masses = masses / masses.sum()
    pts = np.append(atoms, y)
    pts = np.sort(np.append(pts, [v for v in (lo, hi) if np.isfinite(v)]))
    pts = pts[(pts >= lo) & (pts <= hi)]
    cdf = np.cumsum(masses)  # F at each atom; F(a) is the entry of the last atom <= a
    total = 0.0
    for a, b in zip(pts[:-1], pts[1:]):
        i = np.searchsorted(atoms, a, side="right")
        F = cdf[i - 1] if i else 0.0
        total += (F - (1.0 if y <= a else 0.0)) ** 2 * (b - a)
    return total


def crps_quad(cdf, y, lo=-np.inf, hi=np.inf):
    """$\\int_{lo}^{hi} F^2$ below ``y`` plus $(1 - F)^2$ above it, plus the parts of the integral
    outside the support $[lo, hi]$ (where $F$ is 0 or 1), by ``scipy.integrate.quad``."""
    left_end, right_start = min(max(y, lo), hi), max(min(y, hi), lo)
    total = 0.0
    if y < lo:
        total += lo - y  # F = 0 on [y, lo): (0 - 1)^2
    if y > hi:
        total += y - hi  # F = 1 on [hi, y): (1 - 0)^2
    if left_end > lo:
        total += integrate.quad(lambda z: cdf(z) ** 2, lo, left_end, limit=400, epsabs=1e-13, epsrel=1e-11)[0]
    if hi > right_start:
        total += integrate.quad(lambda z: (1 - cdf(z)) ** 2, right_start, hi, limit=400, epsabs=1e-13, epsrel=1e-11)[0]
    return total


def crps_beta(a, b, y, lower=0.0, upper=1.0):
    return crps_quad(stats.beta(a, b, loc=lower, scale=upper - lower).cdf, y, lower, upper)


def crps_gamma(shape, rate, y):
    return crps_quad(stats.gamma(shape, scale=1 / rate).cdf, y, 0.0, np.inf)


def crps_t(df, loc, scale, y):
    return crps_quad(stats.t(df, loc, scale).cdf, y)


def crps_poisson(mean, y):
    """The exact sum over the integer steps of the Poisson CDF, up to 40 standard deviations past
    the mean (and past ``y``), where the remaining mass is below 1e-40."""
    top = int(mean + 40 * math.sqrt(mean) + 40) + max(int(math.ceil(y)), 0)
    k = np.arange(top + 1)
    return crps_step(k, stats.poisson(mean).pmf(k), y)


def rps(p, label):
    """Epstein's sum over the categories, with a loop for the cumulative forecast."""
    total, F = 0.0, 0.0
    for k, pk in enumerate(p):
        F += pk
        total += (F - (1.0 if label <= k else 0.0)) ** 2
    return total


def interval_score(lo, hi, y, alpha):
    s = hi - lo
    if y < lo:
        s += 2 / alpha * (lo - y)
    if y > hi:
        s += 2 / alpha * (y - hi)
    return s


def weighted_interval_score(median, lower, upper, y, alphas, weights=None, median_weight=0.5):
    K = len(alphas)
    weights = [a / 2 for a in alphas] if weights is None else weights
    total = median_weight * abs(y - median)
    for k in range(K):
        total += weights[k] * interval_score(lower[k], upper[k], y, alphas[k])
    return total / (K + 0.5)
