"""River experts: valid forecast distributions, prequential order (no look-ahead), bad input."""

import jax
import numpy as np
import pytest

from jcalib.datasets import LaggedSeries, lag_features
from jcalib.datasets.experts import EXPERTS, gaussian_bin_probs, make_expert, run_expert

pytest.importorskip("river", reason="the optional extra 'river' is not installed")


def _toy(n=260, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n + 24)
    s = 50 + 40 * np.sin(2 * np.pi * t / 40) + rng.normal(0, 5, size=t.shape)
    s = np.clip(s, 0, 100)
    y, x = lag_features(s, 24)
    return LaggedSeries(y=y, x=x, series=s, low=0.0, high=100.0, name="toy", unit="")


@pytest.mark.parametrize("name", EXPERTS)
def test_expert_forecasts_are_valid_distributions(name):
    d = _toy()
    e = run_expert(name, d, horizon=60, n_bins=20, progress=False, key=jax.random.key(0))
    assert e.probs.shape == (60, 20) and e.edges.shape == (21,) and e.y.shape == (60,)
    assert np.all(e.probs > 0)
    np.testing.assert_allclose(e.probs.sum(axis=1), 1.0, atol=1e-12)
    assert np.all((e.y >= 0) & (e.y <= 1)) and np.all((e.point >= 0) & (e.point <= 1))
    assert np.all(e.scale > 0)
    np.testing.assert_allclose(e.y, d.y[-60:] / 100.0)


@pytest.mark.parametrize("name", ["hat", "marginal"])
def test_forecasts_do_not_see_their_outcome(name):
    # changing the outcome of forecast row j changes no forecast at rows <= j
    d = _toy(seed=1)
    base = run_expert(name, d, horizon=40, n_bins=10, progress=False, key=jax.random.key(0))
    s = d.series.copy()
    j_row = len(d.y) - 40 + 15  # forecast step 15
    s[j_row + 24] = 99.0 if s[j_row + 24] < 50 else 1.0
    y, x = lag_features(s, 24)
    other = run_expert(name, d._replace(y=y, x=x, series=s), horizon=40, n_bins=10, progress=False, key=jax.random.key(0))
    np.testing.assert_array_equal(other.probs[:16], base.probs[:16])
    assert not np.array_equal(other.probs[16:], base.probs[16:])


def test_marginal_is_histogram_of_past_outcomes():
    d = _toy()
    e = run_expert("marginal", d, horizon=10, warmup=30, n_bins=5, progress=False, key=jax.random.key(0))
    past = np.clip(d.y[-40:-10] / 100, 0, 1)
    hist = np.bincount(np.minimum((past * 5).astype(int), 4), minlength=5) / 30
    np.testing.assert_allclose(e.probs[0], (1 - 1e-3) * hist + 1e-3 / 5, atol=1e-12)


def test_gaussian_bins_mass_and_far_means():
    edges = np.linspace(0, 1, 11)
    p = gaussian_bin_probs(np.array([0.3, 5.0, -5.0]), np.array([0.1, 0.01, 0.01]), edges)
    np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-12)
    assert p[1].argmax() == 9 and p[2].argmax() == 0


def test_bad_input():
    d = _toy()
    with pytest.raises(ValueError, match="name must be one of"):
        run_expert("forest", d, key=jax.random.key(0))
    with pytest.raises(ValueError, match="name must be one of"):
        make_expert("forest")
    with pytest.raises(ValueError, match="horizon"):
        run_expert("marginal", d, horizon=10_000, key=jax.random.key(0))
    with pytest.raises(ValueError, match="warmup"):
        run_expert("marginal", d, horizon=100, warmup=1000, key=jax.random.key(0))
    bad = d._replace(x=np.where(np.arange(d.x.size).reshape(d.x.shape) == 7, np.nan, d.x))
    with pytest.raises(ValueError, match="NaN"):
        run_expert("marginal", bad, horizon=10, key=jax.random.key(0))


def test_sizes_are_bounded_and_numpy_integers_accepted():
    d = _toy()
    e = run_expert("marginal", d, horizon=np.int64(10), warmup=np.asarray(30), n_bins=np.asarray(5), progress=False,
                   key=jax.random.key(0))
    assert e.probs.shape[0] == 10
    with pytest.raises(ValueError, match="n_bins=1000000000000 exceeds 2\\*\\*24"):
        run_expert("marginal", d, horizon=10, n_bins=10**12, progress=False, key=jax.random.key(0))
