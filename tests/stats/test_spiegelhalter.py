"""Spiegelhalter's z-test: parity with the NumPy formula, uniform p-values under calibration,
power against p^1.5, conformance and input errors."""

import doctest

import chex
import jax
import numpy as np
import pytest
from reference import stats as ref

from jcalib.stats import spiegelhalter as module
from jcalib.stats import spiegelhalter_test


def test_matches_reference(x64):
    rng = np.random.default_rng(0)
    p = rng.random(50)
    y = (rng.random(50) < p).astype(int)
    w = rng.random(50) + 0.5
    for weights in (None, w):
        r = spiegelhalter_test(p, y, sample_weight=weights)
        z, pv = ref.spiegelhalter(p, y, weights)
        np.testing.assert_allclose([float(r.statistic), float(r.p_value)], [z, pv], rtol=1e-10)


@pytest.mark.parametrize("n", [100, 1000])
def test_pvalues_uniform_under_calibration(replicate, n):
    pv = replicate(lambda k, p, y: spiegelhalter_test(p, y).p_value, n, 1000)
    assert ref.ks_distance_uniform(pv) < ref.ks_critical_1pct(1000)  # measured 0.029, 0.022


def test_power_against_p_to_the_1_5(replicate):
    pv = replicate(lambda k, p, y: spiegelhalter_test(p, y).p_value, 2000, 200, miscalibrated=True)
    assert np.mean(pv < 0.05) >= 0.9  # measured 1.0


def test_conformance():
    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(p, y):
        return spiegelhalter_test(p, y)

    rng = np.random.default_rng(1)
    for _ in range(3):
        p = rng.random(30)
        run(p, (rng.random(30) < p).astype(np.int32))
    out = jax.vmap(spiegelhalter_test)(rng.random((4, 30)), rng.integers(0, 2, (4, 30)))
    assert out.p_value.shape == (4,)


def test_degenerate_and_bad_inputs():
    r = spiegelhalter_test(np.full(4, 0.5), np.array([0, 1, 1, 1]))
    assert float(r.statistic) == 0 and float(r.p_value) == 1
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        spiegelhalter_test(np.array([0.2, 1.2]), np.array([0, 1]))
    with pytest.raises(ValueError, match="0 or 1"):
        spiegelhalter_test(np.array([0.2, 0.3]), np.array([0, 2]))


def test_docstring_examples():
    assert doctest.testmod(module, raise_on_error=True).attempted > 0
