"""Padded grid modules (jcalib/_padded.py): tables sized for a bound, the grid size traced.

Parity: a padded module plays exactly the numbers of the original (same keys, every array
equal, no tolerance). Conformance: it jits, vmaps over keys, and two grid sizes under one bound
share one trace.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jcalib import forecasters as F
from jcalib import natures as N
from jcalib._padded import is_padded, padded, table_bins
from jcalib.core import play, sweep
from jcalib.recorders import GridCounts

FORECASTERS = {
    "AOSA": lambda m: F.AlmostOneStepAhead(n_bins=m),
    "AOSA (tie high)": lambda m: F.AlmostOneStepAhead(n_bins=m, tie="high"),
    "Foster": lambda m: F.FosterRandomized(n_bins=m),
    "Gupta-Ramdas": lambda m: F.GuptaRamdas(n_bins=m),
}


def _natures(m, T, key, pad_to=None):
    """The binary suite with its grid natures on the grid m (padded to pad_to)."""
    out = list(N.binary_suite(T, m, key=key).values())
    if pad_to is not None:
        out = [padded(n, pad_to) if isinstance(n, (N.MaxCalibrationError, N.RandomMixture)) else n for n in out]
    return N.Switch.all_of(out)


def _equal(a, b):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))  # exact: same numbers, no tolerance


@pytest.mark.parametrize("name", list(FORECASTERS))
@pytest.mark.parametrize("m", [7, 12])
def test_padded_players_play_the_same_numbers(name, m):
    """Against every nature of the suite (the grid natures padded too), the full history and the
    grid summary (cut back to m + 1 points) equal the unpadded run's."""
    T, key = 150, jax.random.key(3)
    f, fp = FORECASTERS[name](m), padded(FORECASTERS[name](m), 20)
    assert is_padded(fp) and table_bins(fp) == 20 and int(fp.n_bins) == m
    _equal(sweep(f, _natures(m, T, key), T, key=key, n_seeds=3),
           sweep(fp, _natures(m, T, key, pad_to=20), T, key=key, n_seeds=3))
    g = f.value_grid
    plain = sweep(f, _natures(m, T, key), T, key=key, n_seeds=3, record="summary")
    pad = sweep(fp, _natures(m, T, key, pad_to=20), T, key=key, n_seeds=3,
                record=padded(GridCounts(g), FORECASTERS[name](20).value_grid))
    cut = [np.asarray(a)[..., : g + 1] if np.ndim(a) == 3 else a for a in pad]
    _equal(plain, type(plain)(*cut))
    # past the grid the padded counts stay 0
    assert not np.asarray(pad.counts)[..., g + 1:].any()


def test_padded_programs_serve_every_grid_size():
    """Two grid sizes under one bound: one trace of the jitted play (the grid size is an array)."""
    traces = []

    @jax.jit
    def run(f, n, key):
        traces.append(1)
        return play(f, n, 64, key=key, record="full").forecast

    key = jax.random.key(0)
    for m in (5, 9):
        f = padded(F.AlmostOneStepAhead(n_bins=m), 16)
        n = padded(N.MaxCalibrationError(n_bins=m), 16)
        got = run(f, n, key)
        want = play(F.AlmostOneStepAhead(n_bins=m), N.MaxCalibrationError(n_bins=m), 64, key=key).forecast
        np.testing.assert_array_equal(np.asarray(got), want)
    assert len(traces) == 1


def test_padded_modules_vmap_over_keys():
    f = padded(F.FosterRandomized(n_bins=4), 9)
    n = padded(N.RandomMixture(n_bins=4), 9)
    keys = jax.random.split(jax.random.key(1), 3)
    many = jax.vmap(lambda k: play(f, n, 40, key=k).forecast)(keys)
    for i, k in enumerate(keys):
        np.testing.assert_array_equal(np.asarray(many[i]), play(F.FosterRandomized(n_bins=4), N.RandomMixture(n_bins=4),
                                                                40, key=k).forecast)
    assert many.dtype == jnp.result_type(float)


def test_padded_refuses_a_grid_past_its_bound():
    with pytest.raises(ValueError, match="exceeds max_bins"):
        padded(F.AlmostOneStepAhead(n_bins=10), 9)
    with pytest.raises(ValueError, match="max_bins"):
        padded(F.AlmostOneStepAhead(n_bins=10), 0)
    # a padded module re-pads from its own grid size
    again = padded(padded(F.GuptaRamdas(n_bins=3), 5), 8)
    assert int(again.n_bins) == 3 and again.max_bins == 8 and type(again).__mro__[1] is F.GuptaRamdas
