"""Partitioned: each cell's rounds see exactly the inner forecaster run on that cell alone."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jcalib
from jcalib.forecasters import AlmostOneStepAhead, Partitioned, RunningFrequency, UniformCells
from jcalib.natures import DistortedModel, Replay

KEY = jax.random.key(0)


def test_each_cell_plays_the_inner_forecaster_on_its_own_rounds():
    rng = np.random.default_rng(0)
    T, n = 300, 3
    q = rng.random(T)
    y = rng.integers(0, 2, T)
    inner = AlmostOneStepAhead(n_bins=6)
    traj = jcalib.core.play(Partitioned(inner, n, UniformCells(n)), Replay(y, q), T, key=KEY)
    cells = np.minimum((q * n).astype(int), n - 1)
    for c in range(n):
        sel = cells == c
        alone = jcalib.core.play(inner, Replay(y[sel]), int(sel.sum()), key=KEY)  # AOSA ignores keys
        np.testing.assert_array_equal(np.asarray(traj.forecast)[sel], np.asarray(alone.forecast))
        np.testing.assert_array_equal(np.asarray(traj.info)[sel], np.asarray(alone.info))


def test_per_cell_running_frequency_recovers_the_truth():
    """A running frequency per cell of q learns the calibrated map of a distorted model."""
    nat = DistortedModel(3.0, 0.0)
    f = Partitioned(RunningFrequency(), 10, UniformCells(10))
    traj = jcalib.core.play(f, nat, 20_000, key=KEY)
    x, p, y = (np.asarray(a)[-5000:] for a in (traj.x, traj.forecast, traj.y))
    # per cell the forecast is the cell's frequency of ones so far: calibrated within cells
    for c in range(10):
        sel = np.minimum((x * 10).astype(int), 9) == c
        if sel.sum() > 200:
            assert abs(p[sel].mean() - y[sel].mean()) < 4 * np.sqrt(0.25 / sel.sum()) + 0.02  # 0.02: finite-sample lag


def test_uniform_cells_edges():
    cells = UniformCells(4)
    np.testing.assert_array_equal(jax.vmap(cells)(jnp.array([0.0, 0.2499, 0.25, 0.99, 1.0])), [0, 0, 1, 3, 3])


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Partitioned(RunningFrequency(), 0, UniformCells(2)), "n_cells"),
        (lambda: Partitioned(RunningFrequency(), 2, 3), "callable"),
        (lambda: Partitioned("inner", 2, UniformCells(2)), "AbstractForecaster"),
        (lambda: UniformCells(0), "n_cells"),
    ],
)
def test_bad_settings_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_out_of_range_cells_and_missing_contexts_are_refused():
    # cell_of returned 7 of 3 cells: it used to be clamped to cell 2 silently
    f = Partitioned(RunningFrequency(), 3, lambda x: jnp.asarray(7, jnp.int32))
    state = f.init(jax.random.key(0))
    with pytest.raises(ValueError, match=r"outside \[0, 3\): got 7"):
        f.predict(state, 0.5, jax.random.key(1))
    nature = Replay(jnp.array([0, 1, 1]), jnp.array([0.2, 0.5, 0.9]))
    with pytest.raises(Exception, match=r"outside \[0, 3\)"):
        jax.block_until_ready(jcalib.core.play(f, nature, 3, key=jax.random.key(0)).y)
    # a nature with no context: refused when play traces the round
    g = Partitioned(RunningFrequency(), 3, UniformCells(3))
    with pytest.raises(ValueError, match="has no context"):
        jcalib.core.play(g, jcalib.natures.Bernoulli(0.5), 3, key=jax.random.key(0))
    with pytest.raises(ValueError, match="integer scalar"):
        Partitioned(RunningFrequency(), 3, lambda x: x).predict(state, 0.5, jax.random.key(1))
    assert Partitioned(RunningFrequency(), np.int64(3), UniformCells(np.int64(3))).n_cells == 3


def test_uniform_cells_refuse_contexts_outside_the_unit_interval():
    f = Partitioned(RunningFrequency(), 2, UniformCells(2))
    for x in (1.5, -0.5, float("nan")):
        with pytest.raises(ValueError, match=r"context x must lie in \[0, 1\]"):
            UniformCells(2)(x)
    for x in (1.5, -0.5):  # (Replay itself refuses NaN contexts)
        with pytest.raises(Exception, match=r"context x must lie in \[0, 1\]"):
            jcalib.core.play(f, Replay(jnp.array([0, 1]), jnp.array([0.2, x])), 2, key=jax.random.key(0))
    assert int(UniformCells(2)(1.0)) == 1  # x = 1 is in the last cell


def test_cells_are_bounded_by_the_memory_of_their_states():
    with pytest.raises(ValueError, match="n_cells=1000000000 is too large: 1000000000 copies of the inner state"):
        Partitioned(AlmostOneStepAhead(10), 10**9, UniformCells(3))
    with pytest.raises(ValueError, match="n_cells=1000000000000 is too large"):
        UniformCells(10**12)
    assert Partitioned(RunningFrequency(), np.int64(3), UniformCells(np.int32(3))).n_cells == 3
