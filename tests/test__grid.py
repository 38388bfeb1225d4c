"""The grid {0, 1/m, ..., 1}: one grid-index rule for metrics, recorders and payoffs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jcalib import _grid
from jcalib._grid import GRID_TOLERANCE, grid_index, grid_points, off_grid


def _reference_index(p, m):
    """Nearest grid index in exact (float64) arithmetic, clipped to [0, m]."""
    return np.clip(np.round(np.asarray(p, np.float64) * m), 0, m).astype(np.int64)


@pytest.mark.parametrize("m", [1, 7, 10, 49, 1000, 100_003])
def test_grid_index_matches_reference_and_inverts_grid_points(m):
    rng = np.random.default_rng(m)
    p = np.concatenate([rng.uniform(-0.2, 1.2, 500), [0.0, 1.0, 0.5 / m, 1 - 0.5 / m]]).astype(np.float32)
    got = np.asarray(grid_index(p, m))
    want = _reference_index(p, m)
    # float32 inputs: a point within float32 round-off of a half-step may round either way
    near_half = np.abs(np.abs(p.astype(np.float64) * m - np.floor(p.astype(np.float64) * m)) - 0.5) < 1e-6 * max(m, 1)
    np.testing.assert_array_equal(got[~near_half], want[~near_half])
    assert got.dtype == np.int32 and got.min() >= 0 and got.max() <= m
    # every grid point is on the grid and maps back to its index
    pts = grid_points(m)
    np.testing.assert_array_equal(np.asarray(grid_index(pts, m)), np.arange(m + 1))
    if m <= 10_000:  # float32 p has relative error 6e-8: m·p misses its index by up to 6e-8·m
        assert not bool(jnp.any(off_grid(pts, m)))


def test_off_grid_tolerance_is_a_thousandth_of_a_step():
    m = 10
    assert GRID_TOLERANCE == 1e-3
    assert not bool(off_grid(jnp.float32(0.3 + 0.5e-3 / m), m))
    assert bool(off_grid(jnp.float32(0.3 + 2e-3 / m), m))
    assert not bool(off_grid(jnp.float32(1.0), m)) and bool(off_grid(jnp.float32(1.2), m))


def test_grid_index_works_under_jit_and_x64():
    p = jnp.asarray([0.0, 0.26, 0.74, 1.0])
    np.testing.assert_array_equal(jax.jit(grid_index, static_argnums=1)(p, 4), [0, 1, 3, 4])
    with jax.enable_x64(True):
        assert grid_index(jnp.asarray(0.26, jnp.float64), 4).dtype == jnp.int32


def test_one_rule_for_metrics_recorders_and_payoffs():
    """Metrics, recorders and payoffs read the grid index through this one function."""
    import jcalib.metrics.binary
    import jcalib.metrics.online
    import jcalib.payoffs.binary
    import jcalib.recorders.buckets
    import jcalib.recorders.grid

    for mod in (jcalib.metrics.binary, jcalib.metrics.online, jcalib.payoffs.binary, jcalib.recorders.buckets,
                jcalib.recorders.grid):
        assert mod.grid_index is _grid.grid_index, mod.__name__
