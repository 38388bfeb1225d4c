"""Slow NumPy references for expectations over an outcome uniform on an interval (the nature family
of Marx et al. 2024): brute-force midpoint integration over y of the payoff's definition, and the
quantile fractions by counting grid points. No closed forms."""

import numpy as np

from .orca import crps_numeric, pc_cdf_vec  # noqa: F401 (re-exported)


def uniform_average(fn, lo, hi, n=20001):
    """E_{y~U[lo, hi]} fn(y) by the midpoint rule on n points (fn maps an array of y to values)."""
    y = lo + (hi - lo) * (np.arange(n) + 0.5) / n
    return np.mean(fn(y), axis=-1)


def crps_exact_np(probs, edges, y):
    """CRPS(F, y) of a piecewise-constant density for an array y: the integral of the definition
    over the support (trapezoid on a fine grid with y inserted) plus |y - clip(y)|."""
    e = np.asarray(edges, np.float64)
    out = []
    for v in np.atleast_1d(y):
        yc = min(max(v, e[0]), e[-1])
        z = np.unique(np.r_[np.linspace(e[0], e[-1], 4001), e, yc])
        F = pc_cdf_vec(np.asarray(probs), e, z)
        left, right = z <= yc, z >= yc
        val = np.trapezoid(F[left] ** 2, z[left]) + np.trapezoid((1 - F[right]) ** 2, z[right])
        out.append(val + abs(v - yc))
    return np.asarray(out)


def expected_crps_np(probs, edges, lo, hi, n=2001):
    """E_{y~U[lo, hi]} CRPS(F, y), midpoint rule over y of crps_exact_np."""
    return np.array([uniform_average(lambda y: crps_exact_np(probs, edges, y), a, b, n) for a, b in zip(lo, hi)])


def bin_fraction_below_np(probs, edges, alphas, n=100001):
    """(n_bins, m): the share of grid points of each bin where F(y) <= alpha (counting)."""
    e = np.asarray(edges, np.float64)
    out = np.zeros((len(e) - 1, len(alphas)))
    for k in range(len(e) - 1):
        y = e[k] + (e[k + 1] - e[k]) * (np.arange(n) + 0.5) / n
        F = pc_cdf_vec(np.asarray(probs), e, y)
        out[k] = (F[:, None] <= np.asarray(alphas)[None, :]).mean(axis=0)
    return out


__all__ = ["bin_fraction_below_np", "crps_exact_np", "crps_numeric", "expected_crps_np", "uniform_average"]
