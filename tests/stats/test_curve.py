"""calibration_curve and smooth_calibration_curve: binned frequencies and Wilson /
Clopper–Pearson intervals against NumPy and scipy, Wilson coverage in sparse bins, the smooth
curve and density against relplot's own smoother and KDE, the bootstrap band, conformance."""

import doctest

import jax
import numpy as np
import pytest
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
    c = calibration_curve(p, y, 8, interval=interval, level=0.9)
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
    c = calibration_curve(np.array([0.05, 0.95]), np.array([0, 1]), 4)
    assert np.isnan(np.asarray(c.frequency)[1:3]).all() and np.asarray(c.weight).tolist() == [1, 0, 0, 1]
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.ones(3), 200)
    y = rng.integers(0, 3, 200)
    a = calibration_curve(P, y, 5)
    b = calibration_curve(P.max(axis=1), (P.argmax(axis=1) == y).astype(int), 5)
    np.testing.assert_allclose(np.asarray(a.frequency), np.asarray(b.frequency), rtol=1e-12)


def test_wilson_covers_in_sparse_bins():
    # 2000 calibrated data sets of 60 forecasts in 10 bins (about 6 per bin): the Wilson
    # interval at 90% covers the bin's true frequency (its mean forecast, calibrated data)
    # at about the nominal rate; coverage is pooled over bins
    def one(k):
        kp, ky = jax.random.split(k)
        p = jax.random.uniform(kp, (60,))
        y = (jax.random.uniform(ky, (60,)) < p).astype(np.int32)
        c = calibration_curve(p, y, 10, level=0.9)
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


def test_bad_inputs():
    p, y = _data(0, 10)
    with pytest.raises(ValueError, match="interval"):
        calibration_curve(p, y, interval="agresti")
    with pytest.raises(ValueError, match="n_bins"):
        calibration_curve(p, y, 0)
    with pytest.raises(ValueError, match="bandwidth"):
        smooth_calibration_curve(p, y, bandwidth=1e-4)
    with pytest.raises(ValueError, match="level"):
        smooth_calibration_curve(p, y, level=2)


def test_docstring_examples():
    assert doctest.testmod(module, raise_on_error=True).attempted > 0
