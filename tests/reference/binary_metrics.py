"""Plain NumPy/SciPy references for the binary calibration metrics (slow, obviously correct).

Distance to calibration by brute force over all set partitions of the rounds; the lower
distance and the smooth calibration error by dense ``scipy.optimize.linprog`` on their textbook
LPs. For small inputs only.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from scipy.optimize import linprog

from .bins import exact_bin


def _w(p, w):
    return np.ones(len(p)) if w is None else np.asarray(w, float)


def ece(p, y, w=None) -> float:
    """Arunachaleswaran et al. (2024), §2: sum over distinct forecasts v of |sum_t w_t 1[p_t = v](p_t - y_t)|."""
    w = _w(p, w)
    bias: dict = {}
    for pt, yt, wt in zip(np.asarray(p, float).tolist(), np.asarray(y).tolist(), w.tolist()):
        bias[pt] = bias.get(pt, 0.0) + wt * (pt - yt)
    return float(sum(abs(b) for b in bias.values()))


def binned_ece(p, y, n_bins=15, strategy="uniform", w=None, power=1) -> float:
    """(sum_b W_b/W |mean p_b - mean y_b|^power)^(1/power) with jcalib's bin rules."""
    p, y, w = np.asarray(p, float), np.asarray(y, float), _w(p, w)
    W = w.sum()
    if strategy == "uniform":
        b = exact_bin(p, n_bins)
    else:  # value v -> floor(n_bins * (weight strictly below v) / W)
        b = np.array([min(int(np.floor(n_bins * w[p < v].sum() / W)), n_bins - 1) for v in p])
    tot = 0.0
    for k in range(n_bins):
        s = b == k
        if w[s].sum() > 0:
            gap = abs(np.sum(w[s] * (p[s] - y[s]))) / w[s].sum()
            tot += w[s].sum() / W * gap**power
    return tot ** (1 / power)


def lp_calibration_error(p, y, epsilon, power=1, w=None) -> float:
    """Definition 1 of Okoroafor, Kleinberg, Sun (2024): buckets of width eps compared at midpoints."""
    p, y, w = np.asarray(p, float), np.asarray(y, float), _w(p, w)
    K = round(1 / epsilon)
    b = exact_bin(p, K)  # k/K <= p < (k+1)/K in exact arithmetic, the last bucket closed
    tot = 0.0
    for k in range(K):
        s = b == k
        n = w[s].sum()
        if n > 0:
            rho = np.sum(w[s] * y[s]) / n
            tot += n / w.sum() * abs(rho - (k + 0.5) / K) ** power
    return tot ** (1 / power)


def _set_partitions(items):
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _set_partitions(rest):
        for i in range(len(part)):
            yield part[:i] + [[first] + part[i]] + part[i + 1 :]
        yield [[first]] + part


def distance_brute_force(p, y, w=None) -> float:
    """min over all set partitions S of the rounds of sum_S sum_{t in S} |p_t - mean(y_S)|.

    Integer weights are expanded into repeated rounds. Bell(8) = 4140 partitions at T = 8.
    """
    p, y = np.asarray(p, float), np.asarray(y, float)
    if w is not None:
        reps = np.asarray(w).astype(int)
        p, y = np.repeat(p, reps), np.repeat(y, reps)
    best = np.inf
    for part in _set_partitions(list(range(len(p)))):
        cost = 0.0
        for S in part:
            S = np.array(S)
            cost += np.abs(p[S] - y[S].mean()).sum()
        best = min(best, cost)
    return float(best)


def farey_grid(n: int, extra: int = 0) -> np.ndarray:
    """Every k/q with 1 <= q <= n (all possible group frequencies), plus k/extra."""
    fr = {Fraction(k, q) for q in range(1, n + 1) for k in range(q + 1)}
    if extra:
        fr |= {Fraction(k, extra) for k in range(extra + 1)}
    return np.array(sorted(float(f) for f in fr))


def lower_distance_lp(p, y, w=None, U=None) -> float:
    """Dense LP of Arunachaleswaran et al. (2024): min sum pi_iu |p_i - u| s.t. sum_u pi_iu = w_i,
    sum_i pi_iu (y_i - u) = 0 for every u in U, pi >= 0."""
    p, y, w = np.asarray(p, float), np.asarray(y, float), _w(p, w)
    if U is None:
        U = farey_grid(int(round(w.sum())))
    n, k = len(p), len(U)
    cost = np.abs(p[:, None] - U[None, :]).ravel()
    A_eq = np.zeros((n + k, n * k))
    for i in range(n):
        A_eq[i, i * k : (i + 1) * k] = 1
    for j in range(k):
        A_eq[n + j, j::k] = y - U[j]
    b_eq = np.concatenate([w, np.zeros(k)])
    res = linprog(cost, A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    assert res.status == 0, res.message
    return float(res.fun)


def smooth_calibration_error_lp(p, y, w=None) -> float:
    """Dense LP: max (1/W) sum_i w_i eta_i (y_i - p_i), |eta_i| <= 1, |eta_i - eta_j| <= |p_i - p_j|."""
    p, y, w = np.asarray(p, float), np.asarray(y, float), _w(p, w)
    n = len(p)
    rows, b = [], []
    for i in range(n):
        for j in range(n):
            if i != j:
                r = np.zeros(n)
                r[i], r[j] = 1, -1
                rows.append(r)
                b.append(abs(p[i] - p[j]))
    res = linprog(
        -(w * (y - p)),
        A_ub=np.array(rows) if rows else None,
        b_ub=np.array(b) if b else None,
        bounds=[(-1, 1)] * n,
        method="highs",
    )
    assert res.status == 0, res.message
    return float(-res.fun / w.sum())


def aosa_counts(y, m: int, tie: str = "low"):
    """Almost-One-Step-Ahead (Arunachaleswaran et al. 2024, Algorithm 1) summarised per grid point.

    Exact integer look-ahead state: alpha(i/m) * m = n_i * i - m * s_i. Bisection for the
    adjacent pair, as ``reference.forecasters.aosa``. Returns (counts, ones): rounds forecasting
    i/m and how many of them had y = 1. Plain Python: about 3 s per 10^6 rounds.
    """
    n = [0] * (m + 1)
    s = [0] * (m + 1)
    counts = np.zeros(m + 1, np.int64)
    ones = np.zeros(m + 1, np.int64)
    for yt in np.asarray(y).tolist():
        lo, hi = 0, m
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if n[mid] * mid - m * s[mid] <= 0:
                lo = mid
            else:
                hi = mid
        i = lo + (tie == "high")
        counts[i] += 1
        ones[i] += yt
        j = lo + 1 if yt == 1 else lo  # look-ahead forecast: the nearer of the pair to y
        n[j] += 1
        s[j] += yt
    return counts, ones
