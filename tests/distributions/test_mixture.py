"""MixtureDistribution: Gaussian mixtures against scipy and quadrature, piecewise-constant mixtures
against their averaged density, quantiles by bisection, implicit gradients, sampling, the
core Mixture view, batching and bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from reference.distributions import (
    crps_by_quadrature_infinite,
    histogram,
    mixture_cdf,
    mixture_quantile,
    piecewise_crps_definition,
)

from jcalib.core import Mixture
from jcalib.distributions import Gaussian, MixtureDistribution, PiecewiseConstant, uniform_edges

LOC = np.array([-1.0, 0.3, 2.0])
SCALE = np.array([0.4, 1.1, 0.25])
W = np.array([0.3, 0.5, 0.2])


def _gmix():
    return MixtureDistribution(Gaussian(jnp.asarray(LOC), jnp.asarray(SCALE)), jnp.asarray(W))


def _ref_cdf():
    return mixture_cdf([scipy.stats.norm(m, s).cdf for m, s in zip(LOC, SCALE)], W)


def test_gaussian_mixture_matches_references(x64):
    m = _gmix()
    F = _ref_cdf()
    ys = np.array([-2.5, -1.0, 0.0, 0.7, 2.1, 4.0])
    np.testing.assert_allclose(m.cdf(jnp.asarray(ys)), [F(y) for y in ys], rtol=1e-12)
    pdf = sum(w * scipy.stats.norm(mu, s).pdf(ys) for w, mu, s in zip(W, LOC, SCALE))
    np.testing.assert_allclose(m.log_prob(jnp.asarray(ys)), np.log(pdf), rtol=1e-12)
    np.testing.assert_allclose(m.mean(), W @ LOC, rtol=1e-12)
    second = W @ (LOC**2 + SCALE**2)
    np.testing.assert_allclose(m.moment(2), second, rtol=1e-12)
    np.testing.assert_allclose(m.variance(), second - (W @ LOC) ** 2, rtol=1e-12)
    np.testing.assert_allclose(m.expect(lambda x: x**2), second, rtol=1e-12)
    for y in (-2.0, 0.25, 3.0):
        np.testing.assert_allclose(m.crps(y), crps_by_quadrature_infinite(F, y, 0.0, 1.0), rtol=1e-8)
    for a in (0.01, 0.3, 0.5, 0.9, 0.999):
        np.testing.assert_allclose(m.quantile(a), mixture_quantile(F, a, -10.0, 10.0), atol=1e-12)
    assert np.isneginf(float(m.quantile(0.0))) and np.isposinf(float(m.quantile(1.0)))
    assert np.isnan(float(m.quantile(1.2)))


def test_gaussian_mixture_quantile_float32_and_zero_weights():
    # a zero-weight component far away must not widen the bracket (64 steps would still converge,
    # but its quantile must not be the answer)
    g = Gaussian(jnp.asarray([0.0, 50.0]), jnp.asarray([1.0, 1.0]))
    m = MixtureDistribution(g, jnp.asarray([1.0, 0.0]))
    np.testing.assert_allclose(m.quantile(jnp.asarray([0.1, 0.5, 0.9])), scipy.stats.norm.ppf([0.1, 0.5, 0.9]), atol=2e-6)
    m = MixtureDistribution(Gaussian(jnp.asarray(LOC, jnp.float32), jnp.asarray(SCALE, jnp.float32)), jnp.asarray(W, jnp.float32))
    alphas = jnp.linspace(0.02, 0.98, 25)
    np.testing.assert_allclose(m.cdf(m.quantile(alphas)), alphas, atol=2e-6)  # float32 cdf round-off


def test_quantile_gradient_is_the_implicit_one(x64):
    def f(theta):
        g = Gaussian(theta[:3], jnp.exp(theta[3:6]))
        return MixtureDistribution(g, jax.nn.softmax(theta[6:])).quantile(0.37)

    theta = np.concatenate([LOC, np.log(SCALE), np.log(W)])
    grad = jax.grad(f)(jnp.asarray(theta))
    h = 1e-6
    fj = jax.jit(f)
    fd = [(fj(jnp.asarray(theta + h * e)) - fj(jnp.asarray(theta - h * e))) / (2 * h) for e in np.eye(9)]
    np.testing.assert_allclose(grad, fd, atol=1e-7)  # FD of a bisection output: its round-off/h
    # and with respect to the level: dQ/dα = 1/f(Q)
    m = _gmix()
    q = m.quantile(0.37)
    np.testing.assert_allclose(jax.grad(m.quantile)(0.37), 1 / m.prob(q), rtol=1e-9)


def test_gaussian_mixture_crps_gradient(x64):
    def f(theta):
        return MixtureDistribution(Gaussian(theta[:3], jnp.exp(theta[3:])), jnp.asarray(W)).crps(0.5)

    theta = np.concatenate([LOC, np.log(SCALE)])
    fj = jax.jit(f)
    h = 1e-6
    fd = [(fj(jnp.asarray(theta + h * e)) - fj(jnp.asarray(theta - h * e))) / (2 * h) for e in np.eye(6)]
    np.testing.assert_allclose(jax.grad(f)(jnp.asarray(theta)), fd, atol=1e-8)  # central FD, float64


def test_piecewise_mixture_reduces_to_the_averaged_density(x64):
    edges = uniform_edges(8, -1.0, 1.0)
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(8), size=3)
    probs[1, 2:5] = 0
    probs[1] /= probs[1].sum()
    comps = PiecewiseConstant(jnp.asarray(probs), edges)
    m = MixtureDistribution(comps, jnp.asarray(W))
    avg = W @ probs
    ys = np.array([-1.5, -0.9, -0.2, 0.13, 0.99, 1.0, 1.7])
    np.testing.assert_allclose(m.crps(jnp.asarray(ys)), [piecewise_crps_definition(avg, edges, y) for y in ys], rtol=1e-10)
    ref = histogram(avg, edges)
    np.testing.assert_allclose(m.cdf(jnp.asarray(ys)), ref.cdf(ys), atol=1e-14)
    inside = ys[(ys > -1) & (ys < 1)]
    np.testing.assert_allclose(m.log_prob(jnp.asarray(inside)), ref.logpdf(inside), rtol=1e-12)
    np.testing.assert_allclose(m.quantile(0.4), ref.ppf(0.4), atol=1e-12)
    np.testing.assert_allclose(m.moment(3), ref.moment(3), rtol=1e-12)
    np.testing.assert_allclose(m.variance(), ref.var(), rtol=1e-12)
    np.testing.assert_allclose(m.to_piecewise().probs, avg, atol=1e-15)


def test_from_core_mixture():
    edges = uniform_edges(50)
    logits = jax.random.normal(jax.random.key(0), (4, 50))
    support = PiecewiseConstant.from_logits(logits, edges)
    w = jnp.asarray([0.1, 0.2, 0.3, 0.4])
    core = Mixture(support=support, probs=w)
    m = MixtureDistribution.from_mixture(core)
    ys = jnp.linspace(0, 1, 11)
    np.testing.assert_allclose(m.cdf(ys), core.mean().cdf(ys), atol=1e-6)
    np.testing.assert_allclose(m.crps(ys), core.mean().crps(ys), atol=1e-6)


def test_gaussian_mixture_to_piecewise_averages_binned_components(x64):
    m = _gmix()
    edges = uniform_edges(20, -2, 3)
    pc = m.to_piecewise(edges)
    want = sum(w * Gaussian(mu, s).to_piecewise(edges).probs for w, mu, s in zip(W, LOC, SCALE))
    np.testing.assert_allclose(pc.probs, want, rtol=1e-12)


def test_sampling_ks():
    m = MixtureDistribution(Gaussian(jnp.asarray(LOC, jnp.float32), jnp.asarray(SCALE, jnp.float32)), jnp.asarray(W, jnp.float32))
    x = np.asarray(m.sample((20000,), key=jax.random.key(1)), np.float64)
    F = _ref_cdf()
    # fixed key; a correct sampler passes at 1e-3 with overwhelming probability
    assert scipy.stats.kstest(x, F).pvalue > 1e-3
    edges = uniform_edges(6)
    mp = MixtureDistribution(PiecewiseConstant(jnp.eye(6)[:2], edges), jnp.asarray([0.25, 0.75]))
    xp = np.asarray(mp.sample((4000,), key=jax.random.key(2)))
    # every draw is in the first two bins, about a quarter in the first
    assert np.all(xp < 2 / 6 + 1e-6) and abs(np.mean(xp < 1 / 6) - 0.25) < 0.03  # 4.4 standard errors


def test_batched_components_jit_and_vmap():
    # components (k, B) = (3, 5); outcomes per batch entry
    locs = jnp.linspace(-1, 1, 15).reshape(3, 5)
    g = Gaussian(locs, jnp.full((3, 5), 0.5))
    m = MixtureDistribution(g, jnp.asarray(W, jnp.float32))
    ys = jnp.linspace(-0.5, 0.5, 5)
    assert m.batch_shape == (5,) and m.cdf(ys).shape == (5,) and m.crps(ys).shape == (5,)
    assert m.quantile(0.3).shape == (5,) and m.sample((7,), key=jax.random.key(0)).shape == (7, 5)
    per = jax.jit(jax.vmap(lambda l, y: MixtureDistribution(Gaussian(l, jnp.full((3,), 0.5)), jnp.asarray(W, jnp.float32)).crps(y)))(
        locs.T, ys
    )
    np.testing.assert_allclose(per, m.crps(ys), rtol=1e-5)  # float32, different fusion under jit
    assert m.crps(jnp.zeros((2, 1))).shape == (2, 5)


def test_bad_input():
    g = Gaussian(jnp.zeros(3), jnp.ones(3))
    with pytest.raises(ValueError, match="leading batch axis"):
        MixtureDistribution(g, jnp.asarray([0.5, 0.5]))
    with pytest.raises(ValueError, match="weights"):
        MixtureDistribution(g, jnp.asarray([0.5, 0.6, -0.1]))
    with pytest.raises(ValueError, match="sum to 1"):
        MixtureDistribution(g, jnp.asarray([0.5, 0.5, 0.5]))
    with pytest.raises(ValueError, match="weights"):
        MixtureDistribution(g, jnp.asarray([[1.0, 0.0, 0.0]]))
    with pytest.raises(ValueError, match="components"):
        MixtureDistribution(jnp.zeros(3), jnp.asarray([1.0, 0.0, 0.0]))
    with pytest.raises(ValueError, match="edges"):
        MixtureDistribution(g, jnp.asarray([1.0, 0.0, 0.0])).to_piecewise()
    with pytest.raises(ValueError, match="leading batch axis"):
        MixtureDistribution(Gaussian(0.0, 1.0), jnp.asarray([1.0]))


def test_traced_weights_are_checked_in_the_graph():
    comps = PiecewiseConstant(jnp.asarray([[0.5, 0.5], [0.25, 0.75]]), (0.0, 0.5, 1.0))
    f = jax.jit(lambda w: MixtureDistribution(comps, w).mean())
    assert np.isfinite(float(f(jnp.array([0.5, 0.5]))))
    for bad in (jnp.array([0.7, 0.7]), jnp.array([1.5, -0.5]), jnp.array([jnp.nan, 0.5])):
        with pytest.raises(Exception, match="weights"):
            f(bad).block_until_ready()
