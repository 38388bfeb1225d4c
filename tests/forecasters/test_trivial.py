"""Trivial baselines: the constant and running-frequency forecasters do what they say, reject bad
settings, and are not calibrated against a contrarian (the claim that makes them baselines)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jcalib
from jcalib.forecasters import Constant, RunningFrequency
from jcalib.natures import Contrarian, Replay
from reference.forecasters import ece

KEY = jax.random.key(0)


@pytest.mark.parametrize("p", [-0.1, 1.5, np.nan, "a"])
def test_constant_bad_p_raises(p):
    with pytest.raises(ValueError):
        Constant(p)


@pytest.mark.parametrize("kw", [dict(prior_ones=-1.0), dict(prior_count=0.0), dict(prior_ones=3.0, prior_count=2.0), dict(prior_ones=np.nan)])
def test_running_frequency_bad_priors_raise(kw):
    with pytest.raises(ValueError):
        RunningFrequency(**kw)


def test_constant_forecasts_p():
    traj = jcalib.core.play(Constant(0.25), Replay([1, 0, 1]), 3, key=KEY)
    np.testing.assert_array_equal(np.asarray(traj.forecast), np.full(3, 0.25, np.float32))


@pytest.mark.parametrize("a,b", [(1.0, 2.0), (0.0, 1.0), (0.5, 3.0)])
def test_running_frequency_matches_formula(x64, a, b):
    y = np.random.default_rng(0).integers(0, 2, 50)
    traj = jcalib.core.play(RunningFrequency(a, b), Replay(y), 50, key=KEY)
    ones_before = np.r_[0, np.cumsum(y)[:-1]]
    want = (ones_before + a) / (np.arange(50) + b)
    np.testing.assert_allclose(np.asarray(traj.forecast), want, rtol=1e-14)


def test_contrarian_defeats_the_constant():
    # y_t = 1 iff p_t < 1/2: the constant 1/2 sees y = 0 forever, ECE = T/2 exactly
    T = 200
    traj = jcalib.core.play(Constant(0.5), Contrarian(), T, key=KEY)
    assert int(traj.y.sum()) == 0
    assert ece(np.asarray(traj.forecast), np.asarray(traj.y)) == T / 2
    # the running frequency oscillates around 1/2 and stays badly calibrated
    traj = jcalib.core.play(RunningFrequency(), Contrarian(), T, key=KEY)
    assert ece(np.asarray(traj.forecast), np.asarray(traj.y)) > 0.4 * T


def test_for_horizon_defaults():
    assert Constant.for_horizon(10) == Constant()
    assert RunningFrequency.for_horizon(10) == RunningFrequency()
    assert float(jnp.asarray(Constant().value)) == 0.5
