"""Plain NumPy references for the SKCE intervals and the CME test (Widmann, Lindsten, Zachariah
2019, 2021), written after CalibrationTests.jl / CalibrationErrors.jl: explicit loops, no
vectorisation, float64. Only for small n in tests.

Forecast vectors ``P`` (n, C) and residuals ``R = e_y - P`` as in ``reference.stats.skce``;
the kernel is the Gaussian ``exp(-|u - v|^2 / (2 bw^2))`` on forecast vectors.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from .stats import gaussian


def _h(P, R, bw, i, j):
    return gaussian(P[i], P[j], bw) * float(R[i] @ R[j])


def block_values(P, R, bw, b):
    """U-statistic of each block of b consecutive rows (CalibrationErrors.jl's unbiasedskce)."""
    out = []
    for s in range(0, (len(P) // b) * b, b):
        out.append(sum(_h(P, R, bw, i, j) for i in range(s, s + b) for j in range(s, s + b) if i != j) / (b * (b - 1)))
    return out


def block_test(P, R, bw, b):
    """CalibrationTests.jl's AsymptoticBlockSKCETest: running mean and sum of squares over the
    blocks (Welford), stderr = sqrt(S / (m (m - 1))), z = estimate / stderr.
    Returns (estimate, stderr, z)."""
    vals = block_values(P, R, bw, b)
    estimate, S = vals[0] / 1, 0.0
    for k, x in enumerate(vals[1:], start=2):
        delta = x - estimate
        estimate += delta / k
        S += delta * (x - estimate)
    m = len(vals)
    stderr = math.sqrt(S / (m * (m - 1)))
    return estimate, stderr, estimate / stderr


def confint_right(estimate, stderr, level):
    """CalibrationTests.jl's confint(test; level, tail=:right)."""
    lower = estimate - sps.norm.ppf(level) * stderr
    return max(0.0, lower), math.inf


def confint_both(estimate, stderr, level):
    q = sps.norm.ppf(1 - (1 - level) / 2)
    return estimate - q * stderr, estimate + q * stderr


def unbiased_interval_parts(P, R, bw):
    """U-statistic and its Hoeffding standard error 2 sd(a) / sqrt(n), with a_i the mean of
    h(Z_i, Z_j) over j != i (the estimate of h_1(Z_i)). Returns (estimate, stderr)."""
    n = len(P)
    a = np.array([sum(_h(P, R, bw, i, j) for j in range(n) if j != i) / (n - 1) for i in range(n)])
    u = sum(_h(P, R, bw, i, j) for i in range(n) for j in range(i + 1, n)) / (n * (n - 1) / 2)
    var_a = sum((ai - a.mean()) ** 2 for ai in a) / (n - 1)
    return u, 2 * math.sqrt(var_a / n)


def ucme_deviation(p, y, tp, ty, bw):
    """CalibrationErrors.jl's unsafe_ucme_eval with TensorProduct(Gaussian, WhiteKernel):
    k(p, tp) * ((y == ty) - p[ty])."""
    return gaussian(p, tp, bw) * (float(y == ty) - p[ty])


def cme(P, y, TP, ty, bw, w=None):
    """CalibrationTests.jl's AsymptoticCMETest and CalibrationErrors.jl's UCME.

    Returns (ucme estimate, statistic n x' C^{-1} x, p-value ccdf(Chisq(J), statistic))."""
    n, J = len(P), len(TP)
    dev = np.array([[ucme_deviation(P[i], y[i], TP[j], ty[j], bw) for j in range(J)] for i in range(n)])
    w = np.ones(n) if w is None else np.asarray(w, float)
    mean = np.array([sum(w[i] * dev[i, j] for i in range(n)) / w.sum() for j in range(J)])
    estimate = sum(m**2 for m in mean) / J
    if not np.all(w == 1):
        return estimate, None, None
    C = np.array([[sum((dev[i, a] - mean[a]) * (dev[i, b] - mean[b]) for i in range(n)) / (n - 1) for b in range(J)] for a in range(J)])
    statistic = n * float(mean @ np.linalg.solve(C, mean))
    return estimate, statistic, float(sps.chi2.sf(statistic, J))


def population_skce_power(bw, exponent=1.5, nodes=400):
    """SKCE of the forecasts q = p^exponent of Y ~ Bernoulli(p), p ~ U(0, 1), with the Gaussian
    kernel on (1 - q, q): E[y - q | p] = p - q and pairs are independent, so
    SKCE = 2 int int k(q(p), q(p')) (p - q(p)) (p' - q(p')) dp dp' (Gauss-Legendre)."""
    x, wts = np.polynomial.legendre.leggauss(nodes)
    x, wts = (x + 1) / 2, wts / 2
    q = x**exponent
    d = x - q
    K = np.exp(-2 * (q[:, None] - q[None, :]) ** 2 / (2 * bw**2))  # |(1-q, q) - (1-q', q')|^2 = 2 (q - q')^2
    return float(2 * np.einsum("i,j,ij,i,j->", wts, wts, K, d, d))
