"""Plain-Python restatement of scikit-learn's pooling of near-tied scores before PAV
(``sklearn/_isotonic.pyx``, ``_make_unique``, scikit-learn 1.9): drop weight-0 points, sort,
and scan the scores; a score starts a new group when it is at least ``eps`` above the group's
first score, ``eps = np.finfo(dtype).resolution`` of the input dtype (1e-15 for float64, 1e-6
for float32); a group's score is its first score, its weight the sum and its label the
weighted mean. Then PAV and ``np.interp`` (clipped to the end scores)."""

from __future__ import annotations

import numpy as np

from .classifier_recalibration import pav


def make_unique(s, y, w):
    s = np.asarray(s)
    dt = s.dtype
    eps = dt.type(np.finfo(dt).resolution)
    keep = np.asarray(w) > 0
    order = np.argsort(s[keep], kind="stable")
    s, y, w = s[keep][order], np.asarray(y, np.float64)[keep][order], np.asarray(w, np.float64)[keep][order]
    xs, ws, wys = [], [], []
    for si, yi, wi in zip(s, y, w):
        if xs and not (si - xs[-1] >= eps):  # in the input dtype, as the Cython code compares
            ws[-1] += wi
            wys[-1] += wi * yi
        else:
            xs.append(si)
            ws.append(wi)
            wys.append(wi * yi)
    return np.array(xs, dt), np.array(wys) / np.array(ws), np.array(ws)


def isotonic_fit(s, y, w=None):
    w = np.ones(len(s)) if w is None else w
    xs, ys, ws = make_unique(s, y, w)
    return xs.astype(np.float64), pav(ys, ws)


def isotonic_predict(model, s):
    xs, g = model
    return np.interp(np.asarray(s, np.float64), xs, g)
