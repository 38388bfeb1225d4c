"""The wind-power loader: length, range, zero hours, lag alignment, bad input."""

import numpy as np
import pytest

from jcalib.datasets import wind_power

pytest.importorskip("pvlib", reason="the optional extra 'data' (pvlib) is not installed")
pytest.importorskip("windpowerlib", reason="the optional extra 'data' (windpowerlib) is not installed")


def test_shapes_range_and_zero_hours():
    d = wind_power()
    assert d.series.shape == (8760,) and d.x.shape == (8736, 24) and d.y.shape == (8736,)
    assert d.low == 0.0 and d.high == pytest.approx(4.7)
    assert np.all(d.series >= 0) and np.all(d.series <= d.high)
    zero = float(np.mean(d.series == 0))
    assert 0.005 < zero < 0.03  # the documented ~1.4% zero hours of the two-site sum
    assert 0.5 < d.series.mean() < 2.0


def test_lag_alignment():
    d = wind_power(n_lags=5)
    t = np.arange(5, 8760)
    np.testing.assert_array_equal(d.y, d.series[t])
    for k in range(5):
        np.testing.assert_array_equal(d.x[:, k], d.series[t - 1 - k])


def test_bad_input():
    with pytest.raises(ValueError, match="turbine"):
        wind_power(turbine="no-such-turbine")
    with pytest.raises(ValueError, match="hub_height"):
        wind_power(hub_height=-1.0)
