"""Gaussian naive Bayes on scikit-learn's digits, the data on which jcalib's classifier
recalibrators were compared across precisions and with scikit-learn: pixels scaled to [0, 1],
a stratified 40/30/30 train/calibration/test split, and ``GaussianNB().predict_proba`` as a
user passes it (float64, exact zeros included: about 80 % of the probabilities are below
1e-15). Also a classifier that returns stored probabilities in a chosen dtype, so
``CalibratedClassifierCV`` can be run on float32 scores (scikit-learn's tie rule depends on the
input dtype)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin


def nb_digits(seed: int = 0):
    """``(p_cal, y_cal, p_test, y_test)``: float64 probabilities (n, 10) and int labels."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import GaussianNB

    x, y = load_digits(return_X_y=True)
    x = x / 16.0
    x_tr, x_rest, y_tr, y_rest = train_test_split(x, y, train_size=0.4, random_state=seed, stratify=y)
    x_cal, x_te, y_cal, y_te = train_test_split(x_rest, y_rest, train_size=0.5, random_state=seed, stratify=y_rest)
    clf = GaussianNB().fit(x_tr, y_tr)
    return clf.predict_proba(x_cal), y_cal, clf.predict_proba(x_te), y_te


class StoredProbs(ClassifierMixin, BaseEstimator):
    """``predict_proba(X)`` returns ``probs[X[:, 0]]`` in ``probs``'s dtype: a fitted classifier
    whose scores are given, for ``CalibratedClassifierCV(FrozenEstimator(...))``."""

    def __init__(self, probs):
        self.probs = probs

    def fit(self, X=None, y=None):
        self.classes_ = np.arange(self.probs.shape[1])
        return self

    def predict_proba(self, X):
        return self.probs[np.asarray(X)[:, 0].astype(int)]

    def predict(self, X):
        return np.argmax(self.predict_proba(X), axis=1)


def sklearn_isotonic(p_cal, y_cal, p_test):
    """``CalibratedClassifierCV(method="isotonic")`` fitted on ``p_cal`` and applied to
    ``p_test``, both seen by scikit-learn in their own dtype."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.frozen import FrozenEstimator

    probs = np.concatenate([p_cal, p_test])
    clf = StoredProbs(probs).fit()
    idx = np.arange(len(probs))[:, None]
    sk = CalibratedClassifierCV(FrozenEstimator(clf), method="isotonic").fit(idx[: len(p_cal)], y_cal)
    return sk.predict_proba(idx[len(p_cal):])
