"""calibration_curve and smooth_calibration_curve: binned frequencies and Wilson /
Clopper–Pearson intervals against NumPy and scipy, Wilson coverage in sparse bins, the smooth
curve and density against relplot's own smoother and KDE, the bootstrap band, conformance."""

import doctest

import jax
import numpy as np
import pytest
from reference import equal_mass_curve as equal_mass
from reference import stats as ref

from jcalib.stats import calibration_curve, smooth_calibration_curve
from jcalib.stats import curve as module


def _data(seed, n):
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    return p, (rng.random(n) < p**1.3).astype(np.int32)


@pytest.mark.parametrize("interval", ["wilson", "clopper-pearson"])
def test_binned_curve_matches_reference(x64, interval):
    p, y = _data(0, 700)
    p[:3] = [0.0, 1.0, 0.5]
    c = calibration_curve(p, y, n_bins=8, interval=interval, level=0.9)
    idx = np.clip(np.floor(p * 8).astype(int), 0, 7)
    for b in range(8):
        m = idx == b
        assert float(c.weight[b]) == m.sum()
        assert float(c.forecast[b]) == pytest.approx(p[m].mean(), rel=1e-12)
        assert float(c.frequency[b]) == pytest.approx(y[m].mean(), rel=1e-12)
        fn = ref.wilson if interval == "wilson" else ref.clopper_pearson
        lo, hi = fn(y[m].sum(), m.sum(), 0.9)
        # Clopper-Pearson by a 60-step bisection: 2^-60 of [0, 1]
        np.testing.assert_allclose([float(c.low[b]), float(c.high[b])], [lo, hi], rtol=1e-9, atol=1e-12)


def test_empty_bins_and_top_label(x64):
    c = calibration_curve(np.array([0.05, 0.95]), np.array([0, 1]), n_bins=4)
    assert np.isnan(np.asarray(c.frequency)[1:3]).all() and np.asarray(c.weight).tolist() == [1, 0, 0, 1]
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.ones(3), 200)
    y = rng.integers(0, 3, 200)
    a = calibration_curve(P, y, n_bins=5)
    b = calibration_curve(P.max(axis=1), (P.argmax(axis=1) == y).astype(int), n_bins=5)
    np.testing.assert_allclose(np.asarray(a.frequency), np.asarray(b.frequency), rtol=1e-12)


def test_wilson_covers_in_sparse_bins():
    # 2000 calibrated data sets of 60 forecasts in 10 bins (about 6 per bin): the Wilson
    # interval at 90% covers the bin's true frequency (its mean forecast, calibrated data)
    # at about the nominal rate; coverage is pooled over bins
    def one(k):
        kp, ky = jax.random.split(k)
        p = jax.random.uniform(kp, (60,))
        y = (jax.random.uniform(ky, (60,)) < p).astype(np.int32)
        c = calibration_curve(p, y, n_bins=10, level=0.9)
        return (c.low <= c.forecast) & (c.forecast <= c.high), c.weight > 0

    hit, seen = (np.asarray(a) for a in jax.vmap(one)(jax.random.split(jax.random.key(0), 2000)))
    cov = hit[seen].mean()
    assert 0.87 < cov < 0.95, cov  # Wilson's coverage oscillates around the nominal 0.9


def test_smooth_curve_matches_relplot(x64):
    from relplot.estimators import KernelSmoother
    from relplot.kernels import ReflectedGaussianKernel

    p, y = _data(2, 2000)
    c = smooth_calibration_curve(p, y)
    sigma = float(c.bandwidth)
    t = np.linspace(0, 1, 200)
    mu = KernelSmoother(ReflectedGaussianKernel(sigma)).fit(p.reshape(-1, 1), y).predict(t.reshape(-1, 1))
    np.testing.assert_allclose(np.asarray(c.curve), mu, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.asarray(c.density), ReflectedGaussianKernel(sigma).kde(p, t), rtol=1e-9, atol=1e-12)


def test_smooth_band_brackets_the_curve():
    p, y = _data(3, 1500)
    c = smooth_calibration_curve(p, y, key=jax.random.key(0), n_resamples=100, bandwidth=0.05)
    lo, mu, hi = (np.asarray(a) for a in (c.low, c.curve, c.high))
    inner = slice(20, 180)  # away from the ends, where the curve is well determined
    assert np.all(lo[inner] <= mu[inner] + 1e-6) and np.all(mu[inner] <= hi[inner] + 1e-6)
    assert 0 < np.median(hi - lo) < 0.2
    assert float(c.bandwidth) == pytest.approx(0.05)


def _tied(seed, n):
    """Forecasts with heavy ties (a few distinct values, the ends included)."""
    rng = np.random.default_rng(seed)
    p = rng.choice([0.0, 0.1, 0.25, 0.5, 0.5, 0.9, 1.0], n) if seed % 2 else np.round(rng.random(n), 1)
    return p, (rng.random(n) < p).astype(np.int32)


def _sklearn_parity(p, y, n_bins, c):
    """Largest difference of the non-empty entries from scikit-learn's (prob_true, prob_pred)."""
    from sklearn.calibration import calibration_curve as sk_curve

    prob_true, prob_pred = sk_curve(y, p, n_bins=n_bins, strategy="quantile")
    keep = np.asarray(c.weight) > 0
    assert keep.sum() == prob_true.shape[0]  # the same bins are empty
    return max(np.max(np.abs(np.asarray(c.frequency)[keep] - prob_true)), np.max(np.abs(np.asarray(c.forecast)[keep] - prob_pred)))


def test_quantile_strategy_matches_sklearn(x64):
    """scikit-learn's equal-mass curve, on continuous forecasts, heavy ties and small samples
    (n = 1, 2, 3), with n not a multiple of K: the same bins, the same frequencies and means."""
    worst = 0.0
    # few distinct shapes (each compiles once)
    cases = [(_data(s, n), k) for s, (n, k) in enumerate([(301, 7), (5, 3)])]
    cases += [(_tied(s, n), k) for s, (n, k) in enumerate([(400, 10), (401, 10), (9, 4)])]
    cases += [((np.array([0.3]), np.array([1])), 3), ((np.array([0.3, 0.9, 0.3]), np.array([0, 1, 1])), 5),
              ((np.array([0.0, 0.0, 0.0, 1.0]), np.array([0, 0, 1, 1])), 2)]
    for (p, y), k in cases:
        worst = max(worst, _sklearn_parity(p, y, k, calibration_curve(p, y, n_bins=k, strategy="quantile")))
    # the same bins, so the same sums; only the order of the additions may differ
    assert worst <= 1e-15, worst


def test_quantile_strategy_weights_are_counts(x64):
    """Integer weights: scikit-learn's curve of the sample with each forecast repeated w times;
    real weights: the NumPy loop of the same rule."""
    p, y = _tied(3, 120)
    k = np.random.default_rng(0).integers(0, 4, size=p.shape[0])
    c = calibration_curve(p, y, n_bins=6, sample_weight=k.astype(float), strategy="quantile")
    assert _sklearn_parity(np.repeat(p, k), np.repeat(y, k), 6, c) <= 1e-15  # float rounding of the sums
    for p, y in (_data(4, 90), _tied(5, 90)):
        w = np.random.default_rng(1).uniform(0.0, 3.0, size=p.shape[0])
        c = calibration_curve(p, y, n_bins=7, sample_weight=w, strategy="quantile")
        fc, fr, wb = equal_mass.curve(p, y, 7, w)
        np.testing.assert_allclose(np.asarray(c.weight), wb, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(c.forecast), fc, rtol=1e-12)  # NaN where both are empty
        np.testing.assert_allclose(np.asarray(c.frequency), fr, rtol=1e-12)


def test_quantile_bins_are_not_the_metrics_weighted_ranks():
    """The documented difference from jcalib.metrics.quantile_bin_index (the binned metrics'
    equal-mass rule): 5 distinct forecasts in 3 bins."""
    from jcalib.metrics import quantile_bin_index

    p = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    c = calibration_curve(p, np.zeros(5, np.int32), n_bins=3, strategy="quantile")
    assert np.asarray(c.weight).tolist() == [2, 1, 2]  # scikit-learn: bins 0 0 1 2 2
    assert np.asarray(quantile_bin_index(p, 3, sample_weight=np.ones(5))).tolist() == [0, 0, 1, 1, 2]


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_curve_jit_vmap_no_retrace_and_permutation(strategy):
    import chex

    p, y = _tied(7, 64)
    P = np.stack([p, _data(8, 64)[0], np.roll(p, 5)]).astype(np.float32)
    Y = np.stack([y, _data(8, 64)[1], np.roll(y, 5)])
    W = np.random.default_rng(2).integers(0, 3, size=P.shape).astype(np.float32)
    chex.clear_trace_counter()

    @jax.jit
    @chex.assert_max_traces(n=1)
    def curves(P, Y, W):
        return jax.vmap(lambda a, b, c: calibration_curve(a, b, n_bins=5, sample_weight=c, strategy=strategy))(P, Y, W)

    out = curves(P, Y, W)
    curves(P * 1.0, Y, W + 0.0)  # new values, same shapes: no retrace
    for i in range(3):
        one = calibration_curve(P[i], Y[i], n_bins=5, sample_weight=W[i], strategy=strategy)
        np.testing.assert_array_equal(np.asarray(out.weight[i]), np.asarray(one.weight))
        # 1e-6: float32 sums, batched against one alone (reductions may reorder)
        np.testing.assert_allclose(np.asarray(out.frequency[i]), np.asarray(one.frequency), rtol=1e-6)
    # rows permuted (ties with unequal weights included): the same bins, the same curve
    perm = np.random.default_rng(3).permutation(64)
    a = calibration_curve(P[0], Y[0], n_bins=5, sample_weight=W[0], strategy=strategy)
    b = calibration_curve(P[0][perm], Y[0][perm], n_bins=5, sample_weight=W[0][perm], strategy=strategy)
    np.testing.assert_array_equal(np.asarray(a.weight), np.asarray(b.weight))
    np.testing.assert_allclose(np.asarray(a.forecast), np.asarray(b.forecast), rtol=1e-6)  # float32 sums reordered


def test_bad_inputs():
    p, y = _data(0, 10)
    with pytest.raises(ValueError, match="interval"):
        calibration_curve(p, y, interval="agresti")
    with pytest.raises(ValueError, match="strategy"):
        calibration_curve(p, y, strategy="equal")
    with pytest.raises(ValueError, match="sample_weight"):
        calibration_curve(p, y, sample_weight=-np.ones(10), strategy="quantile")
    with pytest.raises(ValueError, match="n_bins"):
        calibration_curve(p, y, n_bins=0)
    with pytest.raises(ValueError, match="bandwidth"):
        smooth_calibration_curve(p, y, bandwidth=1e-4)
    with pytest.raises(ValueError, match="level"):
        smooth_calibration_curve(p, y, level=2)
    # n_resamples is checked with or without a key (without one nothing is drawn)
    with pytest.raises(ValueError, match="n_resamples"):
        smooth_calibration_curve(p, y, n_resamples="4")
    with pytest.raises(TypeError, match="key must be a JAX PRNG key"):
        smooth_calibration_curve(p, y, key=0)


def test_docstring_examples():
    assert doctest.testmod(module, raise_on_error=True).attempted > 0


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_binned_curve_program_has_no_host_callback(strategy):
    """The binned curve's compiled program holds no in-graph check (its forecasts were checked at
    the boundary): a host callback would keep it out of the persistent compilation cache, and a
    warm ``jcalib demo`` would compile it again for its reliability figure."""
    p = np.linspace(0.01, 0.99, 50, dtype=np.float32)
    y = (p > 0.5).astype(np.float32)
    w = np.ones_like(p)
    jaxpr = jax.make_jaxpr(lambda p, y, w: module._binned(p, y, w, np.float32(0.9), 10, "wilson", strategy))(p, y, w)
    assert "callback" not in str(jaxpr)
    got = calibration_curve(p, y.astype(np.int32), n_bins=10, strategy=strategy)
    assert np.isfinite(np.asarray(got.forecast)[np.asarray(got.weight) > 0]).all()
