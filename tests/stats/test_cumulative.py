"""KS and Kuiper calibration tests and the PIT uniformity test: statistics against an explicit
cumulative walk, the Brownian-motion p-value series against simulation, uniform p-values
under calibration (with Siegmund's correction, already at n = 100), power against p^1.5,
PIT p-values against scipy's exact KS test, top-label form, conformance, input errors.
Ties: the walk observed once per distinct forecast against an explicit loop, the same bits
in every row order, p-values under calibration with forecasts on a 10-point grid."""

import doctest

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from reference import cumulative as ref_cum
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
        assert float(ks_calibration_error(p, y, sample_weight=weights)) == pytest.approx(np.max(np.abs(s)), rel=1e-12)
        assert float(kuiper_calibration_error(p, y, sample_weight=weights)) == pytest.approx(s.max() - s.min(), rel=1e-12)
    assert float(ks_test(p, y).statistic) == float(ks_calibration_error(p, y))


def test_top_label_form(x64):
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.ones(4), 60)
    y = rng.integers(0, 4, 60)
    conf, hit = P.max(axis=1), (P.argmax(axis=1) == y).astype(int)
    assert float(ks_calibration_error(P, y)) == pytest.approx(float(ks_calibration_error(conf, hit)), rel=1e-12)
    assert float(kuiper_test(P, y).p_value) == pytest.approx(float(kuiper_test(conf, hit).p_value), rel=1e-12)


def test_tied_rows_issue_examples():
    # equal forecasts with their labels swapped are the same data; the row-by-row walk gave
    # 0.4000 against 0.2333 here, and 0.0667 against 0.1500 (p 0.955 against 0.567) on the
    # second data set
    p = np.array([0.3, 0.5, 0.5])
    for f in (ks_calibration_error, kuiper_calibration_error):
        a, b = float(f(p, np.array([1, 1, 0]))), float(f(p, np.array([1, 0, 1])))
        assert a == b == pytest.approx(0.7 / 3)
    p = np.array([0.8, 0.3, 0.5, 0.5, 0.7, 0.1])
    for test in (ks_test, kuiper_test):
        a, b = test(p, np.array([1, 0, 1, 0, 1, 0])), test(p, np.array([1, 0, 0, 1, 1, 0]))
        assert float(a.statistic) == float(b.statistic) and float(a.p_value) == float(b.p_value)
    assert float(a.statistic) == pytest.approx(0.5 / 6)  # Kuiper: S = 0, .1, .3, .2, .3, .3, .25


def test_tied_walk_matches_reference(x64):
    # forecasts on a coarse grid, weights with zeros: a group whose rows all weigh 0 is no
    # observation point, so it does not count in G
    rng = np.random.default_rng(7)
    for n, grid in ((12, 3), (60, 10), (200, 7)):
        p = rng.integers(0, grid + 1, n) / grid
        y = (rng.random(n) < p).astype(int)
        w = rng.random(n) * (rng.random(n) < 0.8)
        w[0] = 1.0
        for weights in (None, w):
            s, sigma, G = ref_cum.group_walk(p, y, weights)
            ks, kp = ks_test(p, y, sample_weight=weights), kuiper_test(p, y, sample_weight=weights)
            assert float(ks.statistic) == pytest.approx(np.max(np.abs(s)), rel=1e-12, abs=1e-15)
            assert float(kp.statistic) == pytest.approx(s.max() - s.min(), rel=1e-12, abs=1e-15)
            # the reference sums 200 series terms in Python, jcalib 100 in XLA
            assert float(ks.p_value) == pytest.approx(ref_cum.ks_pvalue(np.max(np.abs(s)), sigma, G), rel=1e-9)
            assert float(kp.p_value) == pytest.approx(ref_cum.kuiper_pvalue(s.max() - s.min(), sigma, G), rel=1e-9)


@pytest.mark.parametrize("top_label", [False, True], ids=["binary", "top-label"])
def test_same_bits_in_every_row_order(top_label):
    # the rows are sorted on (forecast, step, variance), so any order gives the same sums
    rng = np.random.default_rng(8)
    n = 300
    if top_label:
        rows = rng.dirichlet(np.ones(3), 12).astype(np.float32)
        probs, labels = rows[rng.integers(0, 12, n)], rng.integers(0, 3, n)
    else:
        probs, labels = (rng.integers(0, 11, n) / 10).astype(np.float32), rng.integers(0, 2, n)
    weights = rng.choice(np.array([0.0, 0.5, 1.0, 2.0], np.float32), n)
    for w in (None, weights):
        base = [ks_test(probs, labels, sample_weight=w), kuiper_test(probs, labels, sample_weight=w)]
        for _ in range(5):
            perm = rng.permutation(n)
            wp = None if w is None else w[perm]
            got = [ks_test(probs[perm], labels[perm], sample_weight=wp), kuiper_test(probs[perm], labels[perm], sample_weight=wp)]
            for r, g in zip(base, got):
                assert float(g.statistic) == float(r.statistic) and float(g.p_value) == float(r.p_value)


def test_constant_forecast_is_exact():
    # one group (G = 1): both statistics are |S_n|, standard normal under the null in the
    # Gaussian limit, and the p-value is 2 Q(|S_n| / sigma) exactly
    p, y = np.full(100, 0.3), np.zeros(100, int)
    y[:40] = 1
    z = 0.1 / np.sqrt(0.3 * 0.7 / 100)
    for test in (ks_test, kuiper_test):
        r = test(p, y)
        assert float(r.statistic) == pytest.approx(0.1, rel=1e-5)
        assert float(r.p_value) == pytest.approx(2 * scipy.stats.norm.sf(z), rel=1e-4)  # float32


def _replicate_on_grid(test, n, reps, batch=50):
    """p-values of ``test`` on calibrated data with forecasts on {0.05, 0.15, ..., 0.95}."""

    def one(k):
        kp, ky = jax.random.split(k)
        p = (jax.random.randint(kp, (n,), 0, 10).astype(jnp.float32) + 0.5) / 10
        return test(p, (jax.random.uniform(ky, (n,)) < p).astype(jnp.int32)).p_value

    keys = jax.random.split(jax.random.key(9), reps).reshape(-1, batch)
    return np.asarray(jax.lax.map(jax.vmap(one), keys)).reshape(-1)


@pytest.mark.parametrize("n", [100, 1000])
@pytest.mark.parametrize("test", [ks_test, kuiper_test], ids=["ks", "kuiper"])
def test_pvalues_under_calibration_with_ties(n, test):
    # G = 10 observation points. Siegmund's correction is first order in 1/sqrt(G); for a
    # Gaussian walk of 10 equal steps it gives sizes 0.054 (KS) and 0.060 (Kuiper) at 0.05,
    # 0.107 and 0.117 at 0.10 (200 000 simulated walks), and the grid's unequal steps add
    # about as much again: allowed alpha + 0.4 alpha + 3 Monte-Carlo sd of 1000 replications.
    # Measured here: at 0.01 / 0.05 / 0.10, KS 0.013 0.053 0.105 (n = 100), 0.007 0.046 0.106
    # (n = 1000); Kuiper 0.015 0.069 0.121, 0.008 0.054 0.120 (the row-by-row walk gave KS
    # 0.013 0.049 0.093, 0.007 0.044 0.097; Kuiper 0.015 0.058 0.102, 0.007 0.047 0.082).
    pv = _replicate_on_grid(test, n, 1000)
    for alpha in (0.01, 0.05, 0.10):
        assert np.mean(pv <= alpha) <= 1.4 * alpha + 3 * np.sqrt(alpha * (1 - alpha) / 1000)


def test_vmap_with_ties_matches_one_by_one():
    rng = np.random.default_rng(10)
    p = (rng.integers(0, 6, (4, 50)) / 5).astype(np.float32)
    y = rng.integers(0, 2, (4, 50)).astype(np.int32)
    batched = jax.vmap(ks_test)(jnp.asarray(p), jnp.asarray(y))
    for i in range(4):
        one = ks_test(p[i], y[i])
        assert float(batched.statistic[i]) == pytest.approx(float(one.statistic), rel=1e-6)
        assert float(batched.p_value[i]) == pytest.approx(float(one.p_value), rel=1e-5)


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
    # measured: KS 0.040 (n=100), 0.029 (n=1000); Kuiper 0.044, 0.045 (the same to 1e-5 in
    # every p-value as the row-by-row walk: no ties but the rare float32 collisions)
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
