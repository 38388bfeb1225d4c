"""Slow, obviously-correct NumPy references for multicalibration: loops over groups and bins."""

from __future__ import annotations

import numpy as np


def binned_group_errors(p, y, g, n_bins, w=None):
    """Each group's binned ECE normalised by its weight, one Python loop per group and bin."""
    p, y, g = np.asarray(p, np.float64), np.asarray(y, np.float64), np.asarray(g, np.float64)
    w = np.ones_like(p) if w is None else np.asarray(w, np.float64)
    b = np.minimum(np.floor(p * n_bins).astype(int), n_bins - 1)
    errs, sizes = [], []
    for j in range(g.shape[1]):
        wg = w * g[:, j]
        size = wg.sum()
        tot = 0.0
        for k in range(n_bins):
            m = b == k
            tot += abs(np.sum(wg[m] * (p[m] - y[m])))
        errs.append(tot / size if size > 0 else 0.0)
        sizes.append(size)
    return np.array(errs), np.array(sizes)


def hkrr_patch(p, y, g, n_bins, alpha, max_rounds):
    """HKRR's loop as the module states it (largest mass-weighted violated cell first), in NumPy."""
    p = np.asarray(p, np.float64).copy()
    y, g = np.asarray(y, np.float64), np.asarray(g, np.float64)
    patches = []
    for _ in range(max_rounds):
        b = np.minimum(np.floor(p * n_bins).astype(int), n_bins - 1)
        best = None
        for j in range(g.shape[1]):
            size = g[:, j].sum()
            for k in range(n_bins):
                m = (b == k) * g[:, j]
                wb = m.sum()
                if wb <= 0 or wb < alpha * size / n_bins:
                    continue
                d = np.sum(m * (y - p)) / wb
                if abs(d) > alpha and (best is None or wb * abs(d) > best[0]):
                    best = (wb * abs(d), j, k, d)
        if best is None:
            break
        _, j, k, d = best
        p = np.clip(p + (b == k) * g[:, j] * d, 0, 1)
        patches.append((j, k, d))
    return p, patches
