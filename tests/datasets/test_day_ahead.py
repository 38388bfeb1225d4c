"""Day-ahead experts: valid distributions in (day, horizon) order, no look-ahead past the end of
the previous day, the per-horizon residual scale, both strategies, bad input."""

import jax
import numpy as np
import pytest

from jcalib.datasets import LaggedSeries, lag_features, run_day_ahead_expert

pytest.importorskip("river", reason="the optional extra 'river' is not installed")


def _toy(n_days=30, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(24 * n_days)
    s = np.clip(50 + 30 * np.sin(2 * np.pi * t / 24) + np.cumsum(rng.normal(0, 2, t.shape)) * 0.3, 0, 100)
    y, x = lag_features(s, 24)
    return LaggedSeries(y=y, x=x, series=s, low=0.0, high=100.0, name="toy", unit="")


@pytest.mark.parametrize("name,strategy", [("hat", "shared"), ("hat", "per_horizon"), ("marginal", "shared")])
def test_forecasts_are_valid_and_in_day_horizon_order(name, strategy):
    d = _toy()
    f = run_day_ahead_expert(name, d, days=5, strategy=strategy, n_bins=20, progress=False, key=jax.random.key(0))
    assert f.probs.shape == (120, 20) and f.y.shape == (120,) and f.edges.shape == (21,)
    assert np.all(f.probs > 0)
    np.testing.assert_allclose(f.probs.sum(-1), 1.0, atol=1e-12)
    # row d * 24 + h - 1 is hour h of window day d: the last 5 days of the series, in order
    np.testing.assert_allclose(f.y, d.series[-120:] / 100.0)
    assert np.all(f.scale > 0)


def test_forecasts_use_only_the_previous_days():
    d = _toy(seed=1)
    base = run_day_ahead_expert("hat", d, days=6, n_bins=10, progress=False, key=jax.random.key(0))
    # change one hour of window day 2: days 0-2 unchanged (day 2's forecasts were issued at the
    # end of day 1), day 3 on may change
    s = d.series.copy()
    i = len(s) - 6 * 24 + 2 * 24 + 13
    s[i] = 99.0 if s[i] < 50 else 1.0
    other = run_day_ahead_expert("hat", d._replace(series=s), days=6, n_bins=10, progress=False, key=jax.random.key(0))
    np.testing.assert_array_equal(other.probs[: 3 * 24], base.probs[: 3 * 24])
    assert not np.array_equal(other.probs[3 * 24 :], base.probs[3 * 24 :])


def test_marginal_scale_is_per_day_and_residual_scale_per_horizon():
    d = _toy()
    m = run_day_ahead_expert("marginal", d, days=3, warmup_days=4, n_bins=10, progress=False, key=jax.random.key(0))
    past = np.clip(d.series[-7 * 24 : -3 * 24] / 100, 0, 1)
    hist = np.bincount(np.minimum((past * 10).astype(int), 9), minlength=10) / past.size
    np.testing.assert_allclose(m.probs[0], (1 - 1e-3) * hist + 1e-3 / 10, atol=1e-12)
    np.testing.assert_array_equal(m.probs[0], m.probs[23])  # one histogram for the whole day
    h = run_day_ahead_expert("hat", d, days=3, n_bins=10, progress=False, key=jax.random.key(0))
    sc = h.scale.reshape(3, 24)
    assert len(np.unique(np.round(sc[0], 12))) > 1  # a residual scale per horizon


def test_bad_inputs_raise():
    d = _toy(n_days=10)
    with pytest.raises(ValueError, match="name must be one of"):
        run_day_ahead_expert("forest", d, days=2, key=jax.random.key(0))
    with pytest.raises(ValueError, match="strategy"):
        run_day_ahead_expert("hat", d, days=2, strategy="stacked", key=jax.random.key(0))
    with pytest.raises(ValueError, match="days"):
        run_day_ahead_expert("hat", d, days=10, key=jax.random.key(0))
    with pytest.raises(ValueError, match="days"):
        run_day_ahead_expert("hat", d, days=0, key=jax.random.key(0))
    with pytest.raises(ValueError, match="warmup_days"):
        run_day_ahead_expert("hat", d, days=5, warmup_days=5, key=jax.random.key(0))
    s = d.series.copy()
    s[3] = np.nan
    with pytest.raises(ValueError, match="finite"):
        run_day_ahead_expert("hat", d._replace(series=s), days=2, key=jax.random.key(0))


def test_docstring_example():
    import doctest

    from jcalib.datasets import day_ahead

    pytest.importorskip("pvlib", reason="the optional extra 'data' is not installed")
    assert doctest.testmod(day_ahead, raise_on_error=True).attempted > 0


def test_day_length_beyond_the_series_is_named():
    d = _toy()
    with pytest.raises(ValueError, match="day_length=1000000000000 leaves fewer than 2 whole days"):
        run_day_ahead_expert("marginal", d, days=2, day_length=10**12, key=jax.random.key(0), progress=False)
