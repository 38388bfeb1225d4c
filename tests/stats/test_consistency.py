"""Consistency resampling (Bröcker, Smith 2007): the surrogate labels follow the forecasts,
the p-value is (1 + #exceedances)/(B + 1) of the metric on the resamples, p-values are uniform
under calibration and reject p^1.5 at n = 2000, for binary and multi-class metrics alike."""

import doctest

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import stats as ref

from jcalib.metrics import binned_ece, classwise_ece, smooth_ece, top_label_ece
from jcalib.stats import consistency as module
from jcalib.stats import consistency_test
from jcalib.stats.consistency import _surrogate


def test_surrogate_labels_follow_the_forecasts():
    p = jnp.array([0.1, 0.5, 0.9])
    draws = jax.vmap(lambda k: _surrogate(k, jnp.tile(p, 2000)))(jax.random.split(jax.random.key(0), 10))
    freq = np.asarray(draws, dtype=float).reshape(10, 2000, 3).mean(axis=(0, 1))
    np.testing.assert_allclose(freq, [0.1, 0.5, 0.9], atol=0.01)  # 20000 draws each: sd <= 0.0036
    P = jnp.array([[0.2, 0.3, 0.5], [0.0, 1.0, 0.0]])
    cls = np.asarray(jax.vmap(lambda k: _surrogate(k, P))(jax.random.split(jax.random.key(1), 20000)))
    np.testing.assert_allclose(np.mean(cls[:, 0, None] == np.arange(3), axis=0), [0.2, 0.3, 0.5], atol=0.015)
    assert np.all(cls[:, 1] == 1)


def test_pvalue_is_the_share_of_exceedances(x64):
    rng = np.random.default_rng(0)
    p = rng.random(80)
    y = (rng.random(80) < p).astype(np.int32)
    traces = []

    def stat(pp, yy):
        traces.append(1)
        return binned_ece(pp, yy, n_bins=5)

    key = jax.random.key(2)
    r = consistency_test(stat, p, y, key=key, n_resamples=99)
    # the same null draws, re-made by hand
    null = []
    for k in jax.random.split(key, 99):
        _, ky = jax.random.split(k)
        ys = np.asarray(_surrogate(ky, jnp.asarray(p)))
        null.append(float(binned_ece(p, ys, n_bins=5)))
    obs = float(binned_ece(p, y, n_bins=5))
    assert float(r.statistic) == pytest.approx(obs, rel=1e-12)
    assert float(r.p_value) == pytest.approx((1 + np.sum(np.array(null) >= obs)) / 100, rel=1e-12)
    n_traces = len(traces)
    consistency_test(stat, rng.random(80), y, key=jax.random.key(3), n_resamples=99)
    assert len(traces) == n_traces  # no retrace for new data of the same shape


@pytest.mark.parametrize(
    "n,resample_forecasts",
    [(100, False), pytest.param(1000, False, marks=pytest.mark.slow), pytest.param(1000, True, marks=pytest.mark.slow)],
)
def test_pvalues_uniform_under_calibration(replicate, n, resample_forecasts):
    def test(k, p, y):
        return consistency_test(binned_ece, p, y, key=k, n_resamples=200, resample_forecasts=resample_forecasts).p_value

    pv = replicate(test, n, 1000)
    # measured with the forecasts kept: 0.030 (n=100), 0.024 (n=1000); redrawn: 0.023 at
    # n=1000, but 0.048-0.055 at n=100 (two seeds), at the critical value: that variant is
    # approximate (module docstring) and not claimed at n=100. p-values on a grid of 1/201.
    assert ref.ks_distance_uniform(pv) < ref.ks_critical_1pct(1000)


def test_power_against_p_to_the_1_5(replicate):
    pv = replicate(lambda k, p, y: consistency_test(binned_ece, p, y, key=k, n_resamples=200).p_value, 2000, 200,
                   miscalibrated=True)
    assert np.mean(pv < 0.05) >= 0.9  # measured 1.0


def test_smooth_ece_and_multiclass_metrics():
    rng = np.random.default_rng(4)
    p = rng.random(300)
    y = (rng.random(300) < p).astype(np.int32)
    k = jax.random.key(5)
    assert float(consistency_test(smooth_ece, p, y, key=k, n_resamples=50).p_value) > 0.05
    assert float(consistency_test(smooth_ece, p**3, y, key=k, n_resamples=50).p_value) < 0.05
    P = rng.dirichlet(np.ones(3), 400)
    Y = (rng.random((400, 1)) > np.cumsum(P, axis=1)).sum(axis=1)  # drawn from P
    for metric in (top_label_ece, classwise_ece):
        assert float(consistency_test(metric, P, Y, key=k, n_resamples=100).p_value) > 0.05
        sharp = P**4 / np.sum(P**4, axis=1, keepdims=True)  # over-confident
        assert float(consistency_test(metric, sharp, Y, key=k, n_resamples=100).p_value) < 0.05


def test_bad_inputs():
    p, y = np.array([0.2, 0.7]), np.array([0, 1])
    k = jax.random.key(0)
    with pytest.raises(TypeError, match="statistic"):
        consistency_test(None, p, y, key=k)
    with pytest.raises(ValueError, match="n_resamples"):
        consistency_test(binned_ece, p, y, key=k, n_resamples=0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        consistency_test(binned_ece, p + 1, y, key=k)
    with pytest.raises(ValueError, match="sum to 1"):
        consistency_test(top_label_ece, np.array([[0.5, 0.6], [0.5, 0.5]]), y, key=k)
    with pytest.raises(TypeError, match="resample_forecasts"):
        consistency_test(binned_ece, p, y, key=k, resample_forecasts=1)


def test_docstring_examples():
    assert doctest.testmod(module, raise_on_error=True).attempted > 0
