"""Venn–Abers by its definition (Vovk, Petej 2014, §2): for each test score, add it to the
calibration set once with label 0 and once with label 1, fit isotonic regression (exact ties
pooled, pure-Python PAV) and read the fit at the test score; merge p1 / (1 - p0 + p1)."""

from __future__ import annotations

import numpy as np

from .classifier_recalibration import isotonic_fit


def p0_p1(cal_scores, cal_labels, test_scores, cal_weights=None):
    s = np.asarray(cal_scores, np.float64)
    y = np.asarray(cal_labels, np.float64)
    w = np.ones_like(s) if cal_weights is None else np.asarray(cal_weights, np.float64)
    p0, p1 = [], []
    for t in np.asarray(test_scores, np.float64):
        out = []
        for label in (0.0, 1.0):
            xs, g = isotonic_fit(np.append(s, t), np.append(y, label), np.append(w, 1.0))
            out.append(float(g[np.searchsorted(xs, t)]))
        p0.append(out[0])
        p1.append(out[1])
    return np.array(p0), np.array(p1)


def merged(p0, p1, loss="log"):
    if loss == "log":
        return p1 / (1 - p0 + p1)
    return p1 + p0**2 / 2 - p1**2 / 2


def cross_merged(p0, p1, loss="log"):
    """CVAP merge over the leading (fold) axis (Vovk, Petej, Fedorova 2015, §4)."""
    if loss == "log":
        g1 = np.prod(p1, axis=0) ** (1 / p1.shape[0])
        g0 = np.prod(1 - p0, axis=0) ** (1 / p0.shape[0])
        return g1 / (g0 + g1)
    return np.mean(p1 + p0**2 / 2 - p1**2 / 2, axis=0)
