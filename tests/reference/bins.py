"""Plain references for binning: the exact bin-edge rule in rational arithmetic, the rules of
netcal and relplot as their code applies them, and MCE and ACE by their definitions.

netcal is not installed here (it needs torch): its rules are restated from its source
(``netcal.metrics.Miscalibration._measure`` and ``netcal.binning.HistogramBinning``, v1.3).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from scipy.stats import binned_statistic


def exact_bin(p, n_bins: int) -> np.ndarray:
    """Bin k iff k/K <= p < (k+1)/K for the real number a float p stands for; last bin closed."""
    out = []
    for v in np.asarray(p).ravel().tolist():
        x = Fraction(v)  # exact value of the float
        k = int(x * n_bins)  # floor for x >= 0, in exact rational arithmetic
        out.append(min(k, n_bins - 1))
    return np.array(out, dtype=np.int64).reshape(np.shape(p))


def netcal_bin(p, n_bins: int) -> np.ndarray:
    """netcal's ECE/MCE bins: ``binned_statistic_dd`` on ``np.linspace(0, 1, K + 1)`` after
    clipping to [eps, 1 - eps] (float64 eps): bin k iff e_k <= p < e_{k+1}, last edge closed."""
    eps = np.finfo(np.float64).eps
    x = np.clip(np.asarray(p, np.float64), eps, 1 - eps)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    _, _, idx = binned_statistic(x, x, statistic="count", bins=edges)
    return idx - 1  # scipy numbers bins from 1


def relplot_bin(p, n_bins: int) -> np.ndarray:
    """relplot's ``binning`` (``relplot.metrics.binnedECE``): ``int(p / (1/K))``; relplot keeps
    p = 1 in an extra bin K, which is merged into the last bin here (jcalib's closed last bin)."""
    p = np.asarray(p)
    return np.minimum((p / (1.0 / n_bins)).astype(int), n_bins - 1)


def binned_gaps(p, y, idx, n_bins, w=None):
    """Per-bin weight and |mean p - mean y| (0 for empty bins), in float64."""
    p, y = np.asarray(p, np.float64), np.asarray(y, np.float64)
    w = np.ones(len(p)) if w is None else np.asarray(w, np.float64)
    W = np.zeros(n_bins)
    gap = np.zeros(n_bins)
    for k in range(n_bins):
        s = idx == k
        W[k] = w[s].sum()
        if W[k] > 0:
            gap[k] = abs(np.sum(w[s] * (p[s] - y[s]))) / W[k]
    return W, gap


def mce(p, y, n_bins, w=None) -> float:
    """max over non-empty uniform bins of |mean p - mean y| (Naeini et al. 2015), exact bins."""
    W, gap = binned_gaps(p, y, exact_bin(p, n_bins), n_bins, w)
    return float(gap[W > 0].max())


def quantile_bin(v, n_bins, w=None) -> np.ndarray:
    """Equal-mass bin of each value: floor(K * (weight strictly below v) / W), ties together."""
    v = np.asarray(v, np.float64)
    w = np.ones(len(v)) if w is None else np.asarray(w, np.float64)
    return np.array([min(int(np.floor(n_bins * w[v < x].sum() / w.sum())), n_bins - 1) for x in v])


def ace(probs, labels, n_bins, w=None) -> float:
    """Nixon et al. (2019): mean over classes of the mean over non-empty equal-mass ranges of
    |mean v_l - freq of class l|. 1-D probs: the one class 'label 1'."""
    probs = np.asarray(probs, np.float64)
    labels = np.asarray(labels)
    if probs.ndim == 1:
        cols, hits = probs[:, None], labels[:, None].astype(float)
    else:
        cols, hits = probs, np.eye(probs.shape[1])[labels]
    per_class = []
    for c in range(cols.shape[1]):
        idx = quantile_bin(cols[:, c], n_bins, w)
        W, gap = binned_gaps(cols[:, c], hits[:, c], idx, n_bins, w)
        per_class.append(gap[W > 0].mean())
    return float(np.mean(per_class))
