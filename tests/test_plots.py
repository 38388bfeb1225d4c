"""Plots draw from plain arrays and refuse mismatched ones; reliability diagrams draw
unjoined binned markers with interval bars, the smooth curve with its band and the density,
and top-label plus class-wise panels; the real-outcome plots draw the median curve over runs
with a band and refuse bad PIT values."""

import jax
import numpy as np
import pytest

from jcalib import plots
from jcalib.plots import pit_histogram_plot, quantile_reliability_curve


def test_reliability_diagram_and_rate_plot(tmp_path):
    rng = np.random.default_rng(0)
    p = rng.random(200)
    y = (rng.random(200) < p).astype(int)
    ax = plots.reliability_diagram(p, y, n_bins=8, label="calibrated")
    assert ax.get_xlim() == (0.0, 1.0)
    # the diagonal is the only line: bins are markers with error bars, never joined
    assert len(ax.lines) == 1
    kinds = sorted(type(c).__name__ for c in ax.collections)
    assert kinds == ["LineCollection", "PathCollection"]  # error bars, markers
    (markers,) = [c for c in ax.collections if type(c).__name__ == "PathCollection"]
    assert markers.get_offsets().shape[0] == 8
    assert len(ax.patches) == 8  # the density of the forecasts, one bar per bin
    plots.save(ax, tmp_path / "rel.png")
    ax = plots.rate_plot([10, 100, 1000], {"a": [1, 3, 9]}, bands={"a": ([1, 2, 8], [2, 4, 10])},
                         bound=lambda T: 2 * np.sqrt(T) + 1)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    path = plots.save(ax, tmp_path / "sub" / "rate.png")
    assert (tmp_path / "sub" / "rate.png").exists() and path.endswith("rate.png")


def test_smooth_reliability_diagram_and_panels(tmp_path):
    rng = np.random.default_rng(1)
    p = rng.random(300)
    y = (rng.random(300) < p).astype(int)
    ax = plots.reliability_diagram(p, y, kind="both", key=jax.random.key(0), n_resamples=50, label="m")
    # diagonal and smooth curve; band and density are filled polygons
    assert len(ax.lines) == 2
    assert sum("Poly" in type(c).__name__ for c in ax.collections) == 2
    plots.save(ax, tmp_path / "smooth.png")
    P = rng.dirichlet(np.ones(3), 300)
    labels = rng.integers(0, 3, 300)
    axes = plots.multiclass_reliability_diagram(P, labels, n_bins=5, classes=[0, 2], class_names=["a", "b", "c"])
    assert [a.get_title() for a in axes] == ["top label", "class a", "class c"]
    assert axes[0].get_xlabel().startswith("confidence")
    plots.save(axes[0], tmp_path / "panels.png")
    with pytest.raises(ValueError, match="kind"):
        plots.reliability_diagram(p, y, kind="lines")
    with pytest.raises(ValueError, match="classes"):
        plots.multiclass_reliability_diagram(P, labels, classes=[3])


def test_corp_reliability_diagram(tmp_path):
    rng = np.random.default_rng(2)
    p = rng.random(300)
    y = (rng.random(300) < p**2).astype(int)
    ax = plots.reliability_diagram(p, y, kind="corp", key=jax.random.key(0), n_resamples=40, label="m")
    # diagonal and the PAV curve through every sorted forecast; the band is a filled polygon
    assert len(ax.lines) == 2
    x, fit = ax.lines[1].get_data()
    assert len(x) == 300 and np.all(np.diff(fit) >= 0)
    assert sum("Poly" in type(c).__name__ for c in ax.collections) == 1
    assert "MCB" in ax.texts[0].get_text()
    plots.save(ax, tmp_path / "corp.png")
    ax = plots.reliability_diagram(rng.dirichlet(np.ones(3), 100), rng.integers(0, 3, 100), kind="corp")
    assert ax.get_xlabel().startswith("confidence") and len(ax.collections) == 0  # no key: no band


def test_reliability_diagram_shape_mismatch():
    with pytest.raises(ValueError, match="one shape"):
        plots.reliability_diagram(np.zeros(3), np.zeros(4))


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


def test_bad_inputs_are_named_and_numpy_numbers_accepted():
    p, y = np.array([0.1, 0.6, 0.8]), np.array([0, 1, 1])
    for kwargs, match in (({"n_bins": 2.5}, "n_bins must be an integer"), ({"level": 1.5}, "level must be finite"),
                          ({"n_bins": 10**12}, "n_bins=1000000000000 exceeds"), ({"density": "yes"}, "density must be a bool")):
        with pytest.raises(ValueError, match=match):
            plots.reliability_diagram(p, y, **kwargs)
    with pytest.raises(ValueError, match="probs contains NaN"):
        plots.reliability_diagram(np.array([0.1, np.nan, 0.8]), y)
    with pytest.raises(ValueError, match="levels must be a non-empty 1-D array of levels in"):
        quantile_reliability_curve(np.array([0.2, 0.4]), levels=[0.5, 1.5])
    with pytest.raises(ValueError, match="T must be a non-empty 1-D array of positive horizons"):
        plots.rate_plot([0, 10], {"a": [1.0, 2.0]})
    with pytest.raises(ValueError, match=r"series\['a'\] must have one value per T"):
        plots.rate_plot([1, 10], {"a": [1.0]})
    with pytest.raises(ValueError, match="classes must be a sequence"):
        plots.multiclass_reliability_diagram(np.full((3, 2), 0.5), np.array([0, 1, 1]), classes=3)
    plots.reliability_diagram(p, y, n_bins=np.int64(4), level=np.float32(0.9))
    pit_histogram_plot(np.array([0.2, 0.4]), n_bins=np.int32(4))
    plt = pytest.importorskip("matplotlib.pyplot")
    plt.close("all")


def test_plots_declare_their_inputs():
    """Every plot states its inputs once (``declare``); a column of PIT values (S runs of one
    value each, a stray axis most likely), a short list of class names, something that is not
    an Axes and a path that is not one are refused by name."""
    from jcalib._validation import declared

    for fn in (plots.reliability_diagram, plots.multiclass_reliability_diagram, plots.rate_plot, plots.save,
               pit_histogram_plot, quantile_reliability_curve):
        assert declared(fn), fn.__name__
    u = np.linspace(0.05, 0.95, 10)
    with pytest.raises(ValueError, match=r"pit_values of shape \(10, 1\) would be 10 runs of one value each"):
        pit_histogram_plot(u[:, None])
    with pytest.raises(ValueError, match="pit_values"):
        quantile_reliability_curve(u[:, None])
    with pytest.raises(ValueError, match="class_names must name all 3 classes"):
        plots.multiclass_reliability_diagram(np.full((3, 3), 1 / 3), np.array([0, 1, 2]), class_names=["a"])
    with pytest.raises(ValueError, match="ax must be a matplotlib Axes"):
        pit_histogram_plot(u, ax="figure")
    ax = pit_histogram_plot(u, n_bins=np.int64(5))
    with pytest.raises(ValueError, match="path must be a str or os.PathLike"):
        plots.save(ax, 3)
    with pytest.raises(ValueError, match=r"bands\['a'\] must be a pair"):
        plots.rate_plot([1, 10], {"a": [1.0, 2.0]}, bands={"a": [1.0, 2.0, 3.0]})
