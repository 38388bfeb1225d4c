"""Plain NumPy references for the regression calibration metrics and the online isotonic
recalibrator (slow loops, obviously correct)."""

from __future__ import annotations

import numpy as np

LEVELS = [k / 100 for k in range(1, 100)]


def _w(n, w):
    return np.ones(n) if w is None else np.asarray(w, float)


def quantile_frequencies(u, levels=None, w=None):
    levels = LEVELS if levels is None else list(levels)
    w = _w(len(u), w)
    out = []
    for q in levels:
        out.append(sum(wt for ut, wt in zip(u, w) if ut <= q) / w.sum())
    return np.array(out)


def qce(u, levels=None, w=None, form="sum"):
    levels = LEVELS if levels is None else list(levels)
    f = quantile_frequencies(u, levels, w)
    gaps = [fq - q for fq, q in zip(f, levels)]
    if form == "sum":
        return float(sum(g * g for g in gaps))
    return float(sum(abs(g) for g in gaps) / len(gaps))


def smape(y, yhat, w=None):
    w = _w(len(y), w)
    tot = 0.0
    for a, b, wt in zip(y, yhat, w):
        den = (abs(a) + abs(b)) / 2
        tot += wt * (abs(a - b) / den if den > 0 else 0.0)
    return tot / w.sum()


def pinball_loss(qs, y, levels, w=None):
    w = _w(len(y), w)
    tot = 0.0
    for j, a in enumerate(levels):
        s = 0.0
        for t in range(len(y)):
            u = y[t] - qs[t][j]
            s += w[t] * (a * u if u >= 0 else (a - 1) * u)
        tot += s / w.sum()
    return tot / len(levels)


def coverage(u, level, w=None):
    w = _w(len(u), w)
    lo, hi = (1 - level) / 2, (1 + level) / 2
    return sum(wt for ut, wt in zip(u, w) if lo <= ut <= hi) / w.sum()


def pit_histogram(u, n_bins, w=None):
    w = _w(len(u), w)
    h = np.zeros(n_bins)
    for ut, wt in zip(u, w):
        h[min(int(ut * n_bins), n_bins - 1)] += wt
    return h / w.sum()


def piecewise_cdf(probs, edges, z):
    """CDF of the piecewise-constant density with bin masses ``probs`` on ``edges`` at z."""
    probs, edges = np.asarray(probs, float), np.asarray(edges, float)
    c = 0.0
    for k in range(len(probs)):
        a, b = edges[k], edges[k + 1]
        if z >= b:
            c += probs[k]
        elif z > a:
            c += probs[k] * (z - a) / (b - a)
    return c


def crps_by_integration(cdf, y, low, high, breaks=()):
    """∫ (F(z) - 1[y <= z])² dz on [low, high] by adaptive quadrature (scipy.integrate.quad),
    split at y and at ``breaks`` (the kinks of F), so each piece has a smooth integrand."""
    from scipy.integrate import quad

    pts = sorted({float(low), float(high), float(np.clip(y, low, high)), *[float(b) for b in breaks if low < b < high]})
    tot = 0.0
    for a, b in zip(pts[:-1], pts[1:]):
        tot += quad(lambda z: (cdf(z) - (z >= y)) ** 2, a, b, epsabs=1e-13, epsrel=1e-12, limit=200)[0]
    return tot


def isotonic_recalibrated_cdf(past_pits, new_cdf_values):
    """Kuleshov et al. (2018) with scikit-learn: fit R on (u_s, ECDF(u_s)) for past PITs u_s,
    apply R to the new forecast's CDF values (clip beyond the data)."""
    from sklearn.isotonic import IsotonicRegression

    u = np.asarray(past_pits, float)
    if len(u) == 0:
        return np.asarray(new_cdf_values, float)
    ecdf = np.array([np.mean(u <= v) for v in u])
    r = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(u, ecdf)
    return r.predict(np.asarray(new_cdf_values, float))


def pav(y, w=None):
    """Pool-adjacent-violators: the non-decreasing fit minimising Σ w (y - f)²."""
    y = [float(v) for v in y]
    w = [1.0] * len(y) if w is None else [float(v) for v in w]
    blocks = []  # [value, weight, count]
    for v, wt in zip(y, w):
        blocks.append([v, wt, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            b = blocks.pop()
            a = blocks.pop()
            W = a[1] + b[1]
            blocks.append([(a[0] * a[1] + b[0] * b[1]) / W, W, a[2] + b[2]])
    out = []
    for v, _, c in blocks:
        out += [v] * c
    return np.array(out)


def tied_pits(seed, T):
    """PIT values skewed towards 1 (Beta(2, 0.8)) with ties at 0, 1/2 and 1: the test input of
    the offline and online isotonic PIT maps."""
    rng = np.random.default_rng(seed)
    u = rng.beta(2.0, 0.8, size=T)
    u[rng.integers(0, T, 6)] = 0.0  # ties (outcomes at the range's low end)
    u[rng.integers(0, T, 3)] = 1.0
    u[rng.integers(0, T, 3)] = 0.5
    return u
