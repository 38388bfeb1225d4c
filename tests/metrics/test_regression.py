"""Regression calibration metrics against plain NumPy references, SciPy, properscoring and
scoringrules, and numerical integration."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from jcalib.metrics import regression as R
from reference import miscalibration_area as ref_area
from reference import regression as ref


def _pits(seed, n=200):
    rng = np.random.default_rng(seed)
    u = rng.beta(0.7, 0.7, size=n)
    u[:5] = [0.0, 1.0, 0.5, 0.01, 0.99]  # exact ties with levels and the ends
    return u


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_qce_and_frequencies_match_reference(x64, seed):
    u = _pits(seed)
    w = np.random.default_rng(seed + 10).uniform(0.1, 2.0, size=u.shape[0])
    np.testing.assert_allclose(R.quantile_frequencies(u), ref.quantile_frequencies(u), rtol=0, atol=1e-14)
    np.testing.assert_allclose(R.quantile_frequencies(u, sample_weight=w), ref.quantile_frequencies(u, w=w), rtol=1e-13)
    for form in ("sum", "mean_abs"):
        np.testing.assert_allclose(R.quantile_calibration_error(u, form=form), ref.qce(u, form=form), rtol=1e-12)
        np.testing.assert_allclose(
            R.quantile_calibration_error(u, sample_weight=w, form=form), ref.qce(u, w=w, form=form), rtol=1e-12
        )


def test_qce_of_calibrated_forecaster_matches_its_expectation(x64):
    # T i.i.d. uniform PIT values: E[QCE] = Σ q(1-q)/T = 16.665/T (Marx, Kuleshov, Ermon et al.). Mean over 400 runs.
    T = 500
    u = jax.random.uniform(jax.random.key(0), (400, T), jnp.float64)
    q = jax.vmap(R.quantile_calibration_error)(u)
    expected = R.qce_calibrated_expectation(T)
    assert expected == pytest.approx(16.665 / T)
    # the run-to-run standard deviation of QCE is about its mean here; 400 runs: ± ~5% (1 s.e.)
    assert float(jnp.mean(q)) == pytest.approx(expected, rel=0.15)
    # a miscalibrated (too narrow) forecaster scores far more
    assert float(R.quantile_calibration_error(jnp.clip(0.5 + 2 * (u[0] - 0.5), 0, 1))) > 20 * expected


def test_pit_uniformity_is_scipy_kstest(x64):
    for seed in range(3):
        u = _pits(seed)
        assert float(R.pit_uniformity(u)) == pytest.approx(scipy.stats.kstest(u, "uniform").statistic, abs=1e-14)


def test_pit_uniformity_is_one_program():
    """A first call on new shapes compiles one program (operation by operation it compiled nine)."""
    from conformance import count_compilations

    with count_compilations() as c:
        jax.block_until_ready(R.pit_uniformity(np.linspace(0.01, 0.99, 1237, dtype=np.float32)))
    assert c.n == 1


def test_histogram_coverage_smape_pinball_match_reference(x64):
    rng = np.random.default_rng(3)
    u = _pits(3)
    w = rng.uniform(0.1, 2.0, size=u.shape[0])
    np.testing.assert_allclose(R.pit_histogram(u, n_bins=7, sample_weight=w), ref.pit_histogram(u, 7, w), rtol=1e-13)
    assert float(jnp.sum(R.pit_histogram(u, n_bins=7))) == pytest.approx(1.0)
    for level in (0.5, 0.8, 0.98):
        assert float(R.central_interval_coverage(u, level=level, sample_weight=w)) == pytest.approx(ref.coverage(u, level, w), rel=1e-13)
    y = rng.gamma(2.0, 3.0, size=50)
    y[:3] = 0.0
    yhat = rng.gamma(2.0, 3.0, size=50)
    yhat[0] = 0.0  # 0/0 -> 0; y = 0 != yhat -> 2
    assert float(R.smape(yhat, y)) == pytest.approx(ref.smape(y, yhat), rel=1e-13)
    assert float(R.smape(yhat, y, sample_weight=w[:50])) == pytest.approx(ref.smape(y, yhat, w[:50]), rel=1e-13)
    assert float(R.smape(np.array([0.0, 1.0]), np.array([0.0, 0.0]))) == 1.0
    lv = np.array([0.1, 0.5, 0.9])
    qs = y[:, None] + rng.normal(size=(50, 3))
    assert float(R.pinball_loss(qs, y, lv)) == pytest.approx(ref.pinball_loss(qs, y, lv), rel=1e-13)
    assert float(R.pinball_loss(qs, y, lv, sample_weight=w[:50])) == pytest.approx(ref.pinball_loss(qs, y, lv, w[:50]), rel=1e-13)


def test_pinball_over_many_levels_is_half_crps_of_a_gaussian(x64):
    # CRPS(F, y) = 2 ∫_0^1 ρ_α(y - F^{-1}(α)) dα; midpoint rule over 2000 levels.
    ps = pytest.importorskip("properscoring")
    y = np.array([0.3, -1.2, 2.0])
    lv = (np.arange(2000) + 0.5) / 2000
    qs = scipy.stats.norm.ppf(lv)[None, :].repeat(3, 0)
    want = float(np.mean(ps.crps_gaussian(y, 0.0, 1.0)))
    # midpoint-rule error in the tails of ppf: ~1e-5
    assert 2 * float(R.pinball_loss(qs, y, lv)) == pytest.approx(want, abs=1e-4)


def test_metrics_jit_and_vmap(x64):
    u = jnp.asarray(np.stack([_pits(s) for s in range(3)]))
    batched = jax.jit(jax.vmap(R.quantile_calibration_error))(u)
    for i in range(3):
        assert float(batched[i]) == pytest.approx(ref.qce(np.asarray(u[i])), rel=1e-12)
    jax.jit(jax.vmap(R.pit_uniformity))(u)
    jax.jit(jax.vmap(lambda a: R.pit_histogram(a, n_bins=5)))(u)
    jax.jit(jax.vmap(lambda a, b: R.smape(a, b)))(u + 0.1, u)


def test_float32_runs():
    u = jnp.asarray(_pits(0), jnp.float32)
    assert R.quantile_calibration_error(u).dtype == jnp.float32
    assert R.smape(u, u + 1).dtype == jnp.float32


def test_bad_inputs():
    with pytest.raises(ValueError, match="NaN"):
        R.quantile_calibration_error(np.array([0.1, np.nan]))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        R.quantile_calibration_error(np.array([0.1, 1.5]))
    with pytest.raises(ValueError, match="form"):
        R.quantile_calibration_error(np.array([0.1]), form="mean")
    with pytest.raises(ValueError, match="levels"):
        R.quantile_frequencies(np.array([0.1]), levels=np.array([1.2]))
    with pytest.raises(ValueError, match="y_pred"):
        R.smape(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="NaN"):
        R.smape(np.array([1.0, np.nan]), np.ones(2))
    with pytest.raises(ValueError, match="level"):
        R.central_interval_coverage(np.array([0.5]), level=1.5)
    with pytest.raises(ValueError, match="quantiles"):
        R.pinball_loss(np.ones((3, 2)), np.ones(3), np.array([0.5]))
    with pytest.raises(ValueError, match="sample_weight"):
        R.smape(np.ones(3), np.ones(3), sample_weight=np.array([1.0, -1.0, 1.0]))


def test_pit_and_crps_of_piecewise_constant_match_integration(x64):
    from jcalib.distributions import PiecewiseConstant, uniform_edges

    rng = np.random.default_rng(5)
    edges = uniform_edges(8, -1.0, 3.0)
    probs = rng.dirichlet(np.ones(8), size=4)
    probs[1, 2:5] = 0.0
    probs[1] /= probs[1].sum()
    y = np.array([-2.0, 0.3, 1.7, 3.0])
    d = PiecewiseConstant(jnp.asarray(probs), edges)
    u = R.pit(d, y)
    for t in range(4):
        assert float(u[t]) == pytest.approx(ref.piecewise_cdf(probs[t], edges, y[t]), abs=1e-14)
    crps_each = [
        ref.crps_by_integration(lambda z, t=t: ref.piecewise_cdf(probs[t], edges, z), y[t], -3.0, 5.0, edges)
        for t in range(4)
    ]
    # quadrature on smooth pieces: agreement to ~1e-12
    assert float(R.crps_score(d, y)) == pytest.approx(np.mean(crps_each), abs=1e-11)
    w = np.array([1.0, 2.0, 0.0, 1.0])
    assert float(R.crps_score(d, y, sample_weight=w)) == pytest.approx(np.dot(w, crps_each) / w.sum(), abs=1e-11)


def test_crps_of_fine_piecewise_matches_properscoring_gaussian(x64):
    # a Gaussian binned on 4000 bins of [-8, 8]: its CRPS is the Gaussian's to O(width²)
    ps = pytest.importorskip("properscoring")
    from jcalib.distributions import PiecewiseConstant, uniform_edges

    edges = uniform_edges(4000, -8.0, 8.0)
    cdf = scipy.stats.norm.cdf(np.asarray(edges))
    probs = np.diff(cdf) / (cdf[-1] - cdf[0])
    y = np.array([0.0, 1.3, -2.2])
    d = PiecewiseConstant(jnp.asarray(np.tile(probs, (3, 1))), edges)
    want = ps.crps_gaussian(y, 0.0, 1.0)
    # bin width 0.004: the piecewise-linear CDF differs from Φ by O(1e-6); CRPS by O(1e-6)
    np.testing.assert_allclose(np.asarray(d.crps(jnp.asarray(y))), want, atol=1e-5)
    assert float(R.crps_score(d, y)) == pytest.approx(float(np.mean(want)), abs=1e-5)
    # and the PIT values are Φ(y)
    np.testing.assert_allclose(np.asarray(R.pit(d, y)), scipy.stats.norm.cdf(y), atol=1e-6)


def test_gaussian_pit_and_crps_match_properscoring_and_scipy(x64):
    ps = pytest.importorskip("properscoring")
    from jcalib.distributions import Gaussian

    rng = np.random.default_rng(7)
    loc, scale = rng.normal(size=20), rng.uniform(0.2, 3.0, size=20)
    y = rng.normal(size=20) * 2
    d = Gaussian(jnp.asarray(loc), jnp.asarray(scale))
    np.testing.assert_allclose(np.asarray(R.pit(d, y)), scipy.stats.norm.cdf(y, loc, scale), rtol=1e-12, atol=1e-15)
    assert float(R.crps_score(d, y)) == pytest.approx(float(np.mean(ps.crps_gaussian(y, loc, scale))), rel=1e-12)
    u = np.asarray(R.pit(d, y))
    assert float(R.quantile_calibration_error(u)) == pytest.approx(ref.qce(u), rel=1e-12)


def test_crps_score_refuses_empty_outcomes_and_zero_weights():
    from jcalib.distributions import PiecewiseConstant, uniform_edges

    edges = uniform_edges(4)
    with pytest.raises(ValueError, match="y is empty"):  # was NaN
        R.crps_score(PiecewiseConstant(jnp.full((0, 4), 0.25), edges), jnp.zeros(0))
    dist = PiecewiseConstant(jnp.full((2, 4), 0.25), edges)
    with pytest.raises(ValueError, match="sums to zero"):
        R.crps_score(dist, jnp.array([0.2, 0.7]), sample_weight=jnp.zeros(2))


# --- miscalibration area (Chung et al. 2021) ------------------------------------------------


def _gaussian_forecasts(seed):
    """Gaussian means, standard deviations and outcomes, mis-scaled and shifted per seed."""
    rng = np.random.default_rng(seed)
    n = (5, 60, 300)[seed % 3]  # three shapes: few compilations
    mu, sd = rng.normal(size=n), rng.uniform(0.3, 2.0, n)
    y = rng.normal(size=n) * rng.uniform(0.3, 3.0) + rng.uniform(-1.0, 1.0)
    return mu, sd, y


@pytest.mark.parametrize("kind", ["interval", "quantile"])
def test_miscalibration_area_matches_uncertainty_toolbox(x64, kind):
    """Same Gaussian forecasts: jcalib from the PIT values Φ((y - μ)/σ), uncertainty-toolbox from
    (μ, σ, y) with its loop and its vectorised proportions. (Importing and running
    uncertainty_toolbox.metrics_calibration raises no warning here, so nothing is filtered.)"""
    mc = pytest.importorskip("uncertainty_toolbox.metrics_calibration")  # test extra
    from jcalib.distributions import Gaussian

    worst = 0.0
    for seed in range(6):
        mu, sd, y = _gaussian_forecasts(seed)
        u = R.pit(Gaussian(jnp.asarray(mu), jnp.asarray(sd)), jnp.asarray(y))
        for n_levels in (2, 7, 100):
            got = float(R.miscalibration_area(u, n_levels=n_levels, kind=kind))
            for vectorized in (False, True):
                want = mc.miscalibration_area(mu, sd, y, num_bins=n_levels, prop_type=kind, vectorized=vectorized)
                worst = max(worst, abs(got - want))
    # float rounding only: the same 0/1 proportions, a sum of at most 99 segment areas computed in
    # a different order (uncertainty-toolbox splits crossings at a line intersection)
    assert worst <= 1e-15, worst


def test_miscalibration_area_matches_reference_with_weights(x64):
    u = _pits(4, n=150)
    w = np.random.default_rng(4).uniform(0.0, 2.0, size=u.shape[0])
    for kind in ("interval", "quantile"):
        for n_levels in (2, 11, 100):
            want = ref_area.miscalibration_area(u, n_levels, kind, w)
            got = float(R.miscalibration_area(u, n_levels=n_levels, kind=kind, sample_weight=w))
            assert got == pytest.approx(want, rel=1e-12, abs=1e-15)
    # integer weights are repetitions
    k = np.random.default_rng(5).integers(0, 4, size=u.shape[0])
    got = R.miscalibration_area(u, kind="quantile", sample_weight=k.astype(float))
    assert float(got) == pytest.approx(float(R.miscalibration_area(np.repeat(u, k), kind="quantile")), rel=1e-12)


def test_miscalibration_area_tends_to_the_integral_of_the_curve_gap(x64):
    """Chung et al.: as the grid refines, the area tends to ∫|o(ℓ) - ℓ| dℓ, the limit of the mean
    absolute calibration error; the trapezoids miss at most the jumps of o, O(1/K) in all."""
    u = _pits(6, n=60)
    exact = ref_area.exact_quantile_area(u)
    for n_levels in (101, 1001, 10001):
        err = abs(float(R.miscalibration_area(u, n_levels=n_levels, kind="quantile")) - exact)
        assert err <= 2.0 / (n_levels - 1), (n_levels, err)  # each of the 60 jumps of 1/60 costs < h/2
    mace = float(R.quantile_calibration_error(u, levels=jnp.asarray(np.arange(1, 10000) / 10000), form="mean_abs"))
    assert mace == pytest.approx(exact, abs=2e-4)
    # a calibrated sample scores about 0; every outcome at the median scores the maximum 1/2
    assert float(R.miscalibration_area((np.arange(1000) + 0.5) / 1000, kind="quantile")) < 1e-3
    assert float(R.miscalibration_area(np.full(9, 0.5))) == pytest.approx(0.5)


def test_miscalibration_area_jit_vmap_no_retrace_and_permutation(x64):
    import chex

    u = jnp.asarray(np.stack([_pits(s) for s in range(4)]))
    w = jnp.asarray(np.random.default_rng(0).integers(0, 3, size=u.shape).astype(float))
    chex.clear_trace_counter()

    @jax.jit
    @chex.assert_max_traces(n=1)
    def batched(u, w):
        return jax.vmap(lambda a, b: R.miscalibration_area(a, n_levels=50, sample_weight=b))(u, w)

    out = batched(u, w)
    batched(u * 1.0, w + 0.0)  # new values, same shapes: no retrace
    for i in range(4):
        want = ref_area.miscalibration_area(np.asarray(u[i]), 50, "interval", np.asarray(w[i]))
        assert float(out[i]) == pytest.approx(want, rel=1e-12)
    perm = np.random.default_rng(1).permutation(u.shape[1])
    for kind in ("interval", "quantile"):  # _pits has exact ties with grid points
        a = R.miscalibration_area(u[0], kind=kind, sample_weight=w[0])
        b = R.miscalibration_area(u[0][perm], kind=kind, sample_weight=w[0][perm])
        assert float(a) == pytest.approx(float(b), rel=1e-13)
    assert R.miscalibration_area(jnp.asarray(u[0], jnp.float32)).dtype == jnp.float32


def test_miscalibration_area_bad_inputs():
    u = np.array([0.2, 0.6])
    with pytest.raises(ValueError, match="n_levels"):
        R.miscalibration_area(u, n_levels=1)
    with pytest.raises(ValueError, match="n_levels"):
        R.miscalibration_area(u, n_levels=2.5)
    with pytest.raises(ValueError, match="kind"):
        R.miscalibration_area(u, kind="central")
    with pytest.raises(ValueError, match="pit_values"):
        R.miscalibration_area(np.array([0.2, 1.2]))
    with pytest.raises(ValueError, match="NaN"):
        R.miscalibration_area(np.array([0.2, np.nan]))
    with pytest.raises(ValueError, match="sample_weight"):
        R.miscalibration_area(u, sample_weight=np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="sample_weight"):
        R.miscalibration_area(u, sample_weight=np.zeros(2))


def test_docstring_examples():
    import doctest

    with jax.numpy_dtype_promotion("standard"):  # as a user runs them (not the suite's strict promotion)
        assert doctest.testmod(R, raise_on_error=True).attempted > 0
