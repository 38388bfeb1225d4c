"""Slow reference for online Gaussian naive Bayes' prequential forecasts: every row's forecast
refitted from scratch on the rows before it, with np.mean and np.var."""

import numpy as np
from scipy.special import expit


def gaussian_nb_prequential(X, y, var_smoothing):
    """Forecast of y_t = 1 for each row t from the rows before it, in the given order."""
    X, y = np.asarray(X, float), np.asarray(y)
    out = np.empty(len(y))
    for t in range(len(y)):
        seen_X, seen_y = X[:t], y[:t]
        eps = var_smoothing * np.var(seen_X, axis=0).max() if t else 0.0
        if t == 0 or len(set(seen_y.tolist())) < 2 or eps <= 0:
            out[t] = (seen_y.sum() + 1) / (t + 2)  # the Laplace-smoothed base rate
            continue
        log_joint = []
        for c in (0, 1):
            Xc = seen_X[seen_y == c]
            var = np.var(Xc, axis=0) + eps
            log_lik = -0.5 * np.sum(np.log(2 * np.pi * var) + (X[t] - Xc.mean(axis=0)) ** 2 / var)
            log_joint.append(np.log(len(Xc) / t) + log_lik)
        out[t] = expit(log_joint[1] - log_joint[0])
    return out
