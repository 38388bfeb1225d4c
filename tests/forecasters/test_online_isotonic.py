"""The online isotonic baseline (jcalib.forecasters.online_isotonic): Kuleshov et al.'s map refit
at every step against scikit-learn's IsotonicRegression, projection onto bins, its calibration
effect, and the forecaster's conformance and equality with the vectorised baseline."""

import doctest
import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jcalib
from jcalib.forecasters import OnlineIsotonic, online_isotonic, online_isotonic_probs
from jcalib.metrics import quantile_calibration_error
from reference import regression as ref


def test_online_matches_sklearn_refit_every_step(x64):
    T, K = 60, 9
    u = ref.tied_pits(2, T)
    rng = np.random.default_rng(3)
    cdf = np.sort(rng.uniform(size=(T, K)), axis=1)
    cdf[:, 0], cdf[:, -1] = 0.0, 1.0
    got = np.asarray(online_isotonic(cdf, u))
    np.testing.assert_array_equal(got[0], cdf[0])
    for t in range(1, T):
        np.testing.assert_allclose(got[t], ref.isotonic_recalibrated_cdf(u[:t], cdf[t]), atol=1e-12)


def test_online_probs_are_valid_and_vmap(x64):
    from jcalib.distributions import uniform_edges

    T, n = 50, 10
    rng = np.random.default_rng(4)
    probs = rng.dirichlet(np.ones(n), size=(3, T))
    y = rng.uniform(size=(3, T))
    out = jax.vmap(lambda p, yy: online_isotonic_probs(p, yy, uniform_edges(n)))(jnp.asarray(probs), jnp.asarray(y))
    assert out.shape == (3, T, n)
    assert bool(jnp.all(out >= 0))
    np.testing.assert_allclose(np.asarray(out.sum(-1)), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(out[:, 0]), probs[:, 0], atol=1e-15)


def test_online_isotonic_recalibrates_a_biased_forecaster(x64):
    # outcomes ~ Beta(2, 5) forecast by the uniform: far from calibrated; the online isotonic
    # map learns the outcome CDF and its QCE falls towards the i.i.d. floor 16.665/T
    from jcalib.distributions import PiecewiseConstant, uniform_edges

    T, n = 500, 50
    y = jax.random.beta(jax.random.key(0), 2.0, 5.0, (T,), jnp.float64)
    probs = jnp.full((T, n), 1.0 / n, jnp.float64)
    edges = uniform_edges(n)
    before = quantile_calibration_error(PiecewiseConstant(probs, edges).cdf(y))
    after_p = online_isotonic_probs(probs, y, edges)
    after = quantile_calibration_error(jnp.clip(PiecewiseConstant(after_p, edges).cdf(y), 0, 1))
    assert float(before) > 2.0
    # measured 0.039 against the floor 16.665/500 = 0.033; the first rounds (few data) add the rest
    assert float(after) < 0.1


def test_bad_input():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        online_isotonic(np.full((2, 3), 0.5), np.array([0.1, 1.2]))
    with pytest.raises(ValueError, match="cdf_values"):
        online_isotonic(np.full((3, 3), 0.5), np.array([0.1, 0.2]))
    with pytest.raises(ValueError, match="y"):
        online_isotonic_probs(np.full((2, 2), 0.5), np.array([0.1, np.nan]), (0.0, 0.5, 1.0))


def _replay(T=16, n=8, seed=0):
    from jcalib.distributions import PiecewiseConstant, uniform_edges
    from jcalib.natures import Replay

    rng = np.random.default_rng(seed)
    probs = jnp.asarray(rng.dirichlet(np.ones(n) * 2, size=T), jnp.result_type(float))
    probs = probs / jnp.sum(probs, axis=1, keepdims=True)
    y = jnp.asarray(rng.beta(2.0, 5.0, size=T), jnp.result_type(float))
    return Replay(y, PiecewiseConstant(probs, uniform_edges(n)), outcomes="real"), probs, y, uniform_edges(n)


def test_online_isotonic_forecaster_conformance():
    from conformance import check_forecaster

    nature, _, _, edges = _replay()
    check_forecaster((OnlineIsotonic(edges, capacity=16), OnlineIsotonic(edges, capacity=16, prior_weight=2.0)), nature, "interval")


def test_online_isotonic_forecaster_equals_the_vectorised_baseline(x64):
    T = 40
    nature, probs, y, edges = _replay(T, 10, seed=3)
    traj = jcalib.core.play(OnlineIsotonic(edges, capacity=T), nature, T, key=jax.random.key(0))
    want = online_isotonic_probs(probs, y, edges)
    np.testing.assert_allclose(np.asarray(traj.forecast.probs), np.asarray(want), atol=1e-12)
    # a window shorter than T fits on the most recent rounds only: it differs
    short = jcalib.core.play(OnlineIsotonic(edges, capacity=5), nature, T, key=jax.random.key(0))
    assert not np.allclose(np.asarray(short.forecast.probs[-1]), np.asarray(want[-1]))
    with pytest.raises(ValueError, match="prior_weight"):
        OnlineIsotonic(edges, prior_weight=-1.0)


def test_docstring_examples():
    # the module by its path: the package attribute of that name is the function
    module = importlib.import_module("jcalib.forecasters.online_isotonic")
    assert doctest.testmod(module, raise_on_error=True).attempted > 0


def test_inputs_are_checked_plain_and_under_jit():
    p = jnp.full((3, 2), 0.5)
    with pytest.raises(ValueError, match=r"y must lie in \[0, 1\]"):
        online_isotonic_probs(p, jnp.array([0.9, 1.8, 0.2]), (0.0, 0.5, 1.0))
    with pytest.raises(ValueError, match="edges must have one more entry than probs has bins"):
        online_isotonic_probs(p, jnp.array([0.9, 0.8, 0.2]), (0.0, 0.25, 0.5, 1.0))
    with pytest.raises(Exception, match=r"y must be finite in \[0, 1\]"):
        jax.jit(lambda y: online_isotonic_probs(p, y, (0.0, 0.5, 1.0)))(jnp.array([0.9, jnp.inf, 0.2]))
    with pytest.raises(Exception, match=r"pit_values must be finite in \[0, 1\]"):
        jax.jit(online_isotonic)(jnp.full((3, 2), 0.5), jnp.array([0.1, 1.5, 0.2]))
    with pytest.raises(ValueError, match="cdf_values is empty"):
        online_isotonic(jnp.zeros((0, 2)), jnp.zeros(0))
