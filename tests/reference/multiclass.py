"""Plain-loop NumPy references for the multi-class ECEs and helpers (jcalib.metrics.multiclass).

Written from the definitions with explicit Python loops over classes and bins:
confidence ECE (Guo et al. 2017), top-label ECE (Gupta & Ramdas 2022), class-wise ECE averaged
over classes (Kull et al. 2019).
"""

from __future__ import annotations

import numpy as np


def _bins(x, w, n_bins, strategy):
    """Bin index of every entry of x (uniform: [k/K, (k+1)/K), last bin closed; quantile: by
    the weight of entries strictly below, floor(K · W(<x)/W))."""
    out = np.empty(len(x), int)
    for i, xi in enumerate(x):
        if strategy == "uniform":
            out[i] = min(int(np.floor(xi * n_bins)), n_bins - 1)
        else:
            below = sum(w[j] for j in range(len(x)) if x[j] < xi)
            out[i] = min(int(np.floor(n_bins * below / sum(w))), n_bins - 1)
    return out


def binned_ece(conf, hit, w, n_bins, strategy="uniform", p=1):
    """(Σ_b W_b/W |mean conf_b − mean hit_b|^p)^{1/p}, bins over the samples with w > 0."""
    conf, hit, w = (np.asarray(a, np.float64) for a in (conf, hit, w))
    idx = _bins(conf, w, n_bins, strategy)
    total = 0.0
    for b in range(n_bins):
        members = [i for i in range(len(conf)) if idx[i] == b and w[i] > 0]
        wb = sum(w[i] for i in members)
        if wb == 0:
            continue
        gap = abs(sum(w[i] * (conf[i] - hit[i]) for i in members)) / wb
        total += wb / w.sum() * gap**p
    return total ** (1 / p)


def confidence_ece(probs, labels, w=None, n_bins=15, strategy="uniform", p=1):
    probs = np.asarray(probs, np.float64)
    w = np.ones(len(probs)) if w is None else np.asarray(w, np.float64)
    pred = probs.argmax(axis=1)
    return binned_ece(probs.max(axis=1), pred == np.asarray(labels), w, n_bins, strategy, p)


def top_label_ece(probs, labels, w=None, n_bins=15, strategy="uniform", p=1):
    """Σ over predicted classes ℓ of (W_ℓ/W) ECE_ℓ^p, then the 1/p-th power."""
    probs = np.asarray(probs, np.float64)
    labels = np.asarray(labels)
    w = np.ones(len(probs)) if w is None else np.asarray(w, np.float64)
    pred = probs.argmax(axis=1)
    total = 0.0
    for ell in range(probs.shape[1]):
        sel = pred == ell
        if w[sel].sum() == 0:
            continue
        e = binned_ece(probs[sel].max(axis=1), labels[sel] == ell, w[sel], n_bins, strategy, p)
        total += w[sel].sum() / w.sum() * e**p
    return total ** (1 / p)


def classwise_ece(probs, labels, w=None, n_bins=15, strategy="uniform", p=1):
    """Mean over classes of the one-vs-rest binned ECE."""
    probs = np.asarray(probs, np.float64)
    labels = np.asarray(labels)
    w = np.ones(len(probs)) if w is None else np.asarray(w, np.float64)
    c = probs.shape[1]
    return sum(binned_ece(probs[:, ell], labels == ell, w, n_bins, strategy, p) for ell in range(c)) / c


def l2_error(probs, labels, w=None):
    probs = np.asarray(probs, np.float64)
    w = np.ones(len(probs)) if w is None else np.asarray(w, np.float64)
    y = np.eye(probs.shape[1])[np.asarray(labels)]
    return float(np.sum(w * np.sum((probs - y) ** 2, axis=1)) / w.sum())


def nll(probs, labels, w=None, eps=1e-12):
    probs = np.asarray(probs, np.float64)
    w = np.ones(len(probs)) if w is None else np.asarray(w, np.float64)
    py = np.clip(probs[np.arange(len(probs)), np.asarray(labels)], eps, 1.0)
    return float(-np.sum(w * np.log(py)) / w.sum())


def accuracy(probs, labels, w=None):
    probs = np.asarray(probs, np.float64)
    w = np.ones(len(probs)) if w is None else np.asarray(w, np.float64)
    return float(np.sum(w * (probs.argmax(axis=1) == np.asarray(labels))) / w.sum())
