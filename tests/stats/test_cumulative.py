"""KS and Kuiper calibration tests and the PIT uniformity test: statistics against an explicit
cumulative walk, the Brownian-motion p-value series against simulation, uniform p-values
under calibration (with Siegmund's correction, already at n = 100), power against p^1.5,
PIT p-values against scipy's exact KS test, top-label form, conformance, input errors."""

import doctest

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from reference import stats as ref

from jcalib.stats import cumulative as module
from jcalib.stats import ks_calibration_error, ks_test, kuiper_calibration_error, kuiper_test, pit_uniformity_test
from jcalib.stats.cumulative import _ks_pvalue, _range_pvalue


def test_statistics_match_reference_walk(x64):
    rng = np.random.default_rng(0)
    p = rng.random(40)
    y = (rng.random(40) < p).astype(int)
    w = rng.random(40) + 0.1
    for weights in (None, w):
        s, _ = ref.cumulative_walk(p, y, weights)
        assert float(ks_calibration_error(p, y, weights)) == pytest.approx(np.max(np.abs(s)), rel=1e-12)
        assert float(kuiper_calibration_error(p, y, weights)) == pytest.approx(s.max() - s.min(), rel=1e-12)
    assert float(ks_test(p, y).statistic) == float(ks_calibration_error(p, y))


def test_top_label_form(x64):
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.ones(4), 60)
    y = rng.integers(0, 4, 60)
    conf, hit = P.max(axis=1), (P.argmax(axis=1) == y).astype(int)
    assert float(ks_calibration_error(P, y)) == pytest.approx(float(ks_calibration_error(conf, hit)), rel=1e-12)
    assert float(kuiper_test(P, y).p_value) == pytest.approx(float(kuiper_test(conf, hit).p_value), rel=1e-12)


def test_brownian_series_against_simulation():
    # sup|W| and the range of a 2000-step Gaussian walk W, 10000 paths, against the series at
    # the level moved out by Siegmund's correction (the walk is what the tests observe);
    # Monte-Carlo sd <= 0.005, allowed 0.015
    m, paths = 2000, 10000
    rng = np.random.default_rng(2)
    walk = np.concatenate([np.zeros((paths, 1)), np.cumsum(rng.normal(size=(paths, m)) / np.sqrt(m), axis=1)], axis=1)
    sup, spread = np.abs(walk).max(axis=1), walk.max(axis=1) - walk.min(axis=1)
    shift = 0.5826 / np.sqrt(m)
    for x in (0.8, 1.2, 1.8, 2.4):
        assert abs(float(_ks_pvalue(jnp.float32(x + shift))) - np.mean(sup >= x)) < 0.015
        r = x + 0.6
        assert abs(float(_range_pvalue(jnp.float32(r + 2 * shift))) - np.mean(spread >= r)) < 0.015


@pytest.mark.parametrize("n", [100, 1000])
@pytest.mark.parametrize("test", [ks_test, kuiper_test], ids=["ks", "kuiper"])
def test_pvalues_uniform_under_calibration(replicate, n, test):
    pv = replicate(lambda k, p, y: test(p, y).p_value, n, 1000)
    # measured: KS 0.021 (n=100), 0.019 (n=1000); Kuiper 0.044, 0.016
    assert ref.ks_distance_uniform(pv) < ref.ks_critical_1pct(1000)


@pytest.mark.parametrize("test", [ks_test, kuiper_test], ids=["ks", "kuiper"])
def test_power_against_p_to_the_1_5(replicate, test):
    pv = replicate(lambda k, p, y: test(p, y).p_value, 2000, 200, miscalibrated=True)
    assert np.mean(pv < 0.05) >= 0.9  # measured 1.0 for both


def test_pit_pvalue_matches_scipy():
    rng = np.random.default_rng(3)
    for T, a in ((50, 1.0), (100, 1.0), (100, 1.3), (1000, 1.1)):
        u = rng.random(T) ** a
        r = pit_uniformity_test(u)
        exact = scipy.stats.kstest(u, "uniform", method="exact")
        assert float(r.statistic) == pytest.approx(exact.statistic, abs=1e-6)
        # Stephens' formula is accurate to about 0.01 in the p-value (allowed 0.015)
        assert abs(float(r.p_value) - exact.pvalue) < 0.015


@pytest.mark.parametrize("n", [100, 1000])
def test_pit_pvalues_uniform_under_calibration(n):
    u = jax.random.uniform(jax.random.key(4), (1000, n))
    pv = np.asarray(jax.vmap(lambda v: pit_uniformity_test(v).p_value)(u))
    assert ref.ks_distance_uniform(pv) < ref.ks_critical_1pct(1000)


def test_pit_power():
    # PIT values of an over-dispersed forecaster (hump-shaped): u = Beta(2, 2) draws
    u = jax.random.beta(jax.random.key(5), 2.0, 2.0, (200, 2000))
    pv = np.asarray(jax.vmap(lambda v: pit_uniformity_test(v).p_value)(u))
    assert np.mean(pv < 0.05) >= 0.9


def test_conformance():
    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(p, y):
        return ks_test(p, y), kuiper_test(p, y)

    rng = np.random.default_rng(6)
    for _ in range(3):
        p = rng.random(30)
        run(p, (rng.random(30) < p).astype(np.int32))


def test_degenerate_and_bad_inputs():
    # forecasts 0 and 1 only: no randomness under the null; a miss is impossible under it
    assert float(ks_test(np.array([0.0, 1.0]), np.array([1, 1])).p_value) == 0
    assert float(ks_test(np.array([0.0, 1.0]), np.array([0, 1])).p_value) == 1
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        kuiper_test(np.array([0.2, -0.1]), np.array([0, 1]))
    with pytest.raises(ValueError):
        pit_uniformity_test(np.array([0.2, 1.5]))


def test_docstring_examples():
    assert doctest.testmod(module, raise_on_error=True).attempted > 0
