"""Plots draw from plain arrays and refuse mismatched ones."""

import numpy as np
import pytest

from jcalib import plots


def test_reliability_diagram_and_rate_plot(tmp_path):
    rng = np.random.default_rng(0)
    p = rng.random(200)
    y = (rng.random(200) < p).astype(int)
    ax = plots.reliability_diagram(p, y, n_bins=8, label="calibrated")
    assert ax.get_xlim() == (0.0, 1.0)
    # one line for the diagonal and one for the data
    assert len(ax.lines) == 2
    plots.save(ax, tmp_path / "rel.png")
    ax = plots.rate_plot([10, 100, 1000], {"a": [1, 3, 9]}, bands={"a": ([1, 2, 8], [2, 4, 10])},
                         bound=lambda T: 2 * np.sqrt(T) + 1)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    path = plots.save(ax, tmp_path / "sub" / "rate.png")
    assert (tmp_path / "sub" / "rate.png").exists() and path.endswith("rate.png")


def test_reliability_diagram_shape_mismatch():
    with pytest.raises(ValueError, match="one shape"):
        plots.reliability_diagram(np.zeros(3), np.zeros(4))
