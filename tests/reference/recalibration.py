"""Slow, plain-NumPy references (one round at a time, float64) for the recalibrators of Okoroafor et al. (2024).

- :func:`oracle` / :func:`approachability_run`: the halfspace oracle written as a recursive-free
  bisection with early returns, and Algorithm 1 with OGD over dense vectors;
- :func:`lee_weights_dp` / :func:`lee_run`: Lee et al.'s multiplicative weights with the paper's
  O(m) dynamic programme (Okoroafor et al. 2024, eqs 43–45) for the weighted objective, and
  :func:`lee_weights_brute` enumerating all 2^(m+1) sign vectors for small m;
- :func:`ke_cell_run`: one Kuleshov–Ermon cell's swap-regret EWA forecaster, its stationary
  distribution solved exactly by a linear system.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def brier(p, y):
    return (p - y) ** 2


def spherical(p, y):
    py = p if y == 1 else 1 - p
    return 1 - py / math.sqrt(p * p + (1 - p) ** 2)


RULES = {"brier": (brier, 2.0), "spherical": (spherical, None)}


def oracle(theta, lam, q, m, s, L):
    """Returns (i, w, n_evals): play i/m w.p. w, (i+1)/m w.p. 1-w."""
    evals = {}

    def fg(j):
        if j not in evals:
            p = j / m
            f = -theta[j] * p + lam * (s(p, 0) - s(q, 0)) / L
            g = theta[j] * (1 - p) + lam * (s(p, 1) - s(q, 1)) / L
            evals[j] = (f, g)
        return evals[j]

    def point(j):
        return (j, 1.0, len(evals)) if j < m else (m - 1, 0.0, len(evals))

    f0, g0 = fg(0)
    fm, gm = fg(m)
    if f0 <= 0 and g0 <= 0:
        return point(0)
    if fm <= 0 and gm <= 0:
        return point(m)
    if g0 - f0 <= 0:
        return point(0)
    if gm - fm >= 0:
        return point(m)
    lo, hi = 0, m
    while hi - lo > 1:
        mid = (lo + hi) // 2
        f, g = fg(mid)
        if f <= 0 and g <= 0:
            return point(mid)
        if g - f > 0:
            lo = mid
        else:
            hi = mid
    hlo = fg(lo)[1] - fg(lo)[0]
    hhi = fg(hi)[1] - fg(hi)[0]
    w = -hhi / (hlo - hhi) if hlo - hhi > 0 else 1.0
    return lo, min(max(w, 0.0), 1.0), len(evals)


def worst_payoff(theta, lam, q, m, s, L, i, w):
    """max over y of the payoff <(theta, lam), u(w, y)> of the two-point mixture."""
    out = []
    for y in (0, 1):
        v = 0.0
        for j, wj in ((i, w), (i + 1, 1 - w)):
            p = j / m
            v += wj * (theta[j] * (y - p) + lam * (s(p, y) - s(q, y)) / L)
        out.append(v)
    return max(out)


def approachability_run(q, y, m, eta, Lambda, eps, s, L, norm="l1", follow=True):
    """Algorithm 1 over given (q_t, y_t); returns the mixtures' lower indices and weights."""
    theta = np.zeros(m + 1)
    lam = 0.0
    U = np.zeros(m + 1)
    idx, probs = [], []
    for t, (qt, yt) in enumerate(zip(q, y)):
        qt, yt = float(qt), int(yt)
        i, w, _ = oracle(theta, lam, qt, m, s, L)
        err = np.abs(U).sum() if norm == "l1" else math.sqrt((U**2).sum())
        if follow and t > 0 and err / t < eps:
            j = int(np.clip(np.round(qt * m), 0, m))
            i, w = (j, 1.0) if j < m else (m - 1, 0.0)
        idx.append(i)
        probs.append(w)
        u = np.zeros(m + 1)
        u[i] += w * (yt - i / m)
        u[i + 1] += (1 - w) * (yt - (i + 1) / m)
        ureg = (w * s(i / m, yt) + (1 - w) * s((i + 1) / m, yt) - s(qt, yt)) / L
        U += u
        theta = theta + eta * u
        if norm == "l1":
            theta = np.clip(theta, -1, 1)
        else:
            theta = theta / max(1.0, np.linalg.norm(theta))
        lam = min(max(lam + eta * ureg, 0.0), Lambda)
    return np.array(idx), np.array(probs)


# ---- Lee, Noarov, Pai, Roth (2022) via Okoroafor et al. (2024), §6 ----------------------------


def lee_weights_dp(U, Ureg, eta):
    """(theta, lam) of the weighted objective by the products of eqs 43–45, in float64.

    Denominator (eq 44): sum_sigma e^{eta<sigma,U>} = prod_i (e^{eta U_i} + e^{-eta U_i}),
    built up one coordinate at a time (the dynamic programme); the numerator for coordinate i
    (eq 45) replaces factor i by (e^{eta U_i} - e^{-eta U_i}); the regret row adds e^{eta Ureg}
    to the normaliser. Returned as theta_i = numerator_i / prod and lam = e^{eta Ureg} / prod,
    i.e. the weights divided by the sign-vector mass (the oracle's halfspace is scale-free).
    """
    prefix = [1.0]
    for u in U:
        prefix.append(prefix[-1] * (math.exp(eta * u) + math.exp(-eta * u)))
    suffix = [1.0]
    for u in U[::-1]:
        suffix.append(suffix[-1] * (math.exp(eta * u) + math.exp(-eta * u)))
    suffix = suffix[::-1]
    n = len(U)
    denom = prefix[n]
    theta = np.array(
        [prefix[i] * (math.exp(eta * U[i]) - math.exp(-eta * U[i])) * suffix[i + 1] / denom for i in range(n)]
    )
    return theta, math.exp(eta * Ureg) / denom


def lee_weights_brute(U, Ureg, eta):
    """The same by enumerating all 2^(m+1) sign vectors (small m only)."""
    n = len(U)
    num = np.zeros(n)
    den = 0.0
    for sigma in itertools.product((-1.0, 1.0), repeat=n):
        e = math.exp(eta * float(np.dot(sigma, U)))
        num += e * np.array(sigma)
        den += e
    return num / den, math.exp(eta * Ureg) / den


def lee_run(q, y, m, eta, s, L):
    """Lee et al.'s MW over given (q_t, y_t), the regret row unscaled (C = max(1, L)).

    The oracle's regret weight is lam * L (it divides the regret coordinate by L).
    """
    U = np.zeros(m + 1)
    Ureg = 0.0
    idx, probs = [], []
    for qt, yt in zip(q, y):
        qt, yt = float(qt), int(yt)
        theta, lam = lee_weights_dp(U, Ureg, eta)
        i, w, _ = oracle(theta, lam * L, qt, m, s, L)
        idx.append(i)
        probs.append(w)
        U[i] += w * (yt - i / m)
        U[i + 1] += (1 - w) * (yt - (i + 1) / m)
        Ureg += w * s(i / m, yt) + (1 - w) * s((i + 1) / m, yt) - s(qt, yt)
    return np.array(idx), np.array(probs)


# ---- Kuleshov & Ermon (2017): one cell's swap-regret forecaster -------------------------------


def stationary(Q):
    """The stationary distribution of the row-stochastic Q, by a linear solve."""
    n = Q.shape[0]
    A = Q.T - np.eye(n)
    A[-1, :] = 1.0
    b = np.zeros(n)
    b[-1] = 1.0
    return np.linalg.solve(A, b)


def swap_distribution(R, eta):
    """The played distribution for cumulative swap regrets R[i, j] = sum_t p_t(i)(l_t(j) - l_t(i))."""
    n = R.shape[0]
    logits = -eta * R
    np.fill_diagonal(logits, -np.inf)
    d = np.exp(logits - logits[np.isfinite(logits)].max())
    d /= d.sum()
    rows = d.sum(axis=1)
    c = 1.0 / rows.max()
    Q = c * d
    Q[np.diag_indices(n)] = 1.0 - c * rows
    return stationary(Q)


def ke_cell_run(y, N, eta):
    """One cell: distributions over {0, 1/N, ..., 1} played on outcomes y (Brier losses)."""
    n = N + 1
    R = np.zeros((n, n))
    grid = np.arange(n) / N
    out = []
    for yt in y:
        p = swap_distribution(R, eta)
        out.append(p)
        loss = (grid - int(yt)) ** 2
        R += p[:, None] * (loss[None, :] - loss[:, None])
    return np.array(out)
