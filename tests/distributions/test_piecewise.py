"""PiecewiseConstant: parity with scipy's rv_histogram and with quadrature of the definitions,
the quantile convention, exact gradients through logits, sampling, batching, Mixture support,
and bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from reference.distributions import (
    crps_by_quadrature,
    histogram,
    piecewise_crps_definition,
    piecewise_expect,
)

from jcalib import scoring
from jcalib.core import Mixture
from jcalib.distributions import PiecewiseConstant, check_outcomes, probs_atol, uniform_edges


def _random_density(seed, n=7, zero_bins=(2,), low=-1.0, high=2.5):
    """Masses with some bins of zero mass on random unequal edges."""
    rng = np.random.default_rng(seed)
    edges = np.sort(rng.uniform(low, high, n - 1))
    edges = (low, *edges.tolist(), high)
    p = rng.dirichlet(np.ones(n))
    p[list(zero_bins)] = 0.0
    return p / p.sum(), edges


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_rv_histogram(seed, x64):
    p, edges = _random_density(seed, zero_bins=(0, 3) if seed == 1 else (2,))
    d = PiecewiseConstant(jnp.asarray(p), edges)
    ref = histogram(p, edges)
    ys = np.linspace(edges[0] - 0.5, edges[-1] + 0.5, 301)
    np.testing.assert_allclose(d.cdf(jnp.asarray(ys)), ref.cdf(ys), atol=1e-13)
    inside = (ys > edges[0]) & (ys < edges[-1]) & ~np.isin(ys, edges)
    np.testing.assert_allclose(d.prob(jnp.asarray(ys[inside])), ref.pdf(ys[inside]), rtol=1e-12)
    assert np.all(np.isneginf(np.asarray(d.log_prob(jnp.asarray(ys[~((ys >= edges[0]) & (ys <= edges[-1]))])))))
    np.testing.assert_allclose(d.mean(), ref.mean(), rtol=1e-12)
    np.testing.assert_allclose(d.variance(), ref.var(), rtol=1e-10)
    for k in range(5):
        np.testing.assert_allclose(d.moment(k), ref.moment(k), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(d.entropy(), ref.entropy(), rtol=1e-10)
    # away from flat levels of F (where scipy's np.interp picks an arbitrary end) ppf agrees
    alphas = np.linspace(0.005, 0.995, 199)
    levels = np.cumsum(p)
    ok = np.min(np.abs(alphas[:, None] - levels[None, :]), axis=1) > 1e-9
    np.testing.assert_allclose(d.quantile(jnp.asarray(alphas[ok])), ref.ppf(alphas[ok]), atol=1e-12)


def test_zero_mass_bins_have_log_density_minus_inf(x64):
    p, edges = _random_density(0, zero_bins=(2,))
    d = PiecewiseConstant(jnp.asarray(p), edges)
    mid = 0.5 * (edges[2] + edges[3])
    assert np.isneginf(float(d.log_prob(mid)))
    # bins are [e_i, e_{i+1}); the top edge belongs to the last bin
    np.testing.assert_allclose(d.log_prob(edges[-1]), np.log(p[-1] / (edges[-1] - edges[-2])))
    np.testing.assert_allclose(d.log_prob(edges[1]), np.log(p[1] / (edges[2] - edges[1])))


@pytest.mark.parametrize("seed", [0, 1])
def test_crps_matches_the_integral_definition(seed, x64):
    p, edges = _random_density(seed, zero_bins=(0, 4) if seed else (2,))
    d = PiecewiseConstant(jnp.asarray(p), edges)
    ys = [edges[0] - 1.3, edges[0], edges[1], 0.5 * (edges[2] + edges[3]), 0.3, edges[-1], edges[-1] + 2.0]
    got = np.asarray(d.crps(jnp.asarray(ys)))
    want = [piecewise_crps_definition(p, edges, y) for y in ys]
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_crps_of_a_uniform_density():
    # U[0, 1]: CRPS(y) = y² - y + 1/3 on [0, 1] (by direct integration), float32 defaults
    d = PiecewiseConstant.uniform(50)
    ys = np.linspace(0, 1, 11)
    np.testing.assert_allclose(d.crps(jnp.asarray(ys, jnp.float32)), ys**2 - ys + 1 / 3, rtol=1e-5, atol=1e-6)
    assert d.crps(0.5).dtype == jnp.float32
    # jcalib.scoring.crps delegates to the distribution
    np.testing.assert_allclose(scoring.crps(d, 0.25), 0.25**2 - 0.25 + 1 / 3, rtol=1e-5)


def test_crps_of_a_narrow_bin_tends_to_absolute_error(x64):
    # all mass on a bin of width h around c: at y = c the CRPS is ∫ F² over the left half plus
    # ∫ (1-F)² over the right half = 2·(h/2)(1/4)/3 = h/12; for y above the bin it is
    # ∫ F² over the bin (h/3) plus the distance y - (c + h/2), i.e. |y - c| - h/6
    edges = (0.0, 0.5, 0.5 + 1e-3, 1.0)
    d = PiecewiseConstant(jnp.asarray([0.0, 1.0, 0.0]), edges)
    np.testing.assert_allclose(d.crps(0.5 + 5e-4), 1e-3 / 12, rtol=1e-9)
    np.testing.assert_allclose(d.crps(0.9), 0.9 - (0.5 + 5e-4) - 1e-3 / 6, rtol=1e-9)


def test_crps_derivative_in_y_is_2F_minus_1(x64):
    p, edges = _random_density(3)
    d = PiecewiseConstant(jnp.asarray(p), edges)
    ys = jnp.asarray([-2.0, -0.3, 0.11, 0.9, 1.7, 3.0])
    g = jax.vmap(jax.grad(d.crps))(ys)
    np.testing.assert_allclose(g, 2 * d.cdf(ys) - 1, atol=1e-12)


def test_quantile_convention_and_round_trips(x64):
    edges = uniform_edges(5)
    p = np.array([0.0, 0.3, 0.0, 0.0, 0.7])
    d = PiecewiseConstant(jnp.asarray(p), edges)
    # Q(0): left end of the first bin of positive mass; Q(1): right end of the last
    assert float(d.quantile(0.0)) == pytest.approx(0.2)
    assert float(d.quantile(1.0)) == pytest.approx(1.0)
    # at the level 0.3 of the flat stretch [0.4, 0.8], Q is the stretch's left end
    assert float(d.quantile(0.3)) == pytest.approx(0.4)
    assert float(d.quantile(0.3 + 1e-12)) == pytest.approx(0.8, abs=1e-9)
    assert np.isnan(float(d.quantile(1.5))) and np.isnan(float(d.quantile(-0.1)))
    # Q is the generalised inverse: F(Q(a)) = a, and Q(a) = min{y : F(y) >= a} on a fine grid
    alphas = np.linspace(0, 1, 1001)
    q = np.asarray(d.quantile(jnp.asarray(alphas)))
    np.testing.assert_allclose(d.cdf(jnp.asarray(q)), alphas, atol=1e-12)
    grid = np.linspace(0, 1, 100001)
    F = np.asarray(d.cdf(jnp.asarray(grid)))
    brute = np.array([grid[np.argmax(F >= a - 1e-12)] for a in alphas[1:]])
    np.testing.assert_allclose(q[1:], brute, atol=2e-5)  # the grid spacing is 1e-5
    # and Q(F(y)) = y on the support of positive mass
    ys = np.concatenate([np.linspace(0.2, 0.4, 50), np.linspace(0.8, 1.0, 50)[1:]])  # Q(F(0.8)) = Q(0.3) = 0.4 by the convention
    np.testing.assert_allclose(d.quantile(d.cdf(jnp.asarray(ys))), ys, atol=1e-12)


def test_quantile_round_trip_float32_with_softmax_masses():
    logits = jax.random.normal(jax.random.key(0), (4, 50))
    d = PiecewiseConstant.from_logits(logits, uniform_edges(50))
    alphas = jnp.linspace(0, 1, 101)[:, None]
    q = d.quantile(jnp.broadcast_to(alphas, (101, 4)))
    assert q.shape == (101, 4) and q.dtype == jnp.float32
    np.testing.assert_allclose(d.cdf(q), np.broadcast_to(alphas, (101, 4)), atol=2e-6)  # float32 round-off


@pytest.mark.parametrize("n_points", [1, 3, 8])
def test_expect_is_exact_for_polynomials_of_degree_2m_minus_1(n_points, x64):
    p, edges = _random_density(4)
    d = PiecewiseConstant(jnp.asarray(p), edges)
    deg = 2 * n_points - 1
    np.testing.assert_allclose(d.expect(lambda x: x**deg, n_points=n_points), d.moment(deg), rtol=1e-12)
    ref = piecewise_expect(lambda z: z**deg, p, edges)
    np.testing.assert_allclose(d.expect(lambda x: x**deg, n_points=n_points), ref, rtol=1e-10)


def test_expect_of_smooth_functions_and_batched_integrands(x64):
    p, edges = _random_density(5)
    d = PiecewiseConstant(jnp.asarray(p), edges)
    np.testing.assert_allclose(d.expect(jnp.exp, n_points=8), piecewise_expect(np.exp, p, edges), rtol=1e-12)
    # an integrand with a leading axis: E[(Y - c)_+] for three c (kinks at edges: exact)
    cs = jnp.asarray(edges[1:4])
    got = d.expect(lambda x: jnp.maximum(x[None] - cs[:, None, None], 0.0), n_points=2)
    want = [piecewise_expect(lambda z, c=c: max(z - c, 0.0), p, edges) for c in np.asarray(cs)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def _fd(f, x, h=1e-6):
    """Central finite differences of a scalar f at x (float64)."""
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        g.flat[i] = (float(f(jnp.asarray(x + e))) - float(f(jnp.asarray(x - e)))) / (2 * h)
    return g


def test_gradients_wrt_logits_match_finite_differences(x64):
    edges = uniform_edges(12, -0.5, 1.3)
    logits = np.random.default_rng(7).normal(size=12)

    @jax.jit
    def f(lg):
        d = PiecewiseConstant.from_logits(lg, edges)
        return jnp.stack(
            [
                d.crps(0.37),  # outcome inside the range
                d.crps(-0.2) + d.crps(1.5),  # outside, on both sides
                d.cdf(0.37) + d.cdf(0.9),
                d.moment(2),
                d.variance(),
                d.quantile(0.3) + d.quantile(0.77),
                d.expect(jnp.sin),
                d.entropy(),
            ]
        )

    jac = jax.jacrev(f)(jnp.asarray(logits))
    h = 1e-6
    fd = np.stack([(f(jnp.asarray(logits + h * e)) - f(jnp.asarray(logits - h * e))) / (2 * h) for e in np.eye(12)], 1)
    # central differences with h = 1e-6 in float64: truncation O(h²), round-off O(1e-16/h)
    np.testing.assert_allclose(jac, fd, atol=1e-8)


def test_sampling_matches_cdf_ks():
    p, edges = _random_density(6, zero_bins=(1,))
    d = PiecewiseConstant(jnp.asarray(p, jnp.float32), edges)
    n = 20000
    x = np.sort(np.asarray(d.sample((n,), key=jax.random.key(3)), np.float64))
    F = np.asarray(d.cdf(jnp.asarray(x, jnp.float32)), np.float64)
    ks = max(np.max(np.arange(1, n + 1) / n - F), np.max(F - np.arange(n) / n))
    # Kolmogorov's 0.1% critical value 1.95/√n (fixed key, so the test is deterministic)
    assert ks < 1.95 / np.sqrt(n)
    # no draw falls in a bin of zero mass or outside the support
    assert not np.any((x > edges[1]) & (x < edges[2]))
    assert x.min() >= edges[0] and x.max() <= edges[-1]
    assert scipy.stats.kstest(x, histogram(p, edges).cdf).pvalue > 1e-3


def test_jit_vmap_and_batch_shapes():
    edges = uniform_edges(50)
    logits = jax.random.normal(jax.random.key(1), (16, 50))
    ys = jax.random.uniform(jax.random.key(2), (16,))

    def score(lg, y):
        d = PiecewiseConstant.from_logits(lg, edges)
        return jnp.stack([d.crps(y), d.cdf(y), d.quantile(0.25), d.log_prob(y)])

    per = jax.jit(jax.vmap(score))(logits, ys)
    batch = PiecewiseConstant.from_logits(logits, edges)
    whole = jnp.stack([batch.crps(ys), batch.cdf(ys), batch.quantile(0.25), batch.log_prob(ys)], axis=1)
    np.testing.assert_allclose(per, whole, rtol=2e-6, atol=1e-7)  # float32: jit may fuse differently
    # one density at many points, many densities at one point, and a grid via an outer axis
    assert batch.cdf(0.3).shape == (16,)
    assert batch.crps(jnp.zeros((3, 1))).shape == (3, 16)
    assert PiecewiseConstant(batch.probs[0], edges).cdf(jnp.zeros((5,))).shape == (5,)
    # densities are pytrees: vmap can return them and they keep their static edges
    out = jax.vmap(lambda lg: PiecewiseConstant.from_logits(lg, edges))(logits)
    assert isinstance(out, PiecewiseConstant) and out.edges == edges and out.batch_shape == (16,)


def test_grad_of_vmapped_crps_is_finite_and_batched():
    edges = uniform_edges(50)
    logits = jax.random.normal(jax.random.key(4), (32, 50))
    y = jnp.float32(0.4)
    loss = lambda lg: jnp.sum(jax.vmap(lambda l: PiecewiseConstant.from_logits(l, edges).crps(y))(lg))  # noqa: E731
    g = jax.jit(jax.grad(loss))(logits)
    assert g.shape == (32, 50) and bool(jnp.all(jnp.isfinite(g)))
    # the gradient of a softmax-parametrised loss sums to 0 over each density's logits
    np.testing.assert_allclose(jnp.sum(g, axis=1), 0.0, atol=1e-6)


def test_expect_with_a_traced_closure_under_jit_vmap_grad():
    # ORCA's pattern: an integrand closing over traced values, differentiated through logits
    edges = uniform_edges(50)

    def loss(lg, c):
        d = PiecewiseConstant.from_logits(lg, edges)
        return d.expect(lambda y: jnp.maximum(y - c, 0.0)) + d.crps(c)

    cs = jnp.asarray([0.1, 0.5, 0.9])
    val = jax.jit(jax.vmap(loss))(jnp.zeros((3, 50)), cs)
    # uniform density: E(Y - c)_+ = (1 - c)²/2 and CRPS = c² - c + 1/3
    np.testing.assert_allclose(val, (1 - cs) ** 2 / 2 + cs**2 - cs + 1 / 3, rtol=1e-5)
    g = jax.jit(jax.vmap(jax.grad(loss)))(jnp.zeros((3, 50)), cs)
    assert g.shape == (3, 50) and bool(jnp.all(jnp.isfinite(g)))


def test_core_mixture_of_densities_is_the_mixture_density():
    edges = uniform_edges(10)
    logits = jax.random.normal(jax.random.key(5), (3, 10))
    comps = [PiecewiseConstant.from_logits(logits[k], edges) for k in range(3)]
    stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *comps)
    w = jnp.asarray([0.2, 0.5, 0.3])
    mix = Mixture(support=stacked, probs=w).mean()
    assert isinstance(mix, PiecewiseConstant) and mix.probs.shape == (10,)
    ys = jnp.linspace(-0.2, 1.2, 29)
    weighted = sum(w[k] * comps[k].cdf(ys) for k in range(3))
    np.testing.assert_allclose(mix.cdf(ys), weighted, atol=1e-6)
    np.testing.assert_allclose(mix.mean(), sum(w[k] * comps[k].mean() for k in range(3)), atol=1e-6)
    # a draw from the Mixture is one of the components
    drawn = Mixture(support=stacked, probs=w).sample(key=jax.random.key(0))
    assert any(bool(jnp.all(drawn.probs == c.probs)) for c in comps)


def test_uniform_edges_and_properties():
    assert uniform_edges(2, -1, 1) == (-1.0, 0.0, 1.0)
    d = PiecewiseConstant.uniform(50, 2.0, 4.0)
    assert (d.n_bins, d.low, d.high) == (50, 2.0, 4.0)
    np.testing.assert_allclose(d.widths, np.full(50, 0.04), rtol=1e-6)
    np.testing.assert_allclose(d.mean(), 3.0, rtol=1e-6)
    assert len(uniform_edges(50)) == 51 and uniform_edges(50)[-1] == 1.0


def test_works_under_jit_with_float64(x64):
    d = PiecewiseConstant.from_logits(jnp.zeros(4), uniform_edges(4))
    assert d.dtype == jnp.float64
    assert jax.jit(lambda d, y: d.crps(y))(d, 0.5).dtype == jnp.float64
    # float32 outcomes are cast to the density's dtype (strict promotion would refuse mixing)
    assert d.cdf(jnp.float32(0.3)).dtype == jnp.float64


def test_bad_input():
    e = uniform_edges(3)
    with pytest.raises(ValueError, match="probs"):
        PiecewiseConstant(jnp.asarray([0.5, 0.5]), e)  # 2 masses for 3 bins
    with pytest.raises(ValueError, match="probs"):
        PiecewiseConstant(jnp.asarray([0.5, np.nan, 0.5]), e)
    with pytest.raises(ValueError, match="non-negative"):
        PiecewiseConstant(jnp.asarray([0.6, -0.1, 0.5]), e)
    with pytest.raises(ValueError, match="sum to 1"):
        PiecewiseConstant(jnp.asarray([0.5, 0.5, 0.5]), e)
    with pytest.raises(ValueError, match="edges"):
        PiecewiseConstant(jnp.asarray([0.5, 0.5]), (0.0, 1.0, 1.0))
    with pytest.raises(ValueError, match="edges"):
        PiecewiseConstant(jnp.asarray([1.0]), (0.0,))
    with pytest.raises(ValueError, match="edges"):
        PiecewiseConstant(jnp.asarray([1.0]), (0.0, np.inf))
    with pytest.raises(ValueError, match="probs"):
        PiecewiseConstant("abc", e)
    with pytest.raises(ValueError, match="logits"):
        PiecewiseConstant.from_logits(jnp.asarray([0.0, np.nan, 1.0]), e)
    with pytest.raises(ValueError, match="low"):
        uniform_edges(3, 1.0, 1.0)
    with pytest.raises(ValueError, match="n"):
        uniform_edges(0)
    with pytest.raises(ValueError, match="k"):
        PiecewiseConstant.uniform(3).moment(-1)
    with pytest.raises(ValueError, match="y"):
        check_outcomes([0.1, np.nan])
    with pytest.raises(ValueError, match="batch shape"):
        PiecewiseConstant(jnp.full((4, 3), 1 / 3), e).cdf(jnp.zeros(5))
    # the sum tolerance: 1e-5 in float32 (a softmax's round-off passes, a real error does not)
    assert probs_atol(50, jnp.float32) == 1e-5
    PiecewiseConstant(jnp.asarray([0.5, 0.25, 0.25 + 5e-6]), e)
    # NaN outcomes propagate (no check in traced code); out-of-range outcomes clamp the cdf
    d = PiecewiseConstant.uniform(3)
    assert np.isnan(float(d.cdf(jnp.nan))) and float(d.cdf(-5.0)) == 0.0 and float(d.cdf(5.0)) == pytest.approx(1.0)


def test_crps_reference_is_the_definition():
    # the quadrature reference itself on a case with a known value: U[0, 1] at y = 0.25
    assert crps_by_quadrature(lambda z: min(max(z, 0.0), 1.0), 0.25, 0.0, 1.0) == pytest.approx(
        0.25**2 - 0.25 + 1 / 3, abs=1e-12
    )


# ---------------------------------------------------------------- expectations over uniform outcomes


def test_crps_bins_and_crps_uniform_match_brute_force_integration(x64):
    from reference.bin_expectations import expected_crps_np

    p, edges = _random_density(0, zero_bins=(0, 3))
    d = PiecewiseConstant(jnp.asarray(p), edges)
    e = np.asarray(edges)
    want = expected_crps_np(p, edges, e[:-1], e[1:], n=801)
    # 1e-6: the reference integrates by a midpoint rule over y of a trapezoid rule over z
    np.testing.assert_allclose(np.asarray(d.crps_bins()), want, atol=1e-6)
    rng = np.random.default_rng(0)
    lo = rng.uniform(-1.5, 2.5, 8)
    hi = lo + rng.uniform(0, 1.5, 8)  # straddles edges and leaves the support on both sides
    want = expected_crps_np(p, edges, lo, hi, n=801)
    np.testing.assert_allclose(np.asarray(d.crps_uniform(lo, hi)), want, atol=1e-6)


def test_crps_closed_forms_agree_to_round_off(x64):
    # crps_bins (cumulative sums) and crps_uniform (the antiderivative) on the same bins, and
    # Gauss–Legendre with 3 nodes per bin (exact: the CRPS is quadratic in y inside a bin)
    for seed in range(4):
        p, edges = _random_density(seed)
        d = PiecewiseConstant(jnp.asarray(p), edges)
        e = np.asarray(edges)
        bins = np.asarray(d.crps_bins())
        np.testing.assert_allclose(np.asarray(d.crps_uniform(e[:-1], e[1:])), bins, rtol=1e-12, atol=1e-13)
        t, g = np.polynomial.legendre.leggauss(3)
        ys = (e[:-1, None] + e[1:, None]) / 2 + np.diff(e)[:, None] / 2 * t[None, :]
        gl = np.asarray(d.crps(jnp.asarray(ys))) @ (g / 2)
        np.testing.assert_allclose(bins, gl, rtol=1e-12, atol=1e-13)
    # a degenerate interval is the CRPS at that point
    np.testing.assert_allclose(float(d.crps_uniform(0.3, 0.3)), float(d.crps(0.3)), rtol=1e-14)


def test_bin_fraction_below_matches_counting(x64):
    from reference.bin_expectations import bin_fraction_below_np

    p, edges = _random_density(2, zero_bins=(4,))
    d = PiecewiseConstant(jnp.asarray(p), edges)
    alphas = np.array([0.05, 0.2, 0.5, 0.77, 0.95])
    want = bin_fraction_below_np(p, edges, alphas, n=20001)
    # 1e-4: the reference counts 20001 grid points per bin
    np.testing.assert_allclose(np.asarray(d.bin_fraction_below(alphas)), want, atol=1e-4)
    with pytest.raises(ValueError, match="alpha"):
        d.bin_fraction_below(jnp.ones((2, 2)))


def test_bin_expectations_jit_vmap_grad_without_retracing():
    import chex

    edges = uniform_edges(20)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def f(theta, lo, hi):
        d = PiecewiseConstant.from_logits(theta, edges)
        alphas = jnp.linspace(0.1, 0.9, 9, dtype=theta.dtype)
        return jnp.sum(d.crps_bins()) + jnp.sum(d.crps_uniform(lo, hi)) + jnp.sum(d.bin_fraction_below(alphas))

    rng = np.random.default_rng(0)
    for s in range(3):
        th = jnp.asarray(rng.normal(size=(4, 20)), jnp.float32)
        lo = jnp.asarray(rng.uniform(0, 0.5, 3), jnp.float32)
        out = jax.vmap(f, in_axes=(0, None, None))(th, lo, lo + 0.3)
        g = jax.vmap(jax.grad(f), in_axes=(0, None, None))(th, lo, lo + 0.3)
        assert out.shape == (4,) and g.shape == (4, 20) and np.all(np.isfinite(np.asarray(g)))
    # a batch of densities at once
    d = PiecewiseConstant.from_logits(jnp.asarray(rng.normal(size=(3, 20)), jnp.float32), edges)
    assert d.crps_bins().shape == (3, 20)
    assert d.bin_fraction_below(jnp.asarray([0.2, 0.8], jnp.float32)).shape == (3, 20, 2)


# ------------------------------------------------- many outcomes at once and spiked mixtures (ORCA)


@pytest.mark.parametrize("uniform", [True, False], ids=["equal-edges", "unequal-edges"])
def test_at_points_is_cdf_and_crps_at_each_outcome(x64, uniform):
    # O(n + M) by bins against the O(n)-per-outcome methods, with outcomes below, above, on every
    # edge and inside bins of zero mass; equal edges take the floor path of _bin_of
    for seed in range(3):
        if uniform:
            edges = uniform_edges(9, -1.0, 2.0)
            p = np.random.default_rng(seed).dirichlet(np.ones(9))
            p[[0, 4]] = 0.0
            p /= p.sum()
        else:
            p, edges = _random_density(seed, zero_bins=(0, 3))
        d = PiecewiseConstant(jnp.asarray(p), edges)
        e = np.asarray(edges)
        ys = np.r_[e, e[0] - 0.5, e[-1] + 0.7, np.random.default_rng(seed).uniform(e[0], e[-1], 40)]
        cdf, crps = d.at_points(jnp.asarray(ys))
        np.testing.assert_allclose(np.asarray(cdf), np.asarray(d.cdf(jnp.asarray(ys))), rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(np.asarray(crps), np.asarray(d.crps(jnp.asarray(ys))), rtol=1e-12, atol=1e-14)
        want = np.searchsorted(e[1:-1], np.clip(ys, e[0], e[-1]), side="right")  # e_i <= y < e_{i+1}
        np.testing.assert_array_equal(np.asarray(d._bin_of(jnp.clip(jnp.asarray(ys), e[0], e[-1]))), want)
    with pytest.raises(ValueError, match="unbatched"):
        PiecewiseConstant(jnp.ones((2, 4)) / 4, uniform_edges(4)).at_points(jnp.zeros(3))


def test_crps_bins_spiked_is_crps_bins_of_each_mixture(x64):
    # the closed form over all (γ, j) against crps_bins of the mixture (1-γ)p + γδ_j built explicitly,
    # and one mixture against the brute-force integral (slow reference)
    from reference.bin_expectations import expected_crps_np

    gammas = (0.3, 0.9, 1.0)
    for seed in range(3):
        p, edges = _random_density(seed, zero_bins=(1,))
        d = PiecewiseConstant(jnp.asarray(p), edges)
        got = np.asarray(d.crps_bins_spiked(gammas))
        assert got.shape == (3, len(p), len(p))
        for g, gam in enumerate(gammas):
            for j in range(len(p)):
                mix = PiecewiseConstant(jnp.asarray((1 - gam) * p + gam * np.eye(len(p))[j]), edges)
                np.testing.assert_allclose(got[g, j], np.asarray(mix.crps_bins()), rtol=1e-12, atol=1e-13)
    e = np.asarray(edges)
    mix = 0.1 * p + 0.9 * np.eye(len(p))[2]
    # 1e-6: the reference integrates by a midpoint rule over y of a trapezoid rule over z
    np.testing.assert_allclose(got[1, 2], expected_crps_np(mix, edges, e[:-1], e[1:], n=801), atol=1e-6)


def test_crps_bins_spiked_float32_error_is_at_the_crps_scale():
    # the closed form cancels terms of the range's scale: in float32 it stays within a few 1e-7
    # of the float64 value (ORCA only ranks starts by it)
    th = np.random.default_rng(0).normal(size=50) * 3
    gammas = (0.5, 0.9, 0.99)
    p32 = PiecewiseConstant.from_logits(jnp.asarray(th, jnp.float32), uniform_edges(50))
    with jax.enable_x64(True):
        p64 = PiecewiseConstant.from_logits(jnp.asarray(th, jnp.float64), uniform_edges(50))
        want = np.asarray(p64.crps_bins_spiked(gammas))
    # 2e-6: about 20 float32 ulps of the terms (of size up to e_n - e_0 = 1) that cancel
    np.testing.assert_allclose(np.asarray(p32.crps_bins_spiked(gammas)), want, atol=2e-6)


def test_at_points_and_spiked_jit_vmap_without_retracing():
    import chex

    edges = uniform_edges(20)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def f(theta, ys):
        d = PiecewiseConstant.from_logits(theta, edges)
        cdf, crps = d.at_points(ys)
        return jnp.sum(cdf) + jnp.sum(crps) + jnp.sum(d.crps_bins_spiked((0.5, 0.9)))

    rng = np.random.default_rng(0)
    for s in range(3):
        th = jnp.asarray(rng.normal(size=(4, 20)), jnp.float32)
        ys = jnp.asarray(rng.uniform(size=(4, 30)), jnp.float32)
        out = jax.vmap(f)(th, ys)
        want = [float(f(th[b], ys[b])) for b in range(4)]
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5)


def test_sizes_and_dtypes_are_checked():
    with pytest.raises(ValueError, match="n=1000000000000 exceeds 2\\*\\*24"):
        uniform_edges(10**12)
    assert uniform_edges(np.int64(2)) == uniform_edges(np.asarray(2)) == (0.0, 0.5, 1.0)
    with pytest.raises(ValueError, match="n_bins must be a positive integer"):
        probs_atol(0, jnp.float32)
    with pytest.raises(ValueError, match="dtype must be a floating dtype"):
        probs_atol(4, "a")


def test_traced_masses_are_checked_in_the_graph_and_trusted_internal_ones_are_not():
    """A distribution built inside jit from the caller's masses refuses NaN, negative masses and
    rows not summing to 1 in the graph; a softmax (``from_logits``) is valid by construction and
    stages no check (the forecasters' inner loops)."""
    edges = (0.0, 0.25, 0.5, 0.75, 1.0)
    f = jax.jit(lambda p: PiecewiseConstant(p, edges).mean())
    assert abs(float(f(jnp.full(4, 0.25))) - 0.5) < 1e-6  # float32 round-off
    for bad, msg in ((jnp.array([0.5, 0.5, 0.5, -0.5]), "non-negative"), (jnp.array([0.5, 0.25, 0.25, 0.25]), "sum to 1"),
                     (jnp.array([jnp.nan, 0.25, 0.25, 0.25]), "NaN")):
        with pytest.raises(Exception, match=msg):
            f(bad).block_until_ready()
    jaxpr = str(jax.make_jaxpr(lambda t: PiecewiseConstant.from_logits(t, edges).mean())(jnp.zeros(4)))
    assert "callback" not in jaxpr
    assert "callback" in str(jax.make_jaxpr(lambda p: PiecewiseConstant(p, edges).mean())(jnp.full(4, 0.25)))


def test_the_checkers_declare_their_inputs():
    """check_edges, check_outcomes, probs_atol and uniform_edges state their inputs once
    (``declare``); the checkers' errors name the argument they are told, NumPy scalars pass as
    numbers do, and bools and strings are refused as bounds."""
    from jcalib._validation import declared
    from jcalib.distributions import check_edges

    for fn in (check_edges, check_outcomes, probs_atol, uniform_edges):
        assert declared(fn), fn.__name__
    with pytest.raises(ValueError, match="bins must be strictly increasing"):
        check_edges([0.0, 1.0, 1.0], "bins")
    with pytest.raises(ValueError, match="alpha contains NaN"):
        check_outcomes([0.5, np.nan], name="alpha")
    assert jax.jit(check_outcomes)(jnp.array([0.5, np.inf])).shape == (2,)  # ±inf allowed, as plainly
    assert uniform_edges(2, np.float32(0.0), np.asarray(2.0)) == (0.0, 1.0, 2.0)
    for bad in (True, "1"):
        with pytest.raises(ValueError, match="high must be"):
            uniform_edges(2, 0.0, bad)
    with pytest.raises(ValueError, match="low must be < high"):
        uniform_edges(2, 1.0, 1.0)
