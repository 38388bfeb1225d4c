"""Online Gaussian naive Bayes' stream: prequential forecasts equal a refit on the rows before,
and they are overconfident, the model that experiment (f) of Okoroafor et al. (2024) recalibrates."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jcalib.datasets import naive_bayes_stream
from jcalib.datasets.streams import _load
from reference.naive_bayes import gaussian_nb_prequential


def _rows(name, seed, n_passes=1):
    X, y = _load(name)
    rng = np.random.default_rng(seed)  # the loader's order: one generator, a permutation per pass
    order = np.concatenate([rng.permutation(len(y)) for _ in range(n_passes)])
    return X[order], y[order]


@pytest.mark.parametrize("name, var_smoothing", [("wine", 1e-9), ("breast_cancer", 1e-2)])
def test_matches_refit_reference(name, var_smoothing):
    s = naive_bayes_stream(name, n_passes=2, var_smoothing=var_smoothing, key=jax.random.key(1))
    X, y = _rows(name, 1, n_passes=2)
    np.testing.assert_array_equal(s.y, y)
    # Welford's running moments against np.var on each prefix: float64 round-off, amplified where
    # a forecast sits on the steep part of the sigmoid
    np.testing.assert_allclose(s.q, gaussian_nb_prequential(X, y, var_smoothing), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("var_smoothing", [1e-9, 1e-2])
def test_matches_scikit_learn_fit_on_the_rows_before(var_smoothing):
    pytest.importorskip("sklearn")
    from sklearn.naive_bayes import GaussianNB

    s = naive_bayes_stream("digits", var_smoothing=var_smoothing, key=jax.random.key(2))
    X, y = _rows("digits", 2)
    for t in (30, 200, 900, len(y) - 1):
        model = GaussianNB(var_smoothing=var_smoothing).fit(X[:t], y[:t])
        # as above: running moments against scikit-learn's two-pass ones
        np.testing.assert_allclose(s.q[t], model.predict_proba(X[t : t + 1])[0, 1], rtol=1e-7, atol=1e-9)


def test_prequential_start():
    s = naive_bayes_stream("wine", key=jax.random.key(0))
    assert s.q[0] == 0.5  # no row seen: the smoothed base rate (0 + 1) / 2
    first_two_classes = int(np.argmax(s.y != s.y[0]))  # the first row of the other class
    t = np.arange(first_two_classes + 1)
    np.testing.assert_allclose(s.q[: first_two_classes + 1], (np.cumsum(np.r_[0, s.y])[t] + 1) / (t + 2))


@pytest.mark.parametrize("name, var_smoothing", [("digits", 1e-2), ("breast_cancer", 1e-9)])
def test_stream_is_overconfident(name, var_smoothing):
    """Naive Bayes pushes forecasts to 0 and 1 (Niculescu-Mizil and Caruana 2005): on the later
    passes the frequency of ones among forecasts above 1/2 falls short of their mean, and among
    forecasts below 1/2 exceeds it; a logistic recalibration of the logit has slope < 1."""
    s = naive_bayes_stream(name, n_passes=3, var_smoothing=var_smoothing, key=jax.random.key(0))
    late = slice(len(s.y) // 3, None)
    q, y = s.q[late], s.y[late]
    hi, lo = q > 0.5, q < 0.5
    assert y[hi].mean() < q[hi].mean() - 0.02 and y[lo].mean() > q[lo].mean() + 0.02
    assert np.mean((q > 0.5) == y) > 0.8  # and yet a useful model
    z = np.log(np.clip(q, 1e-12, 1)) - np.log(np.clip(1 - q, 1e-12, 1))
    slope = _logistic_slope(np.clip(z, -30, 30), y)
    assert slope < 0.6


def _logistic_slope(z, y, steps=200):
    """Newton's method for P(y = 1) = sigma(a + b z): the calibration slope b."""
    a = b = 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(a + b * z)))
        g = np.array([np.sum(p - y), np.sum((p - y) * z)])
        w = p * (1 - p)
        H = np.array([[w.sum(), (w * z).sum()], [(w * z).sum(), (w * z * z).sum()]])
        a, b = np.array([a, b]) - np.linalg.solve(H + 1e-9 * np.eye(2), g)
    return b


def test_deterministic_and_seeded():
    a, b = naive_bayes_stream("wine", key=jax.random.key(3)), naive_bayes_stream("wine", key=jax.random.key(3))
    np.testing.assert_array_equal(a.q, b.q)
    assert not np.array_equal(a.q, naive_bayes_stream("wine", key=jax.random.key(4)).q)


def test_bad_input():
    with pytest.raises(ValueError, match="name"):
        naive_bayes_stream("covertype", key=jax.random.key(0))
    with pytest.raises(ValueError, match="n_passes"):
        naive_bayes_stream("wine", n_passes=0, key=jax.random.key(0))
    for bad in (0.0, -1.0, float("nan"), True, "1e-9"):
        with pytest.raises(ValueError, match="var_smoothing"):
            naive_bayes_stream("wine", var_smoothing=bad, key=jax.random.key(0))
