"""Slow, obviously-correct NumPy/SciPy references for the classifier recalibrators (Platt,
beta calibration, isotonic regression by PAV, histogram binning), and the one-vs-rest
reduction with renormalisation that scikit-learn's ``CalibratedClassifierCV`` and netcal use.

Each binary reference is ``fit(scores, y01, w) -> model`` and ``predict(model, scores)``.
netcal's ``HistogramBinning`` (netcal 1.3, which needs torch, not installed here) is restated
from its source: bins from ``np.linspace(0, 1, K + 1)``; fit with
``scipy.stats.binned_statistic_dd`` (left-closed bins) on scores clipped to [eps, 1 - eps];
empty bins filled with the bin midpoint; predict with ``np.digitize(..., right=True) - 1``
(right-closed bins, index -1 mapped to 0).
"""

from __future__ import annotations

import numpy as np
import scipy.optimize
from scipy.stats import binned_statistic

LOG_CLIP = 1e-12


def _w(s, w):
    return np.ones(len(s)) if w is None else np.asarray(w, np.float64)


def log_features(s):
    s = np.asarray(s, np.float64)
    return np.stack([np.log(np.clip(s, LOG_CLIP, 1)), -np.log(np.clip(1 - s, LOG_CLIP, 1))], axis=1)


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def _fit_logistic(x, t, w, n_params):
    """argmin_theta mean_w [softplus(x·a + c) - t (x·a + c)] with (a, c) = theta; BFGS, tight."""

    def loss(theta):
        z = x @ theta[:-1] + theta[-1]
        return np.sum(w * (np.logaddexp(0, z) - t * z)) / w.sum()

    def grad(theta):
        z = x @ theta[:-1] + theta[-1]
        r = w * (_sigmoid(z) - t) / w.sum()
        return np.concatenate([x.T @ r, [r.sum()]])

    res = scipy.optimize.minimize(loss, np.zeros(n_params), jac=grad, method="BFGS", options={"gtol": 1e-10})
    return res.x


# --- Platt ---------------------------------------------------------------------------------


def platt_fit(s, y, w=None, smooth_targets=True):
    w = _w(s, w)
    y = np.asarray(y, np.float64)
    if smooth_targets:
        n_pos, n_neg = np.sum(w * y), np.sum(w * (1 - y))
        t = np.where(y > 0, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    else:
        t = y
    logit = log_features(s).sum(axis=1, keepdims=True)
    return _fit_logistic(logit, t, w, 2)


def platt_predict(theta, s):
    return _sigmoid(theta[0] * log_features(s).sum(axis=1) + theta[1])


# --- Beta calibration ----------------------------------------------------------------------


def beta_fit(s, y, w=None, parameters="abm"):
    """Returns (a, b, c) of sigmoid(a log s - b log(1 - s) + c), betacal's fallback for a, b < 0."""
    w, y, x = _w(s, w), np.asarray(y, np.float64), log_features(s)
    if parameters == "am":
        a, c = _fit_logistic(x.sum(axis=1, keepdims=True), y, w, 2)
        return np.array([a, a, c])
    if parameters == "ab":  # no intercept: a log 2s - b log 2(1-s) = a x0 + b x1 + (a - b) log 2
        xa = x + np.array([np.log(2), -np.log(2)])

        def loss(ab):
            z = xa @ ab
            return np.sum(w * (np.logaddexp(0, z) - y * z)) / w.sum()

        a, b = scipy.optimize.minimize(loss, np.ones(2), method="BFGS", options={"gtol": 1e-10}).x
        return np.array([a, b, (a - b) * np.log(2)])
    a, b, c = _fit_logistic(x, y, w, 3)
    if a < 0:
        b, c = _fit_logistic(x[:, 1:], y, w, 2)
        return np.array([0.0, b, c])
    if b < 0:
        a, c = _fit_logistic(x[:, :1], y, w, 2)
        return np.array([a, 0.0, c])
    return np.array([a, b, c])


def beta_predict(abc, s):
    x = log_features(s)
    return _sigmoid(abc[0] * x[:, 0] + abc[1] * x[:, 1] + abc[2])


# --- Isotonic regression (PAV) ---------------------------------------------------------------


def pav(y, w):
    """Pool-adjacent-violators with an explicit list of blocks [sum w, sum w y, count]."""
    blocks = []
    for yi, wi in zip(np.asarray(y, float).tolist(), np.asarray(w, float).tolist()):
        blocks.append([wi, wi * yi, 1])
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][0] >= blocks[-1][1] / blocks[-1][0]:
            sw, swy, cnt = blocks.pop()
            blocks[-1][0] += sw
            blocks[-1][1] += swy
            blocks[-1][2] += cnt
    out = []
    for sw, swy, cnt in blocks:
        out += [swy / sw] * cnt
    return np.array(out)


def isotonic_fit(s, y, w=None):
    """Distinct scores with positive weight (ties pooled: weights summed, labels averaged),
    then PAV; returns (x, g) for np.interp."""
    s, y, w = np.asarray(s, np.float64), np.asarray(y, np.float64), _w(s, w)
    keep = w > 0
    s, y, w = s[keep], y[keep], w[keep]
    xs = np.unique(s)
    W = np.array([w[s == v].sum() for v in xs])
    Y = np.array([np.sum(w[s == v] * y[s == v]) for v in xs]) / W
    return xs, pav(Y, W)


def isotonic_predict(model, s):
    xs, g = model
    return np.interp(np.asarray(s, np.float64), xs, g)


# --- Histogram binning (netcal's rules) ------------------------------------------------------


def netcal_histogram_fit(s, y, n_bins):
    eps = np.finfo(np.float64).eps
    x = np.clip(np.asarray(s, np.float64), eps, 1 - eps)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    acc, _, _ = binned_statistic(x, np.asarray(y, np.float64), statistic="mean", bins=edges)
    empty = np.isnan(acc)
    acc[empty] = 0.5 * (edges[:-1] + edges[1:])[empty]
    return edges, acc


def netcal_histogram_predict(model, s):
    edges, acc = model
    n_bins = len(acc)
    idx = np.digitize(np.asarray(s, np.float64), edges, right=True) - 1
    idx[idx == -1] = 0
    idx[idx == n_bins] = n_bins - 1
    return acc[idx]


def quantile_histogram_fit(s, y, n_bins, w=None):
    """Equal-mass bins by weighted rank (floor(K W(<v)/W)); value = weighted frequency of ones;
    bin k covers [min score of bin k, min score of the next non-empty bin)."""
    s, y, w = np.asarray(s, np.float64), np.asarray(y, np.float64), _w(s, w)
    idx = np.array([min(int(np.floor(n_bins * w[s < v].sum() / w.sum())), n_bins - 1) for v in s])
    lows, vals = [], []
    for k in range(n_bins):
        m = (idx == k) & (w > 0)
        if m.any():
            lows.append(0.0 if not lows else s[m].min())
            vals.append(np.sum(w[m] * y[m]) / w[m].sum())
    return np.array(lows), np.array(vals)


def quantile_histogram_predict(model, s):
    lows, vals = model
    return vals[np.searchsorted(lows, np.asarray(s, np.float64), side="right") - 1]


# --- One-vs-rest -----------------------------------------------------------------------------


def one_vs_rest(fit, predict, p_cal, y_cal, p_test, w=None):
    """scikit-learn's CalibratedClassifierCV reduction: C = 2 -> the positive column; C > 2 ->
    every column, rows renormalised (uniform where a row sums to 0)."""
    p_cal, p_test, y_cal = np.asarray(p_cal, np.float64), np.asarray(p_test, np.float64), np.asarray(y_cal)
    c = p_cal.shape[1]
    if c == 2:
        q = predict(fit(p_cal[:, 1], (y_cal == 1).astype(float), w), p_test[:, 1])
        return np.stack([1 - q, q], axis=1)
    q = np.stack([predict(fit(p_cal[:, k], (y_cal == k).astype(float), w), p_test[:, k]) for k in range(c)], axis=1)
    tot = q.sum(axis=1, keepdims=True)
    return np.divide(q, tot, out=np.full_like(q, 1 / c), where=tot != 0)


def nll(q, y):
    q = np.asarray(q, np.float64)
    return float(-np.mean(np.log(np.clip(q[np.arange(len(y)), np.asarray(y)], 1e-300, 1))))


# --- Shared test data ------------------------------------------------------------------------


def classifier_split(kind: str, seed: int = 0, model: str = "nb"):
    """Held-out scores of real miscalibrated classifiers on data shipped with scikit-learn:
    ``kind="binary"`` breast cancer, ``"multiclass"`` digits (PCA to 16 dimensions);
    ``model="nb"`` Gaussian Naive Bayes (over-confident, with probabilities down to 1e-200), or
    ``"logistic"`` a strongly regularised logistic regression on standardised features
    (under-confident, probabilities well inside (0, 1), where every library's clip of log 0 is
    moot). Returns the fitted model, (X_cal, y_cal), (X_test, y_test) and the probabilities on
    both splits (train/cal/test = 40/30/30 %)."""
    from sklearn.datasets import load_breast_cancer, load_digits
    from sklearn.decomposition import PCA
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import GaussianNB

    if kind == "binary":
        X, y = load_breast_cancer(return_X_y=True)
    else:
        X, y = load_digits(return_X_y=True)
        X = PCA(16, random_state=0).fit_transform(X)
    X_tr, X_rest, y_tr, y_rest = train_test_split(X, y, train_size=0.4, random_state=seed, stratify=y)
    X_cal, X_te, y_cal, y_te = train_test_split(X_rest, y_rest, train_size=0.5, random_state=seed, stratify=y_rest)
    if model == "nb":
        clf = GaussianNB()
    else:
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        clf = make_pipeline(StandardScaler(), LogisticRegression(C=1e-2))
    clf.fit(X_tr, y_tr)
    return clf, (X_cal, y_cal), (X_te, y_te), clf.predict_proba(X_cal), clf.predict_proba(X_te)
