"""Slow, obviously-correct NumPy references for jcalib.stats and jcalib.metrics.streaming:
explicit double loops, explicit order statistics, textbook formulas."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps


def ks_distance_uniform(u) -> float:
    """sup |F_n(x) - x| of the sample u against Uniform[0, 1]."""
    u = np.sort(np.asarray(u, dtype=float))
    n = u.size
    i = np.arange(1, n + 1)
    return float(max(np.max(i / n - u), np.max(u - (i - 1) / n)))


def ks_critical_1pct(n_reps: int) -> float:
    """1% critical value of the one-sample KS distance (asymptotic, 1.628 / sqrt(N))."""
    return 1.628 / math.sqrt(n_reps)


def binary_vectors(p, y):
    """Two-class forecast vectors (1 - p, p) and residuals e_y - (1 - p, p)."""
    p = np.asarray(p, dtype=float)
    y = np.asarray(y, dtype=float)
    P = np.stack([1 - p, p], axis=1)
    E = np.stack([1 - y, y], axis=1)
    return P, E - P


def gaussian(u, v, bw):
    return math.exp(-float(np.sum((np.asarray(u) - np.asarray(v)) ** 2)) / (2 * bw**2))


def skce(P, R, bw, estimator, w=None, block_size=2):
    """SKCE estimators (Widmann et al. 2019) by explicit loops over pairs."""
    n = len(P)
    w = np.ones(n) if w is None else np.asarray(w, dtype=float)
    h = lambda i, j: gaussian(P[i], P[j], bw) * float(R[i] @ R[j])
    if estimator == "biased":
        return sum(w[i] * w[j] * h(i, j) for i in range(n) for j in range(n)) / w.sum() ** 2
    if estimator == "unbiased":
        num = sum(w[i] * w[j] * h(i, j) for i in range(n) for j in range(n) if i != j)
        return num / (w.sum() ** 2 - np.sum(w**2))
    b = block_size
    vals = []
    for s in range(0, (n // b) * b, b):
        vals.append(sum(h(i, j) for i in range(s, s + b) for j in range(s, s + b) if i != j) / (b * (b - 1)))
    return float(np.mean(vals))



def skce_bootstrap_pvalue(P, R, bw, draws):
    """The unbiased SKCE test's p-value (Widmann et al. 2019, §4): the bootstrap of the centred
    kernel h~_ij = h_ij - mean_j h_ij - mean_i h_ij + mean h (Arcones, Giné 1992), each resample
    the U-statistic of h~ over the pairs of positions a != b of its drawn rows ``draws[b]``."""
    n = len(P)
    H = np.array([[gaussian(P[i], P[j], bw) * float(R[i] @ R[j]) for j in range(n)] for i in range(n)])
    Ht = H - H.mean(axis=1, keepdims=True) - H.mean(axis=0, keepdims=True) + H.mean()
    stat = (H.sum() - np.trace(H)) / (n * (n - 1))
    null = [sum(Ht[I[a], I[b]] for a in range(n) for b in range(n) if a != b) / (n * (n - 1)) for I in draws]
    return stat, (1 + sum(v >= stat for v in null)) / (len(draws) + 1)

def spiegelhalter(p, y, w=None):
    p, y = np.asarray(p, float), np.asarray(y, float)
    w = np.ones_like(p) if w is None else np.asarray(w, float)
    num = sum(w[i] * (y[i] - p[i]) * (1 - 2 * p[i]) for i in range(len(p)))
    var = sum(w[i] ** 2 * (1 - 2 * p[i]) ** 2 * p[i] * (1 - p[i]) for i in range(len(p)))
    z = num / math.sqrt(var)
    return z, 2 * sps.norm.sf(abs(z))


def cumulative_walk(p, y, w=None):
    """S_0 = 0, S_k = sum_{j<=k} w (y - p) / W in the order of increasing p (stable sort)."""
    p, y = np.asarray(p, float), np.asarray(y, float)
    w = np.ones_like(p) if w is None else np.asarray(w, float)
    order = np.argsort(p, kind="stable")
    s = [0.0]
    for i in order:
        s.append(s[-1] + w[i] * (y[i] - p[i]) / w.sum())
    sigma = math.sqrt(sum(w[i] ** 2 * p[i] * (1 - p[i]) for i in range(len(p)))) / w.sum()
    return np.array(s), sigma


def quantile_linear(values, q):
    """NumPy's default (linear) quantile, written out."""
    v = np.sort(np.asarray(values, float))
    pos = q * (len(v) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] * (1 - (pos - lo)) + v[hi] * (pos - lo)


def bca_interval(theta, resamples, jackknife, level):
    """Efron's BCa interval from the resampled and leave-one-out values (scalar statistic)."""
    res = np.asarray(resamples, float)
    prop = (np.mean(res < theta) + np.mean(res <= theta)) / 2
    z0 = sps.norm.ppf(prop)
    d = np.mean(jackknife) - np.asarray(jackknife, float)
    a = np.sum(d**3) / (6 * np.sum(d**2) ** 1.5)
    alpha = (1 - level) / 2
    out = []
    for z in (sps.norm.ppf(alpha), sps.norm.ppf(1 - alpha)):
        out.append(quantile_linear(res, sps.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z)))))
    return tuple(out)


def wilson(x, n, level):
    z = sps.norm.ppf(1 - (1 - level) / 2)
    ph = x / n
    centre = (ph + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(ph * (1 - ph) / n + z * z / (4 * n * n))
    return max(centre - half, 0.0), min(centre + half, 1.0)


def clopper_pearson(x, n, level):
    a = 1 - level
    lo = 0.0 if x == 0 else sps.beta.ppf(a / 2, x, n - x + 1)
    hi = 1.0 if x == n else sps.beta.ppf(1 - a / 2, x + 1, n - x)
    return lo, hi


def grid_split(p, y, w, G):
    """Each forecast's weight split linearly onto the grid j/(G-1), per outcome: the 2G points
    (probs, labels, weights) whose smooth ECE the streaming accumulator reports."""
    mass = np.zeros((2, G))
    for pi, yi, wi in zip(p, y, w):
        s = pi * (G - 1)
        b = min(max(int(math.floor(s)), 0), G - 2)
        f = s - b
        mass[int(yi), b] += (1 - f) * wi
        mass[int(yi), b + 1] += f * wi
    t = np.arange(G) / (G - 1)
    return np.concatenate([t, t]), np.concatenate([np.zeros(G), np.ones(G)]), mass.reshape(-1)
