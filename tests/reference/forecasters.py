"""Plain-Python reference versions of the online forecasters (exact rationals where it matters).

Each function replays a given outcome sequence round by round with the textbook rule, keeping
the biases as ``fractions.Fraction`` so sign tests are exact. Slow; for parity tests only.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np


def bisect_sign_change(v) -> int:
    """i with v[i] <= 0 <= v[i+1] by plain bisection (the rule jcalib's fixed-step search runs)."""
    lo, hi = 0, len(v) - 1
    assert v[lo] <= 0 <= v[hi], (v[lo], v[hi])
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if v[mid] <= 0:
            lo = mid
        else:
            hi = mid
    assert v[lo] <= 0 <= v[lo + 1]
    return lo


def aosa(y, m: int, tie: str = "low"):
    """Almost-One-Step-Ahead (Arunachaleswaran et al. 2024, Algorithm 1).

    Returns:
        (p, p_tilde, alpha): forecasts, look-ahead forecasts (float arrays), and the final
        look-ahead biases alpha(i/m) as Fractions.
    """
    alpha = [Fraction(0)] * (m + 1)
    p, pt = [], []
    for yt in np.asarray(y).tolist():
        i = bisect_sign_change(alpha)
        p.append((i + (tie == "high")) / m)
        j = i if yt == 0 else i + 1  # argmin over {p_i, p_{i+1}} of |p - y|
        pt.append(j / m)
        alpha[j] += Fraction(j, m) - yt
    return np.array(p), np.array(pt), alpha


def one_step_ahead(y, m: int):
    """One-Step-Ahead's look-ahead forecasts (Arunachaleswaran et al. 2024, §3)."""
    return aosa(y, m)[1]


def biases_by_value(p, y):
    """{value: sum over rounds with forecast == value of (value - y)} (floats)."""
    out: dict = {}
    for pv, yv in zip(np.asarray(p).tolist(), np.asarray(y).tolist()):
        out[pv] = out.get(pv, 0.0) + (pv - yv)
    return out


def ece(p, y) -> float:
    """The ECE of Arunachaleswaran et al. (2024): sum over distinct forecast values of |sum (p - y)| (unnormalised)."""
    return float(sum(abs(b) for b in biases_by_value(p, y).values()))


def foster_mixtures(y, p, k: int):
    """Foster's (1999) mixed strategy each round, given the realised forecasts ``p``.

    Returns:
        support (T, 2) and probs (T, 2): round t's two grid points and their probabilities,
        computed from e_i = sum_{s<t} 1[p_s = i/k](y_s - i/k) as exact Fractions.
    """
    e = [Fraction(0)] * (k + 1)
    support, probs = [], []
    for pt, yt in zip(np.asarray(p).tolist(), np.asarray(y).tolist()):
        i = bisect_sign_change([-x for x in e])  # e_i >= 0 >= e_{i+1}
        lo, hi = e[i], -e[i + 1]
        w = Fraction(1) if lo + hi == 0 else hi / (lo + hi)
        support.append([i / k, (i + 1) / k])
        probs.append([float(w), float(1 - w)])
        j = round(pt * k)
        assert abs(pt * k - j) < 1e-9, "realised forecast off the grid"
        e[j] += yt - Fraction(j, k)
    return np.array(support), np.array(probs)


def tent(a, b, bandwidth):
    return max(0.0, 1.0 - abs(a - b) / bandwidth)


def hat_weights(x, n_grid: int):
    """Linear-interpolation weights of x on the grid {j/N}: a length-(N+1) vector."""
    w = np.zeros(n_grid + 1)
    k = min(int(np.floor(x * n_grid)), n_grid - 1)
    lam = x * n_grid - k
    w[k] += 1 - lam
    w[k + 1] += lam
    return w


def grid_kernel(x, p, n_grid: int, bandwidth: float) -> float:
    """K_N(x, p) = phi(x)^T G phi(p), G_jk = tent(j/N, k/N)."""
    g = np.arange(n_grid + 1) / n_grid
    G = np.array([[tent(a, b, bandwidth) for b in g] for a in g])
    return float(hat_weights(x, n_grid) @ G @ hat_weights(p, n_grid))


def defensive_phi(p, y, n_grid: int, bandwidth: float):
    """Phi(j/N) = sum_s (y_s - p_s) K_N(p_s, j/N) over the given history, summed afresh."""
    g = np.arange(n_grid + 1) / n_grid
    G = np.array([[tent(a, b, bandwidth) for b in g] for a in g])
    V = np.zeros(n_grid + 1)
    for ps, ys in zip(np.asarray(p, float).tolist(), np.asarray(y).tolist()):
        V += (ys - ps) * (G @ hat_weights(ps, n_grid))
    return V


def defensive_rule(V):
    """The defensive forecast for grid values V: 0 if V_0 <= 0, 1 if V_N >= 0, else the zero of
    the linear interpolant on the segment that bisection finds."""
    n_grid = len(V) - 1
    if V[0] <= 0:
        return 0.0
    if V[-1] >= 0:
        return 1.0
    i = bisect_sign_change(-np.asarray(V))
    a, b = V[i], V[i + 1]
    return (i + a / (a - b)) / n_grid


def interpolate(V, p):
    """Phi(p) from its grid values (linear interpolation)."""
    return float(np.asarray(V) @ hat_weights(p, len(V) - 1))


def gupta_ramdas(y, m: int):
    """Gupta–Ramdas interval forecasts on the points {0, 1/m, ..., 1} (Arunachaleswaran et al. 2024, reconstructed).

    Returns:
        (midpoints, judged, deficits_history): the scored midpoints (T,), the judged endpoints
        (T,), and max_j |D_j| after every round (T,) with D_j = sum 1[judged = j/m](y - j/m).
    """
    D = [Fraction(0)] * (m + 1)
    mids, judged, worst = [], [], []
    for yt in np.asarray(y).tolist():
        i = bisect_sign_change([-d for d in D])  # D_i >= 0 >= D_{i+1}
        mids.append((i + 0.5) / m)
        j = i + yt  # the endpoint closest to y
        judged.append(j / m)
        D[j] += yt - Fraction(j, m)
        worst.append(float(max(abs(d) for d in D)))
    return np.array(mids), np.array(judged), np.array(worst)
