"""Kuleshov–Ermon baseline: the per-cell swap-regret forecaster (stationary distribution, parity,
internal-regret guarantee) and its composition with Partitioned."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conformance import check_forecaster
from reference.recalibration import ke_cell_run, swap_distribution

import jcalib
from jcalib.forecasters import AbstractPartitioned, KuleshovErmon, Partitioned, SwapRegretCalibrated, UniformCells
from jcalib.forecasters.kuleshov_ermon import swap_stationary
from jcalib.natures import Bernoulli, RecalibrationAdversary, Replay, TwoLevelModel


def test_stationary_distribution_matches_linear_solve(x64):
    rng = np.random.default_rng(0)
    solve = jax.jit(jax.vmap(lambda R: swap_stationary(R, 0.7)))
    for n in (2, 4, 8):
        Rs = rng.normal(0, 5, (10, n, n))
        for R in Rs:
            np.fill_diagonal(R, 0)
        got = np.asarray(solve(jnp.asarray(Rs)))
        for p, R in zip(got, Rs):
            np.testing.assert_allclose(p, swap_distribution(R, 0.7), atol=1e-9)


def test_cell_parity_with_numpy_reference(x64):
    f = SwapRegretCalibrated(n_bins=4, learning_rate=0.3)
    traj = jcalib.core.play(f, Bernoulli(0.3), 200, key=jax.random.key(1), record=jcalib.recorders.History(mixtures=True))
    ref = ke_cell_run(np.asarray(traj.y), 4, 0.3)
    np.testing.assert_allclose(np.asarray(traj.public.probs), ref, atol=1e-8)


def test_partitioned_parity_with_per_cell_reference(x64):
    """The composed forecaster equals one reference cell per model cell, each fed its own rounds."""
    rng = np.random.default_rng(2)
    q = rng.uniform(0, 1, 300)
    y = (rng.uniform(0, 1, 300) < q**2).astype(np.int32)
    f = KuleshovErmon(3, 0.3)
    traj = jcalib.core.play(f, Replay(y, x=q), 300, key=jax.random.key(3), record=jcalib.recorders.History(mixtures=True))
    cells = np.minimum((q * 3).astype(int), 2)
    got = np.asarray(traj.public.probs)
    for c in range(3):
        rows = np.flatnonzero(cells == c)
        np.testing.assert_allclose(got[rows], ke_cell_run(y[rows], 3, 0.3), atol=1e-8)


def test_internal_regret_guarantee_against_adversary():
    """EWA over the M = N(N+1) swap experts: max_ij (-R_ij) <= ln M / eta + eta T / 8 in every cell."""
    T, N = 2000, 5
    eta = math.sqrt(8 * math.log(N * (N + 1)) / T)
    f = SwapRegretCalibrated(n_bins=N, learning_rate=eta)

    def run(nature, key):
        fs, ns = f.init(key), nature.init(key)

        def body(c, k):
            fs, ns = c
            kx, kp, ky, ku = jax.random.split(k, 4)
            x = nature.context(ns, kx)
            fc = f.predict(fs, x, kp)
            y = nature.outcome(ns, x, fc.public, ky)
            return (f.update(fs, x, fc, y), nature.update(ns, x, fc, y, ku)), None

        (fs, _), _ = jax.lax.scan(body, (fs, ns), jax.random.split(key, T))
        return fs.regret

    for alpha in (1.0, 0.0):
        R = np.asarray(jax.jit(run)(RecalibrationAdversary(N, alpha=alpha), jax.random.key(4)))
        bound = math.log(N * (N + 1)) / eta + eta * T / 8
        assert (-R).max() <= bound
        assert np.abs(R).max() > 1.0  # the adversary makes the regrets move


def test_conformance():
    f = KuleshovErmon.for_horizon(1000, 4)
    # a class with the for_horizon convention: per-cell like Partitioned, not a subclass of it
    assert isinstance(f, AbstractPartitioned) and not isinstance(f, Partitioned)
    assert f.n_cells == 4 and KuleshovErmon.for_horizon(1000).n_cells == 10
    check_forecaster((f, KuleshovErmon(4, 0.5)), TwoLevelModel())


def test_bad_input():
    with pytest.raises(ValueError, match="n_cells"):
        KuleshovErmon(0, 0.1)
    with pytest.raises(ValueError, match="learning_rate"):
        SwapRegretCalibrated(n_bins=3, learning_rate=-1.0)


@pytest.mark.slow
def test_cell_forecaster_conformance():
    """The per-cell forecaster on its own (CI covers it inside KuleshovErmon above)."""
    check_forecaster((SwapRegretCalibrated(3, 0.2), SwapRegretCalibrated(3, 0.5)), Bernoulli(0.4))


def test_plays_as_partitioned_swap_regret():
    """KuleshovErmon is Partitioned(SwapRegretCalibrated(N, eta), N, UniformCells(N)), round by round."""
    f = KuleshovErmon(4, 0.3)
    g = Partitioned(SwapRegretCalibrated(4, 0.3), 4, UniformCells(4))
    a = jcalib.core.play(f, TwoLevelModel(), 300, key=jax.random.key(2))
    b = jcalib.core.play(g, TwoLevelModel(), 300, key=jax.random.key(2))
    np.testing.assert_array_equal(np.asarray(a.forecast), np.asarray(b.forecast))


def test_sizes_are_bounded_before_anything_is_allocated():
    import numpy as np
    import pytest

    from jcalib.forecasters import KuleshovErmon, SwapRegretCalibrated

    with pytest.raises(ValueError, match=r"n_bins=1000000000000 exceeds 4096: .*O\(n_bins\^3\)"):
        SwapRegretCalibrated(n_bins=10**12, learning_rate=0.1)
    with pytest.raises(ValueError, match=r"n_cells=1000000000000 exceeds 4096"):
        KuleshovErmon(n_cells=10**12, learning_rate=0.1)
    f = KuleshovErmon(np.int64(3), np.float32(0.1), n_squarings=np.int32(8))
    assert (f.n_cells, f.inner.n_squarings) == (3, 8)
    with pytest.raises(ValueError, match="n_squarings=100 exceeds"):
        SwapRegretCalibrated(3, 0.1, n_squarings=100)
