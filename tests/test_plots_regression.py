"""Regression plots draw the median curve over runs with a band, and refuse bad PIT values."""

import numpy as np
import pytest

from jcalib import plots
from jcalib.plots_regression import pit_histogram_plot, quantile_reliability_curve


def test_curves_with_bands(tmp_path):
    rng = np.random.default_rng(0)
    u = rng.uniform(size=(4, 300))
    ax = quantile_reliability_curve(u, label="uniform")
    # the diagonal and the median curve; the band is a filled polygon
    assert len(ax.lines) == 2 and len(ax.collections) == 1
    mid = ax.lines[1].get_ydata()
    assert np.max(np.abs(mid - np.round(np.arange(1, 100) / 100, 2))) < 0.1
    ax = pit_histogram_plot(u[0], n_bins=5)
    assert len(ax.collections) == 0  # one run: no band
    assert np.allclose(np.mean(ax.lines[1].get_ydata()), 1.0, atol=0.1)
    plots.save(ax, tmp_path / "pit.png")
    assert (tmp_path / "pit.png").exists()


def test_bad_input():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        quantile_reliability_curve(np.array([0.2, 1.4]))
    with pytest.raises(ValueError, match="band"):
        pit_histogram_plot(np.array([0.2, 0.4]), band=(0.9, 0.1))
    with pytest.raises(ValueError, match="n_bins"):
        pit_histogram_plot(np.array([0.2]), n_bins=0)
