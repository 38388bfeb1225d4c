"""Kuleshov et al.'s isotonic recalibration: offline and online maps against scikit-learn's
IsotonicRegression refit at every step, projection onto bins, and its calibration effect."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jcalib.metrics import quantile_calibration_error
from jcalib.recalibration.isotonic import (
    IsotonicRecalibrator,
    isotonic_apply,
    isotonic_fit,
    online_isotonic,
    online_isotonic_probs,
)
from reference import regression as ref


def _pits(seed, T):
    rng = np.random.default_rng(seed)
    u = rng.beta(2.0, 0.8, size=T)
    u[rng.integers(0, T, 6)] = 0.0  # ties (outcomes at the range's low end)
    u[rng.integers(0, T, 3)] = 1.0
    u[rng.integers(0, T, 3)] = 0.5
    return u


@pytest.mark.parametrize("seed", [0, 1])
def test_offline_matches_sklearn(x64, seed):
    u = _pits(seed, 80)
    q = np.concatenate([np.linspace(0, 1, 41), u[:10], [1e-9, 1 - 1e-9]])
    got = isotonic_apply(isotonic_fit(u), q)
    np.testing.assert_allclose(np.asarray(got), ref.isotonic_recalibrated_cdf(u, q), atol=1e-12)


def test_online_matches_sklearn_refit_every_step(x64):
    T, K = 60, 9
    u = _pits(2, T)
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


def test_float32_and_bad_input():
    r = IsotonicRecalibrator()
    with pytest.raises(ValueError, match="not fitted"):
        r.transform(jnp.array([0.5]))
    r.fit(jnp.array([0.1, 0.2, 0.9], jnp.float32))
    assert r.transform(jnp.array([0.5], jnp.float32)).dtype == jnp.float32
    with pytest.raises(ValueError, match="NaN"):
        isotonic_fit(np.array([0.1, np.nan]))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        online_isotonic(np.full((2, 3), 0.5), np.array([0.1, 1.2]))
    with pytest.raises(ValueError, match="cdf_values"):
        online_isotonic(np.full((3, 3), 0.5), np.array([0.1, 0.2]))
    with pytest.raises(ValueError, match="y"):
        online_isotonic_probs(np.full((2, 2), 0.5), np.array([0.1, np.nan]), (0.0, 0.5, 1.0))
