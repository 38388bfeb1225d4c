"""Conformance suite: every forecaster and every nature jits, plays by scan, vmaps over keys and
over stacked hyperparameters (``sweep``), does not retrace for new keys, keeps its state's
structure and dtypes, and runs under both x64 settings."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jcalib
from jcalib.core import Forecast, Mixture
from jcalib.forecasters import (
    AlmostOneStepAhead,
    Constant,
    DefensiveForecaster,
    FosterRandomized,
    GuptaRamdas,
    RunningFrequency,
)
from jcalib.natures import (
    Bernoulli,
    Contrarian,
    Drifting,
    Markov,
    MaxCalibrationError,
    Periodic,
    RandomMixture,
    RegimeSwitch,
    Replay,
    Switch,
)

T = 16
KEY = jax.random.key(42)

# Pairs of one class; where the class has array-valued (non-static) settings the two differ in
# them, so a sweep over the pair really vmaps over hyperparameters.
FORECASTERS = {
    "aosa": (AlmostOneStepAhead(n_bins=8), AlmostOneStepAhead(n_bins=8)),
    "aosa_high": (AlmostOneStepAhead(n_bins=5, tie="high"), AlmostOneStepAhead(n_bins=5, tie="high")),
    "foster": (FosterRandomized(n_bins=6), FosterRandomized(n_bins=6)),
    "defensive": (DefensiveForecaster(n_grid=16, bandwidth=0.1), DefensiveForecaster(n_grid=16, bandwidth=0.25)),
    "gupta_ramdas": (GuptaRamdas(n_bins=8), GuptaRamdas(n_bins=8)),
    "constant": (Constant(0.3), Constant(0.8)),
    "running_frequency": (RunningFrequency(1.0, 2.0), RunningFrequency(0.0, 0.5)),
}

_rng = np.random.default_rng(0)
NATURES = {
    "bernoulli": (Bernoulli(0.3), Bernoulli(0.9)),
    "drifting": (Drifting(0.1, 0.9, 10.0), Drifting(0.9, 0.2, 5.0)),
    "periodic": (Periodic(0.5, 0.3, 8.0), Periodic(0.4, 0.1, 3.0)),
    "markov": (Markov(0.1, 0.2), Markov(0.9, 0.7)),
    "regime_switch": (RegimeSwitch((0.1, 0.9), 0.1), RegimeSwitch((0.5, 0.6), 0.9)),
    "replay": (Replay(_rng.integers(0, 2, 11)), Replay(_rng.integers(0, 2, 11))),
    "contrarian": (Contrarian(), Contrarian()),
    "max_error": (MaxCalibrationError(n_bins=8), MaxCalibrationError(n_bins=8)),
    "random_mixture": (RandomMixture(n_bins=8), RandomMixture(0.2, 0.3, 0.5, 0.9, n_bins=8)),
    "switch": tuple(Switch.all_of((Markov(0.1, 0.2), Contrarian()))),
}


def structure_and_dtypes(tree):
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, [(jnp.shape(x), jnp.result_type(x)) for x in leaves]


def check_pair(f_pair, n_pair, sweep_forecasters: bool):
    """One compiled sweep over the pair and 3 seeds, one compiled play; they must agree."""
    seeds = jax.random.split(KEY, 3)
    if sweep_forecasters:
        traj = jcalib.sweep(list(f_pair), n_pair[0], T, KEY, n_seeds=3)
        assert traj.y.shape == (2, 1, 3, T)
        swept = jax.tree_util.tree_map(lambda a: a[1, 0, 2], traj)
        f, n = f_pair[1], n_pair[0]
    else:
        traj = jcalib.sweep(f_pair[0], list(n_pair), T, KEY, n_seeds=3)
        assert traj.y.shape == (2, 3, T)
        swept = jax.tree_util.tree_map(lambda a: a[1, 2], traj)
        f, n = f_pair[0], n_pair[1]

    # jit around play, no retracing for new keys (the counter is keyed by the lambda's code,
    # shared by every parametrisation, hence the reset)
    chex.clear_trace_counter()
    play = jax.jit(chex.assert_max_traces(lambda k: jcalib.play(f, n, T, k), n=1))
    other = play(seeds[1])
    single = play(seeds[2])
    for a, b in zip(jax.tree_util.tree_leaves(single), jax.tree_util.tree_leaves(swept)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

    # outcomes and forecasts have the contract's types
    assert single.y.dtype == jnp.int32 and single.y.shape == (T,)
    assert set(np.unique(np.asarray(traj.y)).tolist()) <= {0, 1}
    fc = np.asarray(single.forecast)
    assert single.forecast.dtype == jnp.result_type(float) and fc.shape == (T,)
    assert np.all((fc >= 0) & (fc <= 1))
    # a second key gives a run of the same shapes (and, for random players, other numbers)
    assert structure_and_dtypes(other) == structure_and_dtypes(single)


@pytest.mark.parametrize("name", FORECASTERS)
def test_forecaster_conformance(name):
    check_pair(FORECASTERS[name], NATURES["bernoulli"], sweep_forecasters=True)


@pytest.mark.parametrize("name", NATURES)
def test_nature_conformance(name):
    check_pair(FORECASTERS["aosa"], NATURES[name], sweep_forecasters=False)


def one_round(f, n, key):
    kf, kn, kx, kp, ky = jax.random.split(key, 5)
    fs, ns = f.init(kf), n.init(kn)
    x = n.context(ns, kx)
    fc = f.predict(fs, x, kp)
    y = n.outcome(ns, x, fc.public, ky)
    info = f.info(fs, x, fc, y)
    return fs, ns, fc, y, info, f.update(fs, x, fc, y), n.update(ns, x, fc, y)


@pytest.mark.parametrize("use_x64", [False, True], ids=["x32", "x64"])
@pytest.mark.parametrize("name", FORECASTERS)
def test_forecaster_state_keeps_structure_and_dtypes(name, use_x64):
    f = FORECASTERS[name][0]
    with jax.enable_x64(use_x64):
        fs, _, fc, y, info, fs1, _ = jax.jit(lambda k: one_round(f, Bernoulli(0.5), k))(KEY)
        assert structure_and_dtypes(fs1) == structure_and_dtypes(fs)
        assert isinstance(fc, Forecast)
        assert jnp.result_type(fc.value) == jnp.result_type(float) and jnp.shape(fc.value) == ()
        if isinstance(fc.public, Mixture):
            np.testing.assert_allclose(float(jnp.sum(fc.public.probs)), 1.0, rtol=1e-6)
            assert bool(jnp.any(fc.public.support == fc.value))
        else:
            assert float(fc.public) == float(fc.value)
        assert info is None or (jnp.shape(info) == () and jnp.result_type(info) == jnp.result_type(float))
        assert y.dtype == jnp.int32


@pytest.mark.parametrize("use_x64", [False, True], ids=["x32", "x64"])
@pytest.mark.parametrize("name", NATURES)
def test_nature_state_keeps_structure_and_dtypes(name, use_x64):
    n = NATURES[name][0]
    with jax.enable_x64(use_x64):
        for f in (AlmostOneStepAhead(n_bins=4), FosterRandomized(n_bins=4)):  # point and Mixture
            _, ns, _, y, _, _, ns1 = jax.jit(lambda k: one_round(f, n, k))(KEY)
            assert structure_and_dtypes(ns1) == structure_and_dtypes(ns)
            assert y.dtype == jnp.int32 and y.shape == () and int(y) in (0, 1)
