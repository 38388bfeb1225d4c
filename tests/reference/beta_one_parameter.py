"""Reference for beta calibration's one-parameter form (betacal's ``"a"``): the weighted maximum
likelihood of sigmoid(a logit(s)) by a bounded scalar search, on the same clipped log features
as jcalib (``classifier_recalibration.log_features``, whose sum is the logit)."""

from __future__ import annotations

import numpy as np
import scipy.optimize

from .classifier_recalibration import log_features


def fit_a(s, y, w=None):
    """The slope a of sigmoid(a logit(s)) (no intercept) maximising the weighted likelihood."""
    w = np.ones(len(s)) if w is None else np.asarray(w, np.float64)
    y, x = np.asarray(y, np.float64), log_features(s).sum(axis=1)

    def loss(a):
        z = a * x
        return np.sum(w * (np.logaddexp(0, z) - y * z)) / w.sum()

    # the likelihood is concave in a; a bracket that holds every fit the tests make
    return scipy.optimize.minimize_scalar(loss, bounds=(-50.0, 50.0), method="bounded", options={"xatol": 1e-12}).x


def predict_a(a, s):
    return 1 / (1 + np.exp(-a * log_features(s).sum(axis=1)))
