"""Plain NumPy/Python reference for the miscalibration area (Chung et al. 2021) from PIT values,
with weights: a loop over the grid of expected proportions for the observed proportions, and the
integral of |observed - expected| over each segment taken exactly (split at the root where the
linear interpolant crosses zero)."""

from __future__ import annotations

import numpy as np


def observed_proportions(u, n_levels, kind, w=None):
    u = [float(v) for v in u]
    w = [1.0] * len(u) if w is None else [float(v) for v in w]
    grid = np.linspace(0.0, 1.0, n_levels).tolist()
    out = []
    for lv in grid:
        inside = 0.0
        for ut, wt in zip(u, w):
            hit = abs(2 * ut - 1) <= lv if kind == "interval" else ut <= lv
            inside += wt if hit else 0.0
        out.append(inside / sum(w))
    return grid, out


def _segment(h, a, b):
    """Integral over [0, h] of |a + (b - a) x / h|."""
    if a * b >= 0:
        return h * abs(a + b) / 2
    root = h * a / (a - b)  # where the interpolant is zero
    return abs(a) * root / 2 + abs(b) * (h - root) / 2


def miscalibration_area(u, n_levels=100, kind="interval", w=None):
    grid, obs = observed_proportions(u, n_levels, kind, w)
    d = [o - g for o, g in zip(obs, grid)]
    return sum(_segment(grid[k + 1] - grid[k], d[k], d[k + 1]) for k in range(n_levels - 1))


def exact_quantile_area(u, w=None):
    """$\\int_0^1 |G(q) - q|\\,dq$ for the weighted empirical CDF $G$ of the PIT values, exactly:
    on each interval between consecutive distinct values $G$ is a constant $c$ and the integral of
    $|c - q|$ over $[x_0, x_1]$ is elementary."""
    u = np.asarray(u, float)
    w = np.ones_like(u) if w is None else np.asarray(w, float)
    pts = sorted(set([0.0, 1.0] + u.tolist()))
    total = 0.0
    for x0, x1 in zip(pts[:-1], pts[1:]):
        c = w[u <= x0].sum() / w.sum()  # G on [x0, x1)
        f = lambda x, c=c: (x - c) * abs(x - c) / 2  # noqa: E731 - antiderivative of |x - c|
        total += f(x1) - f(x0)
    return total
