"""The sunspot loader: length, values, lag alignment (no look-ahead), bad input."""

import numpy as np
import pytest

from jcalib.datasets import lag_features, sunspots

pytest.importorskip("pmdarima", reason="the optional extra 'data' (pmdarima) is not installed")


def test_shapes_and_known_values():
    d = sunspots()
    assert d.series.shape == (2820,) and d.y.shape == (2796,) and d.x.shape == (2796, 24)
    # first and last months of the classic R data set (Jan 1749, Dec 1983)
    assert d.series[:3].tolist() == [58.0, 62.6, 70.0]
    assert d.series[-3:].tolist() == [55.8, 33.3, 33.4]
    assert d.series.max() == 253.8 and d.series.min() == 0.0
    assert d.low == 0.0 and d.high > d.series.max()


def test_lag_alignment_and_no_lookahead():
    d = sunspots(n_lags=24)
    t = np.arange(24, 2820)
    np.testing.assert_array_equal(d.y, d.series[t])
    for k in range(24):
        np.testing.assert_array_equal(d.x[:, k], d.series[t - 1 - k])
    # the outcome never appears among its own features: replace each y_t by a value that occurs
    # nowhere else and rebuild; row t's features must not change and must not contain it
    s = d.series.copy()
    for t0 in (24, 500, 2819):
        s2 = s.copy()
        s2[t0] = -1e9
        y2, x2 = lag_features(s2, 24)
        row = t0 - 24
        assert y2[row] == -1e9
        assert not np.any(x2[row] == -1e9)
        np.testing.assert_array_equal(x2[row], d.x[row])
        # only later rows see the changed value, at lag t - t0
        rows_seen = np.nonzero(np.any(x2 == -1e9, axis=1))[0] + 24
        assert np.all(rows_seen > t0) and len(rows_seen) == min(24, 2819 - t0)


def test_bad_input():
    with pytest.raises(ValueError, match="NaN"):
        lag_features([1.0, np.nan, 2.0, 3.0], 2)
    with pytest.raises(ValueError, match="too short"):
        lag_features(np.ones(24), 24)
    with pytest.raises(ValueError, match="n_lags"):
        sunspots(n_lags=0)


def test_missing_extra_names_it(monkeypatch):
    import importlib.util

    from jcalib.datasets import lagged

    real = importlib.util.find_spec
    monkeypatch.setattr(lagged.importlib.util, "find_spec", lambda name, *a: None if name == "pmdarima" else real(name, *a))
    with pytest.raises(ModuleNotFoundError, match=r"jcalib\[data\]"):
        sunspots()
