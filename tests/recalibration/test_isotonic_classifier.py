"""Tests of isotonic calibration (jcalib.recalibration.isotonic_classifier): PAV against a
pure-Python PAV and scikit-learn's IsotonicRegression (ties, weights), held-out parity with
CalibratedClassifierCV(method="isotonic"), binary and multi-class; the isotonic fit's
properties (monotone, in-sample calibrated, least squares); conformance (jit, vmap over
bootstrap refits, no retrace); the adapter and bad input. Near-tied scores are pooled by
scikit-learn's rule (within the input dtype's resolution of a group's first score), tested
against a restatement of that rule and against scikit-learn in float32 and float64, on a toy
example and on Gaussian naive Bayes's digits scores (which pile up within 1e-15 of 0)."""

import doctest

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import classifier_recalibration as ref
from reference import isotonic_ties
from reference.nb_digits import nb_digits, sklearn_isotonic
from sklearn.calibration import CalibratedClassifierCV
from sklearn.frozen import FrozenEstimator
from sklearn.isotonic import IsotonicRegression

from jcalib.metrics import ece
from jcalib.recalibration import IsotonicCalibration, SklearnRecalibrator, pav
from jcalib.recalibration import isotonic_classifier as iso_module



def _binary(s):
    s = np.asarray(s, np.float64)
    return np.stack([1 - s, s], axis=1)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 1), st.integers(0, 3)), min_size=1, max_size=30),
)
def test_pav_matches_pure_python(points):
    y = np.array([p[0] for p in points])
    w = np.array([p[1] for p in points], float)
    w[0] += 1  # a positive total weight
    with jax.enable_x64(True):
        got = np.asarray(pav(jnp.asarray(y), jnp.asarray(w)))
    keep = w > 0
    want = ref.pav(y[keep], w[keep])
    np.testing.assert_allclose(got[keep], want, rtol=1e-12, atol=1e-15)
    assert np.all(np.diff(got) >= -1e-15)  # skipped (weight 0) points take a neighbour's value


@pytest.mark.parametrize("seed", range(4))
def test_matches_sklearn_isotonic_regression_with_ties_and_weights(x64, seed):
    rng = np.random.default_rng(seed)
    n = 400
    s = np.round(rng.random(n), 2)  # many exact ties
    y = (rng.random(n) < s**2).astype(int)
    w = rng.integers(0, 4, n).astype(float) if seed % 2 else None
    ir = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1, increasing=True).fit(s, y, sample_weight=w)
    params = IsotonicCalibration().fit(_binary(s), y, sample_weight=w)
    t = np.concatenate([rng.random(500), s, [0.0, 1.0]])  # between, on and beyond the thresholds
    got = np.asarray(params(_binary(t)))[:, 1]
    np.testing.assert_allclose(got, ir.predict(t), rtol=1e-12, atol=1e-14)
    ref_model = ref.isotonic_fit(s, y, w)
    np.testing.assert_allclose(got, ref.isotonic_predict(ref_model, t), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_near_ties_pooled_as_scikit_learn(dtype):
    """Scores less than the dtype's resolution apart are one point: scikit-learn gives
    (1/3, 1/3, 1/3, 1, 1) here; pooling exact ties only gave (0, 1/2, 1/2, 1, 1)."""
    x = np.array([0.0, 1e-17, 2e-17, 0.5, 0.9], dtype)
    y = np.array([0, 1, 0, 1, 1])
    want = IsotonicRegression(out_of_bounds="clip").fit(x, y.astype(dtype)).predict(x)
    with jax.enable_x64(dtype == np.float64):
        got = np.asarray(IsotonicCalibration().fit(_binary(x).astype(dtype), y)(_binary(x).astype(dtype)))
    assert got.dtype == dtype
    # 1e-6: float32's resolution (1/3 is not exact in it)
    np.testing.assert_allclose(got[:, 1], [1 / 3, 1 / 3, 1 / 3, 1, 1], rtol=1e-6)
    np.testing.assert_allclose(got[:, 1], want, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", range(3))
def test_tie_rule_matches_reference_and_sklearn(dtype, seed):
    """Chains of near-ties (steps below, at and above the resolution; the group is cut where a
    score is a resolution above the group's *first* score), weight-0 points that must not start
    a group, in both precisions: against the plain-Python rule and IsotonicRegression."""
    rng = np.random.default_rng(seed)
    res = np.finfo(dtype).resolution
    n = 300
    base = rng.choice(np.linspace(0.05, 0.95, 12), n)
    s = (base + rng.choice([0.0, 0.3, 0.7, 1.0, 1.5], n) * res * rng.integers(0, 4, n)).astype(dtype)
    s[:5] = np.array([0.0, 1e-17, 0.4 * res, 0.8 * res, 1.2 * res], dtype)  # a chain at 0
    y = (rng.random(n) < base).astype(int)
    w = rng.integers(0, 3, n).astype(dtype)
    w[0] = 0  # the smallest score has no weight: the group starts at the next one
    ir = IsotonicRegression(out_of_bounds="clip").fit(s, y.astype(dtype), sample_weight=w)
    t = np.concatenate([s, rng.random(200).astype(dtype)])
    with jax.enable_x64(dtype == np.float64):
        got = np.asarray(IsotonicCalibration().fit(_binary(s).astype(dtype), y, sample_weight=w)(_binary(t).astype(dtype)))[:, 1]
    # round-off of the pooled means and of the interpolation in each dtype
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got, ir.predict(t), **tol)
    np.testing.assert_allclose(got, isotonic_ties.isotonic_predict(isotonic_ties.isotonic_fit(s, y, w), t), **tol)


def test_tie_rule_under_vmap_with_bootstrap_weights(x64):
    """The pooling is a fixed-shape scan: vmapped over weight vectors (zeros included, which
    must neither start nor anchor a group), each refit equals the reference rule's fit."""
    rng = np.random.default_rng(7)
    n = 60
    s = np.concatenate([np.arange(20) * 4e-16, 0.5 + np.arange(20) * 3e-16, rng.random(20)])
    y = (rng.random(n) < np.clip(s, 0.2, 0.8)).astype(int)
    W = rng.poisson(1.0, (5, n)).astype(float)
    t = np.concatenate([s, rng.random(50)])
    fit = jax.jit(jax.vmap(lambda w: IsotonicCalibration().fit(_binary(s), y, sample_weight=w)(_binary(t))))
    got = np.asarray(fit(W))[..., 1]
    for i in range(len(W)):
        want = isotonic_ties.isotonic_predict(isotonic_ties.isotonic_fit(s, y, W[i]), t)
        np.testing.assert_allclose(got[i], want, rtol=1e-12, atol=1e-14)  # float64 round-off of the sums


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_naive_bayes_digits_parity_with_calibrated_classifier_cv(dtype):
    """Gaussian naive Bayes on digits: 80 % of its scores lie below 1e-15, so the tie rule
    decides the fit. jcalib and CalibratedClassifierCV(method="isotonic"), both given the
    scores in ``dtype``, agree on every held-out probability and on the NLL, and no test point
    gets probability 0 on its true class (exact-tie pooling left six there in float64)."""
    pc, yc, pt, yt = nb_digits(0)
    pc, pt = pc.astype(dtype), pt.astype(dtype)
    want = sklearn_isotonic(pc, yc, pt)
    with jax.enable_x64(dtype == np.float64):
        got = np.asarray(IsotonicCalibration().fit(pc, yc)(pt))
    # float32: jcalib renormalises the rows in float32, scikit-learn in float64
    np.testing.assert_allclose(got, want, atol=1e-6 if dtype == np.float32 else 1e-12)
    p_true = got[np.arange(len(yt)), yt].astype(np.float64)
    assert p_true.min() > 1e-3
    # float32: the probabilities agree to 1e-6 (above), so their mean log to about 1e-5
    np.testing.assert_allclose(-np.mean(np.log(p_true)), ref.nll(want, yt), rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("kind", ["binary", "multiclass"])
def test_matches_calibrated_classifier_cv_isotonic(x64, kind):
    """GaussianNB has no decision_function, so scikit-learn calibrates predict_proba itself."""
    clf, (X_cal, y_cal), (X_te, y_te), p_cal, p_te = ref.classifier_split(kind, seed=1)
    sk = CalibratedClassifierCV(FrozenEstimator(clf), method="isotonic").fit(X_cal, y_cal)
    want = sk.predict_proba(X_te)
    got = np.asarray(IsotonicCalibration().fit(p_cal, y_cal)(p_te))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ref.nll(np.clip(got, 1e-15, 1), y_te), ref.nll(np.clip(want, 1e-15, 1), y_te), rtol=1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_in_sample_fit_is_monotone_calibrated_and_least_squares(x64, seed):
    """The isotonic regression is non-decreasing in the score; each block's value is its mean
    label, so the fitted values are perfectly calibrated on the calibration set (ECE grouping by
    value is 0); and no non-decreasing fit has a smaller squared error (vs. random monotone
    perturbations)."""
    _, (_, y_cal), _, p_cal, _ = ref.classifier_split("binary", seed=seed)
    q = np.asarray(IsotonicCalibration().fit(p_cal, y_cal)(p_cal))[:, 1]
    order = np.argsort(p_cal[:, 1], kind="stable")
    assert np.all(np.diff(q[order]) >= 0)
    assert float(ece(q, y_cal)) < 1e-9
    sse = np.sum((q - y_cal) ** 2)
    rng = np.random.default_rng(seed)
    for _ in range(20):
        other = np.maximum.accumulate(np.clip(q[order] + rng.normal(0, 0.05, len(q)), 0, 1))
        assert np.sum((other - y_cal[order]) ** 2) >= sse - 1e-9


@pytest.mark.parametrize("kind", ["binary", "multiclass"])
def test_jit_vmap_bootstrap_no_retrace(check_bootstrap_refits, kind):
    check_bootstrap_refits(IsotonicCalibration(), kind)


def test_adapter_and_bad_input():
    _, (_, y_cal), _, p_cal, p_te = ref.classifier_split("binary", seed=6)
    cal = SklearnRecalibrator(IsotonicCalibration()).fit(p_cal, y_cal)
    np.testing.assert_allclose(np.asarray(cal.predict_proba(p_te)), np.asarray(cal.fitted_(p_te)))
    with pytest.raises(ValueError, match="must have 2 columns"):
        cal.predict_proba(np.full((3, 3), 1 / 3))
    with pytest.raises(ValueError, match="must have 2 columns"):
        cal.fitted_(np.full((3, 3), 1 / 3))
    with pytest.raises(ValueError, match="non-negative"):
        IsotonicCalibration().fit(p_cal, y_cal, sample_weight=-np.ones(len(y_cal)))
    with pytest.raises(ValueError, match="mismatched"):
        IsotonicCalibration().fit(p_cal, y_cal[:-1])


def test_docstring_examples():
    assert doctest.testmod(iso_module, raise_on_error=True).attempted > 0


def test_fit_program_has_no_host_callback():
    """The fit's program holds no in-graph check (``pav`` on values derived from inputs checked
    at the boundary): a host callback would keep it out of the persistent compilation cache."""
    from jcalib.recalibration import isotonic_classifier as module

    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), 30).astype(np.float32)
    labels = rng.integers(0, 3, 30).astype(np.int32)
    jaxpr = jax.make_jaxpr(lambda p: module._isotonic_fit(p, labels, np.ones(30, np.float32)))(probs)
    assert "callback" not in str(jaxpr)
