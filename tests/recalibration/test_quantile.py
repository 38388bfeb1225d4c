"""Kuleshov et al.'s quantile recalibration (jcalib.recalibration.quantile): the offline map
against scikit-learn's IsotonicRegression, jit and vmap of the fit and the fitted map, bad input."""

import doctest

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jcalib.recalibration import AbstractRecalibrator, FittedQuantileRecalibration, QuantileRecalibration
from jcalib.recalibration import quantile as quantile_module
from reference import regression as ref


@pytest.mark.parametrize("seed", [0, 1])
def test_offline_matches_sklearn(x64, seed):
    u = ref.tied_pits(seed, 80)
    q = np.concatenate([np.linspace(0, 1, 41), u[:10], [1e-9, 1 - 1e-9]])
    got = QuantileRecalibration().fit(u)(q)
    np.testing.assert_allclose(np.asarray(got), ref.isotonic_recalibrated_cdf(u, q), atol=1e-12)


def test_fit_and_map_jit_and_vmap(x64):
    U = np.stack([ref.tied_pits(s, 40) for s in range(3)])
    q = jnp.linspace(0.0, 1.0, 11)
    fitted = jax.jit(jax.vmap(QuantileRecalibration().fit))(U)
    assert isinstance(fitted, FittedQuantileRecalibration) and fitted.pit_values.shape == (3, 40)
    got = jax.jit(jax.vmap(lambda f: f(q)))(fitted)
    for i in range(3):
        np.testing.assert_allclose(np.asarray(got[i]), ref.isotonic_recalibrated_cdf(U[i], np.asarray(q)), atol=1e-12)


def test_not_a_classifier_recalibrator():
    assert not isinstance(QuantileRecalibration(), AbstractRecalibrator)


def test_float32_and_bad_input():
    fitted = QuantileRecalibration().fit(jnp.array([0.1, 0.2, 0.9], jnp.float32))
    assert fitted(jnp.array([0.5], jnp.float32)).dtype == jnp.float32
    with pytest.raises(ValueError, match="NaN"):
        QuantileRecalibration().fit(np.array([0.1, np.nan]))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        QuantileRecalibration().fit(np.array([0.1, 1.2]))
    with pytest.raises(ValueError, match="pit_values must be 1-D"):
        QuantileRecalibration().fit(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="pit_values is empty"):
        QuantileRecalibration().fit(np.zeros(0))
    with pytest.raises(ValueError, match="cdf_values"):
        fitted(np.array([-0.5]))


def test_docstring_examples():
    assert doctest.testmod(quantile_module, raise_on_error=True).attempted > 0
