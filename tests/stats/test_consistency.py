"""Consistency resampling (Bröcker, Smith 2007): the surrogate labels follow the forecasts,
the p-value is (1 + #exceedances)/(B + 1) of the metric on the resamples, p-values are uniform
under calibration and reject p^1.5 at n = 2000, for binary and multi-class metrics alike."""

import doctest
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import stats as ref

from jcalib.metrics import binned_ece, classwise_ece, smooth_ece, top_label_ece
from jcalib.stats import consistency as module
from jcalib.stats import consistency_test
from jcalib.stats.consistency import _binned_ece_null_tables, _binned_null, _binned_p_value, _general_null, _surrogate


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
    # measured with the forecasts kept: 0.030 (n=100), 0.040 (n=1000); redrawn: 0.037 at
    # n=1000, but 0.048-0.055 at n=100 (two seeds), at the critical value 0.0515: that variant is
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


# ---------------------------------------------------------------------------------------------
# The binned-ECE fast path (per-bin Poisson-binomial counts)


@pytest.mark.parametrize("options", [{}, {"n_bins": 6, "strategy": "quantile"}, {"n_bins": 10, "order": 2}])
def test_fast_path_null_equals_outcome_by_outcome_null(x64, options):
    """Two-sample KS: the O(bins) null and the O(n) null of the general path are one distribution."""
    from scipy.stats import ks_2samp

    rng = np.random.default_rng(7)
    p = jnp.asarray(rng.random(400) ** 1.5)
    B = 4000
    metric = functools.partial(binned_ece, **options)
    general = np.asarray(_general_null(metric, p, None, jax.random.key(1), B, False, 500))
    _, lo, F, counts, sums = _binned_ece_null_tables(p, options.get("n_bins", 15), options.get("strategy", "uniform"))
    fast = np.asarray(_binned_null(jax.random.key(2), lo, F, counts, sums, n_resamples=B, p_exp=options.get("order", 1)))
    assert ks_2samp(general, fast).pvalue > 1e-3
    # and a shifted null is told apart at this B (the check has power)
    assert ks_2samp(general, fast * 1.05).pvalue < 1e-3


def test_fast_path_is_taken_and_agrees_with_the_general_path(x64, monkeypatch):
    rng = np.random.default_rng(8)
    p = rng.random(600)
    y = (rng.random(600) < p**1.2).astype(np.int32)
    k = jax.random.key(3)
    general = consistency_test(lambda a, b: binned_ece(a, b), p, y, key=k, n_resamples=3000)
    monkeypatch.setattr(module, "_consistency", None)  # the fast path must not need it
    fast = consistency_test(binned_ece, p, y, key=k, n_resamples=3000)
    assert float(fast.statistic) == float(binned_ece(p, y))
    # two Monte Carlo estimates of one p-value (about 0.1 here): sd sqrt(p(1-p)/3000) ~ 0.006 each
    assert abs(float(fast.p_value) - float(general.p_value)) < 0.03
    again = consistency_test(binned_ece, p, y, key=k, n_resamples=3000)
    assert float(again.p_value) == float(fast.p_value)  # reproducible from the key


def test_fast_path_exact_null_of_one_bin(x64):
    """One bin: ECE* = |sum p - S| / n with S Poisson-binomial; its mean from the exact pmf."""
    from reference.poisson_binomial import pmf_by_dp

    p = jnp.asarray(np.random.default_rng(9).uniform(0.21, 0.26, 300))  # all in bin 3 of 15: [0.2, 0.2667)
    _, lo, F, counts, sums = _binned_ece_null_tables(p)
    null = np.asarray(_binned_null(jax.random.key(4), lo, F, counts, sums, n_resamples=200_000, p_exp=1))
    pmf = pmf_by_dp(np.asarray(p))
    exact = np.sum(pmf * np.abs(float(jnp.sum(p)) - np.arange(301))) / 300
    sd = np.sqrt(np.sum(pmf * (np.abs(float(jnp.sum(p)) - np.arange(301)) / 300 - exact) ** 2) / 200_000)
    assert abs(null.mean() - exact) < 4 * sd


def test_fast_path_no_retrace():
    rng = np.random.default_rng(10)
    y = (rng.random(500) < 0.5).astype(np.int32)
    consistency_test(binned_ece, rng.random(500), y, key=jax.random.key(0), n_resamples=100)
    size = _binned_p_value._cache_size()
    for _ in range(3):  # new data of the same n: bin windows have one width per n
        consistency_test(binned_ece, rng.random(500) ** 2, y, key=jax.random.key(1), n_resamples=100)
    assert _binned_p_value._cache_size() == size


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


def test_binned_tables_program_has_no_host_callback():
    """The fast path's bin sums hold no in-graph check (``bin_index`` on forecasts checked at the
    boundary): a host callback would keep the program out of the persistent compilation cache."""
    p = np.linspace(0.01, 0.99, 50, dtype=np.float32)
    assert "callback" not in str(jax.make_jaxpr(lambda p: module._bin_sums_unit(p, 10, "uniform"))(p))
