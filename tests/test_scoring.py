"""Scoring rules: propriety, the stated Lipschitz constants, closed forms and bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jcalib import scoring

GRID = np.linspace(0.0, 1.0, 20001)


@pytest.mark.parametrize("rule", [scoring.Brier(), scoring.Spherical(), scoring.LogScore(1e-3)])
def test_strictly_proper_on_a_grid(rule, x64):
    # the expected score under Bernoulli(q) is minimised at p = q (to the grid's resolution)
    for q in (0.1, 0.37, 0.5, 0.8):
        risk = np.asarray(rule.expected(jnp.asarray(GRID), jnp.full(GRID.shape, q)))
        assert abs(GRID[np.argmin(risk)] - q) <= 1e-4


@pytest.mark.parametrize("rule", [scoring.Brier(), scoring.Spherical(), scoring.LogScore(0.05)])
def test_lipschitz_constant_is_the_max_slope(rule, x64):
    for y in (0, 1):
        d = jax.vmap(jax.grad(lambda p: rule(p, y)))(jnp.asarray(GRID))
        # the stated constant is the supremum of |ds/dp|: attained to 1e-6 on a fine grid; the
        # clipped log score's supremum 1/c sits at the kink p = c, where the grid's nearest
        # smooth point gives 1/(c + 5e-5): 1e-3 relative
        rtol = 1e-3 if isinstance(rule, scoring.LogScore) else 1e-6
        np.testing.assert_allclose(np.max(np.abs(np.asarray(d))), rule.lipschitz, rtol=rtol)


def test_values_and_flags():
    assert float(scoring.Brier()(0.3, 1)) == pytest.approx(0.49)
    assert float(scoring.Spherical()(0.5, 0)) == pytest.approx(1 - 0.5 / np.sqrt(0.5))
    assert float(scoring.LogScore(1e-4)(0.0, 1)) == pytest.approx(-np.log(1e-4), rel=1e-6)
    assert scoring.Brier.lipschitz_bounded and not scoring.LogScore.lipschitz_bounded
    with pytest.raises(ValueError, match="clip"):
        scoring.LogScore(0.0)


def test_pinball_and_squared_error_are_consistent(x64):
    ys = np.random.default_rng(0).normal(size=4000)
    cands = np.linspace(-3, 3, 601)
    for a in (0.1, 0.5, 0.9):
        risk = jax.vmap(lambda c: jnp.mean(scoring.pinball(c, jnp.asarray(ys), a)))(jnp.asarray(cands))
        # the empirical risk is minimised at the empirical quantile (to the candidate spacing)
        assert abs(cands[int(jnp.argmin(risk))] - np.quantile(ys, a)) <= 0.011
    risk = jax.vmap(lambda c: jnp.mean(scoring.squared_error(c, jnp.asarray(ys))))(jnp.asarray(cands))
    assert abs(cands[int(jnp.argmin(risk))] - ys.mean()) <= 0.006


def test_crps_needs_a_distribution():
    with pytest.raises(ValueError, match="crps"):
        scoring.crps(0.5, 1.0)


def test_incomplete_scoring_rule_cannot_be_instantiated():
    from jcalib.scoring import AbstractScoringRule

    class NoLipschitz(AbstractScoringRule):
        def __call__(self, p, y):
            return (p - y) ** 2

    with pytest.raises(TypeError, match="abstract.*lipschitz"):
        NoLipschitz()


@pytest.mark.parametrize("rule", [scoring.Brier(), scoring.LogScore(), scoring.Spherical()])
@pytest.mark.parametrize("p, y, match", [(-0.5, 0, "p must lie"), (1.5, 1, "p must lie"), (float("nan"), 1, "NaN"), (0.3, 2, "y must be 0 or 1"), (0.3, 0.5, "y must be 0 or 1")])
def test_rules_refuse_bad_forecasts_and_outcomes(rule, p, y, match):
    # LogScore()(-0.5, 0) was -0.405 and Brier()(0.3, 2) was 2.89
    with pytest.raises(ValueError, match=match):
        rule(p, y)


def test_real_valued_scores_refuse_non_finite_inputs():
    with pytest.raises(ValueError, match="y contains NaN"):
        scoring.pinball(0.0, float("nan"), 0.9)
    with pytest.raises(ValueError, match="alpha must lie"):
        scoring.pinball(0.0, 1.0, 1.5)
    with pytest.raises(ValueError, match="pred"):
        scoring.squared_error(float("inf"), 1.0)
