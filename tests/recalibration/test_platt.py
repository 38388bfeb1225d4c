"""Tests of Platt scaling (jcalib.recalibration.platt): parity with scikit-learn's
CalibratedClassifierCV(method="sigmoid") and its sigmoid calibrator, and with a SciPy fit of the
same objective; conformance (jit, vmap over bootstrap refits, no retrace); the claim that the
fit never raises the calibration NLL above the identity map's; the adapter and bad input."""

import doctest

import chex
import numpy as np
import pytest
from reference import classifier_recalibration as ref
from sklearn.calibration import CalibratedClassifierCV, _SigmoidCalibration
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from jcalib.recalibration import PlattScaling, SklearnRecalibrator
from jcalib.recalibration import platt as platt_module


def test_matches_sklearn_calibrated_classifier_sigmoid(x64):
    """A logistic model's decision_function is the logit of its predict_proba, so
    CalibratedClassifierCV's sigmoid fits exactly Platt scaling on the logit."""
    _, (X_cal, y_cal), (X_te, y_te), _, _ = ref.classifier_split("binary", seed=1)
    # a strongly regularised, under-confident model: decision values stay within |f| < 27, where
    # the logit of its probability (clipped at 1e-12) recovers them
    lr = make_pipeline(StandardScaler(), LogisticRegression(C=1e-3)).fit(X_cal[:60], y_cal[:60])
    assert np.max(np.abs(lr.decision_function(X_te))) < 20
    sk = CalibratedClassifierCV(FrozenEstimator(lr), method="sigmoid").fit(X_cal, y_cal)
    fitted = PlattScaling().fit(lr.predict_proba(X_cal), y_cal)
    got = np.asarray(fitted(lr.predict_proba(X_te)))
    want = sk.predict_proba(X_te)
    # 1e-6: both stop their optimisers at a gradient tolerance, not at the exact optimum
    np.testing.assert_allclose(got, want, atol=1e-6)
    np.testing.assert_allclose(ref.nll(got, y_te), ref.nll(want, y_te), rtol=1e-6)


@pytest.mark.parametrize("smooth", [True, False])
def test_binary_matches_reference(x64, smooth):
    _, (_, y_cal), (_, y_te), p_cal, p_te = ref.classifier_split("binary", seed=7)
    got = np.asarray(PlattScaling(smooth_targets=smooth).fit(p_cal, y_cal)(p_te))
    want = ref.one_vs_rest(lambda s, t, w: ref.platt_fit(s, t, w, smooth), ref.platt_predict, p_cal, y_cal, p_te)
    np.testing.assert_allclose(got, want, atol=1e-6)  # optimiser tolerances, as above
    np.testing.assert_allclose(ref.nll(got, y_te), ref.nll(want, y_te), rtol=1e-6)


def test_multiclass_matches_reference_and_sklearn_sigmoid_one_vs_rest(x64):
    """Platt's targets keep every one-vs-rest fit finite (class 0 of digits is separable)."""
    _, (_, y_cal), (_, y_te), p_cal, p_te = ref.classifier_split("multiclass", seed=2)
    got = np.asarray(PlattScaling().fit(p_cal, y_cal)(p_te))
    want = ref.one_vs_rest(ref.platt_fit, ref.platt_predict, p_cal, y_cal, p_te)
    np.testing.assert_allclose(got, want, atol=1e-6)  # optimiser tolerances, as above
    # scikit-learn's sigmoid calibrator (Platt's targets) on each class's logit
    logit = lambda p: np.log(np.clip(p, 1e-12, 1)) - np.log(np.clip(1 - p, 1e-12, 1))  # noqa: E731
    cols = []
    for k in range(p_cal.shape[1]):
        cal = _SigmoidCalibration().fit(logit(p_cal[:, k]), (y_cal == k).astype(float))
        cols.append(cal.predict(logit(p_te[:, k])))
    q = np.stack(cols, axis=1)
    sk = q / q.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got, sk, atol=1e-5)  # scikit-learn's L-BFGS-B default tolerances
    np.testing.assert_allclose(ref.nll(got, y_te), ref.nll(sk, y_te), rtol=1e-5)


def test_weights_are_multiplicities(x64):
    _, (_, y_cal), _, p_cal, _ = ref.classifier_split("binary", seed=3)
    reps = np.random.default_rng(0).integers(0, 3, len(y_cal))
    a = PlattScaling().fit(p_cal, y_cal, sample_weight=reps.astype(float))
    b = PlattScaling().fit(np.repeat(p_cal, reps, axis=0), np.repeat(y_cal, reps))
    chex.assert_trees_all_close(a, b, atol=1e-7)  # same objective, different summation order


@pytest.mark.parametrize("seed", range(3))
def test_calibration_nll_never_above_identity(seed):
    """Without target smoothing the binary objective is the calibration NLL, minimised over a
    family containing the identity (a = 1, b = 0) with the best iterate kept: the fitted NLL is
    at most the identity's, and on a Naive Bayes (over-confident) it is far lower."""
    _, (_, y_cal), _, p_cal, _ = ref.classifier_split("binary", seed=seed)
    q = PlattScaling(smooth_targets=False).fit(p_cal, y_cal)(p_cal)
    before = ref.nll(np.clip(p_cal, 1e-12, 1), y_cal)
    assert ref.nll(q, y_cal) <= before + 1e-6  # float32 evaluation of the objective
    assert ref.nll(q, y_cal) < 0.8 * before


@pytest.mark.parametrize("kind", ["binary", "multiclass"])
def test_jit_vmap_bootstrap_no_retrace(check_bootstrap_refits, kind):
    check_bootstrap_refits(PlattScaling(), kind)


def test_adapter_and_bad_input():
    _, (_, y_cal), _, p_cal, p_te = ref.classifier_split("binary", seed=6)
    cal = SklearnRecalibrator(PlattScaling()).fit(p_cal, y_cal)
    np.testing.assert_allclose(np.asarray(cal.predict_proba(p_te)), np.asarray(PlattScaling().fit(p_cal, y_cal)(p_te)))
    with pytest.raises(ValueError, match="sum to 1"):
        PlattScaling().fit(p_cal * 2, y_cal)
    with pytest.raises(ValueError, match="labels"):
        PlattScaling().fit(p_cal, y_cal + 2)
    with pytest.raises(ValueError, match="n_steps"):
        PlattScaling(n_steps=0)
    with pytest.raises(ValueError, match="smooth_targets"):
        PlattScaling(smooth_targets="yes")
    with pytest.raises(ValueError, match="not fitted"):
        SklearnRecalibrator(PlattScaling()).predict_proba(p_te)
    with pytest.raises(ValueError, match="2 columns"):
        PlattScaling().fit(p_cal, y_cal)(np.full((3, 3), 1 / 3))


def test_docstring_examples():
    assert doctest.testmod(platt_module, raise_on_error=True).attempted > 0
