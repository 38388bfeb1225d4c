"""PinballRegret (Marx et al. 2024, §5): regret against the expert's quantile decisions under
pinball losses — parity with a slow NumPy reference, semi-consistency (Condition 4), the bound B,
conformance (jit, vmap, one trace), the closed-form bin expectations, and Proposition A.5's
guarantee for a forecaster that drives the regret's positive part to zero."""

import doctest

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference.payoffs import pinball_regret_np, pinball_regret_uniform_np

from jcalib.distributions import PiecewiseConstant, uniform_edges
from jcalib.payoffs import DirectSum, ExpertContext, PinballRegret, QuantileCalibration, expect_under_bins, pinball
from jcalib.payoffs.base import AbstractExpectations

EDGES = uniform_edges(12)
LEVELS = (0.1, 0.3, 0.5, 0.7, 0.9)


def random_pc(key, edges=EDGES, sharp=2.0):
    return PiecewiseConstant.from_logits(sharp * jax.random.normal(key, (len(edges) - 1,)), edges)


def test_docstring_example():
    assert doctest.testmod(pinball, raise_on_error=True).attempted > 0


def test_matches_reference(x64):
    pay = PinballRegret(LEVELS)
    e = np.asarray(EDGES)
    for s in range(4):
        p, ex = random_pc(jax.random.key(s)), random_pc(jax.random.key(50 + s))
        for y in (0.0, 0.137, 0.5, 0.93, 1.0):
            want = pinball_regret_np(np.asarray(p.probs), np.asarray(ex.probs), e, y, LEVELS)
            # the reference finds quantiles by bisection to 2^-200: agreement to round-off
            np.testing.assert_allclose(np.asarray(pay(ExpertContext(ex), p, jnp.asarray(y))), want, atol=1e-12)
            np.testing.assert_allclose(np.asarray(pay(ex, p, jnp.asarray(y))), want, atol=1e-12)


def test_closed_form_expectations_match_reference(x64):
    pay = PinballRegret(LEVELS)
    e = np.asarray(EDGES)
    p, ex = random_pc(jax.random.key(1)), random_pc(jax.random.key(2))
    lo = jnp.asarray([0.0, 0.2, 0.31, 0.9, 0.4])
    hi = jnp.asarray([1.0, 0.25, 0.77, 0.9, 0.4001])  # a point interval too
    got = np.asarray(pay.expect_uniform(ExpertContext(ex), p, lo, hi))
    for k in range(lo.shape[0]):
        if float(hi[k]) == float(lo[k]):
            want = pinball_regret_np(np.asarray(p.probs), np.asarray(ex.probs), e, float(lo[k]), LEVELS)
        else:
            want = pinball_regret_uniform_np(np.asarray(p.probs), np.asarray(ex.probs), e, float(lo[k]), float(hi[k]), LEVELS)
        # 1e-7: the reference's midpoint rule over 4001 points on a payoff with two kinks per level
        np.testing.assert_allclose(got[k], want, atol=1e-7)
    # on the bins: the default route through expect_uniform, and 3-node Gauss–Legendre away from the kinks
    bins = np.asarray(pay.expect_bins(ExpertContext(ex), p, EDGES))
    np.testing.assert_allclose(bins, np.asarray(pay.expect_uniform(ExpertContext(ex), p, jnp.asarray(e[:-1]), jnp.asarray(e[1:]))))
    quad = np.asarray(AbstractExpectations.expect_bins(pay, ExpertContext(ex), p, EDGES))
    assert np.max(np.abs(bins - quad)) < 0.01  # quadrature is off only in the bins with a kink


def test_semi_consistent_and_zero_against_itself(x64):
    pay = PinballRegret(LEVELS)
    assert pay.semi.all() and pay.dim == 5
    for s in range(8):
        p, ex = random_pc(jax.random.key(s)), random_pc(jax.random.key(100 + s), sharp=4.0)
        # Condition 4: the forecast's own quantile is its Bayes action, E_{y~p} π <= 0, exactly
        mean = np.asarray(expect_under_bins(pay, ExpertContext(ex), p, p.probs, EDGES))
        assert np.all(mean <= 1e-14), mean
        assert np.any(mean < -1e-4)  # and strictly for an expert with other quantiles
        np.testing.assert_allclose(np.asarray(expect_under_bins(pay, ExpertContext(p), p, p.probs, EDGES)), 0, atol=1e-15)


def test_bound_holds_and_is_tight(x64):
    edges = uniform_edges(12, 0.0, 2.0)
    low, high = (PiecewiseConstant(jnp.eye(12)[k] + 1e-12, edges) for k in (0, 11))
    ys = jnp.linspace(0, 2, 81)
    for levels in (LEVELS, (0.9,), (0.2,)):
        pay = PinballRegret(levels, 0.0, 2.0)
        sq = max(float(jnp.max(jax.vmap(lambda y: jnp.sum(pay(e, p, y) ** 2))(ys))) for p, e in ((low, high), (high, low)))
        assert sq <= pay.bound() * (1 + 1e-9)
        if len(levels) == 1:
            # one level: attained up to the quantiles' distance from the ends (1/12 of the range
            # each), (10/12)^2 = 0.69 of B. Several levels on both sides of 1/2 take their
            # maxima at opposite ends of the range, so no single y attains B there
            assert sq >= 0.65 * pay.bound()


def test_conformance_jit_vmap_one_trace():
    pay = PinballRegret(LEVELS)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def batch(logits_p, logits_e, ys):
        def one(lp, le, y):
            return pay(ExpertContext(PiecewiseConstant.from_logits(le, EDGES)), PiecewiseConstant.from_logits(lp, EDGES), y)

        return jax.vmap(one)(logits_p, logits_e, ys)

    chex.clear_trace_counter()
    for s in range(3):
        k1, k2, k3 = jax.random.split(jax.random.key(s), 3)
        lp, le = jax.random.normal(k1, (7, 12)), jax.random.normal(k2, (7, 12))
        ys = jax.random.uniform(k3, (7,))
        out = batch(lp, le, ys)
        chex.assert_shape(out, (7, 5))
        chex.assert_type(out, jnp.float32)
        eager = jnp.stack([pay(PiecewiseConstant.from_logits(le[i], EDGES), PiecewiseConstant.from_logits(lp[i], EDGES), ys[i])
                           for i in range(7)])
        np.testing.assert_allclose(np.asarray(out), np.asarray(eager), rtol=1e-6, atol=1e-6)  # float32 jit vs eager
    # a direct sum with it, as ORCA uses it, keeps the shape
    ds = DirectSum((QuantileCalibration(9), pay))
    v = ds.expect_bins(ExpertContext(random_pc(jax.random.key(0))), random_pc(jax.random.key(1)), EDGES)
    assert v.shape == (12, 14)


def test_guarantee_positive_part_bounds_the_regret(x64):
    """Prop. A.5: the average regret against the expert's decisions is at most the norm of the
    positive part of the average payoff; a forecaster that plays the outcome's own distribution
    (here: y drawn from p_t) has E π_t <= 0 every round, so its average regret falls like 1/√T."""
    pay = PinballRegret(LEVELS)
    key = jax.random.key(0)
    T = 4000
    kp, ke, ky = jax.random.split(key, 3)
    lp = 2 * jax.random.normal(kp, (T, 12))
    le = 2 * jax.random.normal(ke, (T, 12))
    p = PiecewiseConstant.from_logits(lp, EDGES)
    u = jax.random.uniform(ky, (T,))
    y = p.quantile(u)  # y_t ~ p_t

    def one(lp_t, le_t, y_t):
        return pay(PiecewiseConstant.from_logits(le_t, EDGES), PiecewiseConstant.from_logits(lp_t, EDGES), y_t)

    vals = np.asarray(jax.vmap(one)(lp, le, y))
    mean = vals.mean(0)
    se = vals.std(0) / np.sqrt(T)
    # every level's average regret is below zero by more than 3 standard errors (the experts are
    # random forecasts, worse than the true distribution), and its positive part is at most 3 s.e.
    assert np.all(mean < -3 * se), (mean, se)
    assert np.linalg.norm(np.maximum(mean, 0)) <= np.sqrt(pay.bound() / T)


def test_bad_inputs_raise():
    assert PinballRegret(np.array([0.25, 0.75])).levels == (0.25, 0.75)
    for bad in ((), (0.0,), (1.0,), (0.5, 1.2), ("a",), "0.5", 0.5, (True,), (float("nan"),)):
        with pytest.raises(ValueError, match="levels"):
            PinballRegret(bad)
    with pytest.raises(ValueError, match="lo < hi"):
        PinballRegret((0.5,), 1.0, 0.0)
    with pytest.raises(ValueError, match="lo"):
        PinballRegret((0.5,), float("nan"), 1.0)
