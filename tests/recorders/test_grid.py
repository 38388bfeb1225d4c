"""The grid summary recorder: ``record="summary"`` checks its grid against the forecaster's;
the summary's ECE and certificate are the trajectory's."""

import jax
import numpy as np
import pytest

import jcalib
from jcalib.forecasters import AlmostOneStepAhead, Constant, FosterRandomized
from jcalib.metrics import ece
from jcalib.natures import Bernoulli, Contrarian, Markov, Switch
from jcalib.recorders import summary_from_trajectory


def test_summary_grid_must_hold_the_forecasters_grid():
    f = AlmostOneStepAhead(10)
    # 7 bins cannot hold the forecasts j/10: it used to run and count them off-grid
    with pytest.raises(ValueError, match="n_bins=7 does not match AlmostOneStepAhead's forecast grid of 10 bins"):
        jcalib.core.play(f, Bernoulli(0.3), 20, key=jax.random.key(0), record="summary", n_bins=7)
    s = jcalib.core.play(f, Bernoulli(0.3), 20, key=jax.random.key(0), record="summary", n_bins=20)
    assert int(s.off_grid) == 0 and int(s.counts.sum()) == 20
    assert int(jcalib.core.play(f, Bernoulli(0.3), 20, key=jax.random.key(0), record="summary").counts.sum()) == 20
    # a forecaster without a declared grid takes the grid it is given
    s = jcalib.core.play(Constant(0.5), Bernoulli(0.3), 20, key=jax.random.key(0), record="summary", n_bins=4)
    assert int(s.counts[2]) == 20


@pytest.mark.parametrize("f", [AlmostOneStepAhead(12), FosterRandomized(8)], ids=lambda f: type(f).__name__)
def test_summary_ece_and_certificate_are_the_trajectorys(f):
    """``GridSummary.ece()`` is the ECE of the recorded forecasts; ``certificate()`` is
    Σ|p − p̃| + ECE(p̃) for AOSA (Arunachaleswaran et al. 2024, the triangle inequality of
    Theorem 1) and NaN for a forecaster without look-ahead values; both keep a sweep's batch axes."""
    natures = Switch.all_of([Markov(0.1, 0.2), Contrarian()])
    kw = dict(key=jax.random.key(3), n_seeds=2, progress=False)
    s = jcalib.core.sweep(f, natures, 150, record="summary", **kw)
    traj = jcalib.core.sweep(f, natures, 150, **kw)
    assert s.ece().shape == (2, 2)
    for i in range(2):
        for j in range(2):
            p, y = traj.forecast[i, j], traj.y[i, j]
            np.testing.assert_allclose(float(s.ece()[i, j]), float(ece(p, y)), rtol=1e-5)
            one = summary_from_trajectory(jax.tree_util.tree_map(lambda a: a[i, j] if a is not None else None, traj),
                                          f.value_grid)
            np.testing.assert_allclose(float(one.ece()), float(s.ece()[i, j]), rtol=1e-6)
            if traj.info is None:
                assert np.isnan(float(s.certificate()[i, j]))
            else:
                cert = np.abs(np.asarray(p) - np.asarray(traj.info[i, j])).sum() + float(ece(traj.info[i, j], y))
                np.testing.assert_allclose(float(s.certificate()[i, j]), cert, rtol=1e-5)


def test_register_shorthand_refuses_built_ins_and_bad_names():
    from jcalib.recorders import History, register_shorthand

    for name in ("full", "summary"):
        with pytest.raises(ValueError, match="built-in shorthand"):
            register_shorthand(name, lambda forecaster, n_bins: History())
    for name in (3, "", None):
        with pytest.raises(ValueError, match="name must be a non-empty string"):
            register_shorthand(name, lambda forecaster, n_bins: History())
    with pytest.raises(ValueError, match="factory must be callable"):
        register_shorthand("mine", None)
    register_shorthand("test-mine", lambda forecaster, n_bins: History())
    out = jcalib.core.play(Constant(0.5), Bernoulli(0.5), 4, key=jax.random.key(0), record="full")
    assert out.y.shape == (4,)  # "full" still means the history


def test_grid_sizes_are_bounded_and_numpy_integers_accepted():
    from jcalib.recorders import GridCounts, RecalibrationCounts, forecast_grid

    for cls in (GridCounts, RecalibrationCounts):
        with pytest.raises(ValueError, match="n_bins=1000000000000 exceeds 4194304.*would need"):
            cls(10**12)
        assert cls(np.int64(4)).n_bins == 4 and type(cls(np.int64(4)).n_bins) is int
    with pytest.raises(ValueError, match="forecaster must be an AbstractForecaster"):
        forecast_grid("x")
