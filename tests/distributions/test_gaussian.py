"""Gaussian: parity with scipy.stats.norm and quadrature, binning onto edges, gradients, sampling,
batching and bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from reference.distributions import crps_by_quadrature_infinite, gaussian_crps_closed_form

from jcalib.distributions import Gaussian, PiecewiseConstant, uniform_edges

LOC = np.array([-1.3, 0.0, 0.4, 2.5])
SCALE = np.array([0.2, 1.0, 0.07, 3.0])


def test_matches_scipy_norm(x64):
    g = Gaussian(jnp.asarray(LOC), jnp.asarray(SCALE))
    ref = scipy.stats.norm(LOC, SCALE)
    for y in (-2.0, 0.1, 0.41, 3.0):
        np.testing.assert_allclose(g.cdf(y), ref.cdf(y), rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(g.log_prob(y), ref.logpdf(y), rtol=1e-12)
    for a in (0.001, 0.3, 0.5, 0.975):
        np.testing.assert_allclose(g.quantile(a), ref.ppf(a), rtol=1e-10)
    np.testing.assert_allclose(g.mean(), ref.mean())
    np.testing.assert_allclose(g.variance(), ref.var(), rtol=1e-12)
    np.testing.assert_allclose(g.entropy(), ref.entropy(), rtol=1e-12)
    for k in range(7):
        want = [scipy.stats.norm(m, s).moment(k) for m, s in zip(LOC, SCALE)]
        np.testing.assert_allclose(g.moment(k), want, rtol=1e-10)
    assert np.isneginf(float(Gaussian(0.0, 1.0).quantile(0.0))) and np.isposinf(float(Gaussian(0.0, 1.0).quantile(1.0)))


def test_crps_matches_the_integral_definition(x64):
    g = Gaussian(jnp.asarray(LOC), jnp.asarray(SCALE))
    for y in (-3.0, 0.0, 0.42, 2.0):
        want = [crps_by_quadrature_infinite(scipy.stats.norm(m, s).cdf, y, m, s) for m, s in zip(LOC, SCALE)]
        np.testing.assert_allclose(g.crps(y), want, rtol=1e-8)
        np.testing.assert_allclose(g.crps(y), gaussian_crps_closed_form(LOC, SCALE, y), rtol=1e-12)


def test_expect_gauss_hermite(x64):
    g = Gaussian(jnp.asarray(LOC), jnp.asarray(SCALE))
    # exact for degree <= 2 n_points - 1
    # (atol: the odd moment of the centred component is 0, quadrature gives round-off)
    np.testing.assert_allclose(g.expect(lambda x: x**5, n_points=3), g.moment(5), rtol=1e-10, atol=1e-12)
    # E exp(Y) = exp(μ + σ²/2); smooth, so 32 nodes are enough to 1e-10
    np.testing.assert_allclose(g.expect(jnp.exp), np.exp(LOC + SCALE**2 / 2), rtol=1e-10)


def test_gradients_match_finite_differences(x64):
    @jax.jit
    def f(theta):
        g = Gaussian(theta[0], jnp.exp(theta[1]))
        return jnp.stack(
            [g.crps(0.3), g.cdf(0.3), g.moment(2), g.quantile(0.8), g.to_piecewise(uniform_edges(10, -1, 2)).crps(0.3)]
        )

    theta = np.array([0.2, np.log(0.7)])
    jac = jax.jacrev(f)(jnp.asarray(theta))
    h = 1e-6
    fd = np.stack([(f(jnp.asarray(theta + h * e)) - f(jnp.asarray(theta - h * e))) / (2 * h) for e in np.eye(2)], 1)
    np.testing.assert_allclose(jac, fd, atol=1e-8)  # central differences, h = 1e-6, float64


def test_to_piecewise_folds_the_tails(x64):
    edges = uniform_edges(50)
    g = Gaussian(jnp.asarray([0.3, 0.5, -4.0, 40.0]), jnp.asarray([0.2, 1.0, 0.5, 0.1]))
    pc = g.to_piecewise(edges)
    assert isinstance(pc, PiecewiseConstant) and pc.probs.shape == (4, 50) and pc.edges == edges
    e = np.asarray(edges)
    for b, (m, s) in enumerate(zip([0.3, 0.5, -4.0, 40.0], [0.2, 1.0, 0.5, 0.1])):
        cdf = scipy.stats.norm(m, s).cdf(e)
        want = np.diff(cdf)
        want[0] += cdf[0]  # mass below the range goes to the first bin
        want[-1] += 1 - cdf[-1]  # and above it to the last
        # atol: the reference's differences of cdf values near 1 cancel to ~1e-16
        np.testing.assert_allclose(pc.probs[b], want, rtol=1e-9, atol=2e-16)
    np.testing.assert_allclose(jnp.sum(pc.probs, -1), 1.0, atol=1e-14)
    # far outside the range all mass is in one end bin
    assert float(pc.probs[2, 0]) == pytest.approx(1.0) and float(pc.probs[3, -1]) == pytest.approx(1.0)
    # inside, the binned cdf agrees with the Gaussian's at every edge
    inner = jnp.asarray(e[1:-1])[:, None]
    np.testing.assert_allclose(pc.cdf(inner)[:, 0], g.cdf(inner)[:, 0], rtol=1e-12)


def test_to_piecewise_far_tail_precision(x64):
    # the upper tail is computed as Φ(-z), so a bin 8σ above the mean keeps its tiny mass
    pc = Gaussian(0.0, 0.05).to_piecewise((-1.0, 0.4, 0.45, 1.0))
    want = scipy.stats.norm.sf(8.0) - scipy.stats.norm.sf(9.0)
    np.testing.assert_allclose(pc.probs[1], want, rtol=1e-9)


def test_sampling_ks():
    g = Gaussian(jnp.float32(0.5), jnp.float32(2.0))
    x = np.asarray(g.sample((20000,), key=jax.random.key(0)), np.float64)
    # fixed key; 1e-3 is far below what a correct sampler gives with any key but catches a wrong scale
    assert scipy.stats.kstest(x, scipy.stats.norm(0.5, 2.0).cdf).pvalue > 1e-3
    assert g.sample((3, 2), key=jax.random.key(0)).shape == (3, 2)


def test_broadcasting_dtypes_and_vmap():
    g = Gaussian(jnp.zeros((3,), jnp.float32), 1.0)
    assert g.scale.shape == (3,) and g.scale.dtype == jnp.float32
    assert g.crps(jnp.zeros((2, 1))).shape == (2, 3)
    assert g.expect(jnp.square).shape == (3,)
    locs = jnp.linspace(-1, 1, 8)
    per = jax.jit(jax.vmap(lambda m, y: Gaussian(m, 0.5).crps(y)))(locs, locs + 0.1)
    np.testing.assert_allclose(per, Gaussian(locs, jnp.full((8,), 0.5)).crps(locs + 0.1), rtol=1e-6)
    binned = jax.vmap(lambda m: Gaussian(m, 0.5).to_piecewise(uniform_edges(5)))(locs)
    assert binned.probs.shape == (8, 5)


def test_bad_input():
    with pytest.raises(ValueError, match="scale"):
        Gaussian(0.0, 0.0)
    with pytest.raises(ValueError, match="scale"):
        Gaussian(0.0, -1.0)
    with pytest.raises(ValueError, match="loc"):
        Gaussian(np.nan, 1.0)
    with pytest.raises(ValueError, match="do not broadcast"):
        Gaussian(jnp.zeros(3), jnp.ones(2))
    with pytest.raises(ValueError, match="edges"):
        Gaussian(0.0, 1.0).to_piecewise((1.0, 0.0))
    with pytest.raises(ValueError, match="k"):
        Gaussian(0.0, 1.0).moment(1.5)


@pytest.mark.parametrize("arg", ["loc", "scale"])
def test_bool_parameters_are_refused(arg):
    kw = {"loc": 0.0, "scale": 1.0, arg: True}
    with pytest.raises(TypeError, match=f"{arg} must be a real number"):
        Gaussian(**kw)
