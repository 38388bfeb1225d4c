"""Slow, obviously-correct NumPy reference of the KS and Kuiper calibration tests with ties:
the cumulative walk observed once per distinct forecast value, by an explicit loop over the
values, and the p-values from the Brownian-motion series written term by term."""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm

SIEGMUND = 0.5826


def group_walk(p, y, w=None):
    """(S at 0 and after each distinct forecast value, in increasing order; sigma; G).

    G counts the distinct values held by at least one row of positive weight.
    """
    p, y = np.asarray(p, float), np.asarray(y, float)
    w = np.ones_like(p) if w is None else np.asarray(w, float)
    W = w.sum()
    s, G = [0.0], 0
    for v in sorted(set(p.tolist())):
        rows = [i for i in range(len(p)) if p[i] == v]
        s.append(s[-1] + sum(w[i] * (y[i] - p[i]) for i in rows) / W)
        G += any(w[i] > 0 for i in rows)
    sigma = math.sqrt(sum(w[i] ** 2 * p[i] * (1 - p[i]) for i in range(len(p)))) / W
    return np.array(s), sigma, G


def ks_pvalue(stat, sigma, G):
    """max(P(sup|B| >= z + 0.5826/sqrt G), 2 Q(z)), z = stat / sigma."""
    z = stat / sigma
    x = z + SIEGMUND / math.sqrt(G)
    series = 4 * sum((-1) ** j * norm.sf((2 * j + 1) * x) for j in range(200))
    return max(min(series, 1.0) if x >= 0.1 else 1.0, 2 * norm.sf(z))


def kuiper_pvalue(stat, sigma, G):
    """max(P(sup B - inf B >= z + 2 * 0.5826/sqrt G), 2 Q(z)), z = stat / sigma."""
    z = stat / sigma
    r = z + 2 * SIEGMUND / math.sqrt(G)
    series = 8 * sum((-1) ** (k - 1) * k * norm.sf(k * r) for k in range(1, 201))
    return max(min(series, 1.0) if r >= 0.1 else 1.0, 2 * norm.sf(z))
