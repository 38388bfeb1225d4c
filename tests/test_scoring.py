"""Scoring rules: propriety, the stated Lipschitz constants, closed forms and bad input; the
ensemble, interval, ordinal and parametric scores against properscoring, scoringrules and the
plain references of ``tests/reference/scoring.py``."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import properscoring as ps
import pytest
import scoringrules as sr
from scipy import stats

from jcalib import scoring
from reference import scoring as ref

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
    with pytest.raises(TypeError, match="dist must be a jcalib.distributions.AbstractDistribution"):
        scoring.crps(0.5, 1.0)


def test_incomplete_scoring_rule_cannot_be_instantiated():
    from jcalib.scoring import AbstractScoringRule

    class NoLipschitz(AbstractScoringRule):
        def __call__(self, p, y):
            return (p - y) ** 2

    with pytest.raises(TypeError, match="abstract.*lipschitz"):
        NoLipschitz()


@pytest.mark.parametrize("rule", [scoring.Brier(), scoring.LogScore(), scoring.Spherical()])
@pytest.mark.parametrize("p, y, match", [(-0.5, 0, "probs must lie"), (1.5, 1, "probs must lie"), (float("nan"), 1, "NaN"), (0.3, 2, "y must be 0 or 1"), (0.3, 0.5, "y must be 0 or 1")])
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


# ---------------------------------------------------------------------------------------------
# Ensembles, ordered categories, intervals, parametric CRPS: peers, references, propriety


def _inputs(seed=0, n=60, m=9, K=4):
    """Random forecasts and outcomes (float64 NumPy), members and levels included, with ties."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, m)) * rng.uniform(0.3, 2.0, (n, 1)) + rng.normal(size=(n, 1))
    x[0, :3] = x[0, 3]  # tied members
    y = rng.normal(size=n) * 1.5
    y[1] = x[1, 2]  # an outcome on a member
    alphas = np.sort(rng.uniform(0.02, 0.9, K))
    med = y + rng.normal(size=n)
    half = np.sort(rng.uniform(0.1, 2.0, (n, K)), axis=1)[:, ::-1]  # wider for smaller alpha
    return dict(
        x=x, y=y, w=rng.uniform(0.0, 1.0, (n, m)), probs=rng.dirichlet(np.ones(5), n), labels=rng.integers(0, 5, n),
        lo=y - rng.normal(size=n) - 0.5, width=rng.uniform(0, 2, n), alpha=rng.uniform(0.05, 0.95, n),
        med=med, lower=med[:, None] - half, upper=med[:, None] + half * rng.uniform(0.5, 1.5, (n, K)), alphas=alphas,
        a=rng.uniform(0.2, 6, n), b=rng.uniform(0.2, 6, n), u=rng.uniform(0, 1, n), shape=rng.uniform(0.1, 12, n),
        rate=rng.uniform(0.2, 3, n), g=rng.gamma(2.0, 1.5, n), df=rng.uniform(1.1, 40, n), loc=rng.normal(size=n),
        scale=rng.uniform(0.3, 3, n), lam=rng.uniform(0.05, 30, n),
    )


def _wis_sr(d, **kw):
    # scoringrules 0.10.0's NumPy backend adds w_median * median where Bracher et al.'s Eq. 2 (and
    # its own numba kernel) has w_median * |y - median|; undo that term to compare the rest
    w0 = kw.get("w_median", 0.5)
    K = len(d["alphas"])
    out = sr.weighted_interval_score(d["y"], d["med"], d["lower"], d["upper"], d["alphas"], **kw)
    return out + w0 * (np.abs(d["y"] - d["med"]) - d["med"]) / (K + 0.5)


# (name, jcalib, peer); relative tolerance: the peers compute the same closed forms with SciPy's
# special functions (betainc, gammainc, the t CDF, i0e/i1e) where jcalib uses XLA's, and sum in
# another order: measured agreement 1e-15 (sums) to 3e-12 (Poisson), asserted at 1e-10
PEER_CASES = {
    "crps_ensemble/properscoring": (lambda d: scoring.crps_ensemble(d["x"], d["y"]), lambda d: ps.crps_ensemble(d["y"], d["x"])),
    "crps_ensemble+weights/properscoring": (
        lambda d: scoring.crps_ensemble(d["x"], d["y"], member_weights=d["w"]), lambda d: ps.crps_ensemble(d["y"], d["x"], weights=d["w"])),
    "crps_ensemble/scoringrules-nrg": (lambda d: scoring.crps_ensemble(d["x"], d["y"]), lambda d: sr.crps_ensemble(d["y"], d["x"], estimator="nrg")),
    "crps_ensemble+weights/scoringrules-nrg": (
        lambda d: scoring.crps_ensemble(d["x"], d["y"], member_weights=d["w"]), lambda d: sr.crps_ensemble(d["y"], d["x"], ens_w=d["w"], estimator="nrg")),
    "crps_ensemble-fair/scoringrules": (
        lambda d: scoring.crps_ensemble(d["x"], d["y"], estimator="fair"), lambda d: sr.crps_ensemble(d["y"], d["x"], estimator="fair")),
    "crps_ensemble-fair+weights/scoringrules": (
        lambda d: scoring.crps_ensemble(d["x"], d["y"], member_weights=d["w"], estimator="fair"),
        lambda d: sr.crps_ensemble(d["y"], d["x"], ens_w=d["w"], estimator="fair")),
    "twcrps_ensemble/scoringrules": (
        lambda d: scoring.twcrps_ensemble(d["x"], d["y"], lower=-0.5, upper=1.0), lambda d: sr.twcrps_ensemble(d["y"], d["x"], -0.5, 1.0, estimator="nrg")),
    "twcrps_ensemble-fair/scoringrules": (
        lambda d: scoring.twcrps_ensemble(d["x"], d["y"], lower=0.2, estimator="fair"), lambda d: sr.twcrps_ensemble(d["y"], d["x"], 0.2, estimator="fair")),
    # scoringrules numbers the categories from 1
    "rps/scoringrules": (lambda d: scoring.rps(d["probs"], d["labels"]), lambda d: sr.rps_score(d["labels"] + 1, d["probs"])),
    "interval_score/scoringrules": (
        lambda d: scoring.interval_score(d["lo"], d["lo"] + d["width"], d["y"], d["alpha"]),
        lambda d: np.array([sr.interval_score(y, lo, lo + w, a) for y, lo, w, a in zip(d["y"], d["lo"], d["width"], d["alpha"])])),
    "interval_score-K/scoringrules": (
        lambda d: scoring.interval_score(d["lower"], d["upper"], d["y"][:, None], d["alphas"]),
        lambda d: sr.interval_score(d["y"], d["lower"], d["upper"], d["alphas"])),
    "weighted_interval_score/scoringrules": (
        lambda d: scoring.weighted_interval_score(d["med"], d["lower"], d["upper"], d["y"], d["alphas"]), _wis_sr),
    "weighted_interval_score-w/scoringrules": (
        lambda d: scoring.weighted_interval_score(d["med"], d["lower"], d["upper"], d["y"], d["alphas"], weights=d["alphas"] ** 0.5, median_weight=0.2),
        lambda d: _wis_sr(d, w_median=0.2, w_alpha=d["alphas"] ** 0.5)),
    "weighted_interval_score-no-median/scoringrules": (
        lambda d: scoring.weighted_interval_score(d["med"], d["lower"], d["upper"], d["y"], d["alphas"], median_weight=0.0),
        lambda d: sr.weighted_interval_score(d["y"], d["med"], d["lower"], d["upper"], d["alphas"], w_median=0.0)),
    "crps_beta/scoringrules": (lambda d: scoring.crps_beta(d["a"], d["b"], d["u"]), lambda d: sr.crps_beta(d["u"], d["a"], d["b"])),
    "crps_beta-rescaled/scoringrules": (
        lambda d: scoring.crps_beta(d["a"], d["b"], 3 * d["u"] - 1, lower=-1.0, upper=2.0),
        lambda d: sr.crps_beta(3 * d["u"] - 1, d["a"], d["b"], -1.0, 2.0)),
    "crps_gamma/scoringrules": (lambda d: scoring.crps_gamma(d["shape"], d["rate"], d["g"]), lambda d: sr.crps_gamma(d["g"], d["shape"], d["rate"])),
    "crps_t/scoringrules": (
        lambda d: scoring.crps_t(d["df"], d["loc"], d["scale"], d["y"]), lambda d: sr.crps_t(d["y"], d["df"], d["loc"], d["scale"])),
    "crps_poisson/scoringrules": (
        lambda d: scoring.crps_poisson(d["lam"], np.floor(d["lam"] + d["y"] * np.sqrt(d["lam"]))),
        lambda d: sr.crps_poisson(np.floor(d["lam"] + d["y"] * np.sqrt(d["lam"])), d["lam"])),
    "crps_poisson-real-y/scoringrules": (
        lambda d: scoring.crps_poisson(d["lam"], d["lam"] + d["y"]), lambda d: sr.crps_poisson(d["lam"] + d["y"], d["lam"])),
}


def peer_differences(seed=0):
    """``{case: (max abs, max rel difference)}`` of jcalib against its peer (float64); the
    relative one where the peer's score exceeds 1e-12 (a twCRPS whose members and outcome all
    sit beyond a threshold is 0 up to round-off on both sides)."""
    out = {}
    with jax.enable_x64(True):
        d = _inputs(seed)
        for name, (ours, theirs) in PEER_CASES.items():
            a, b = np.asarray(ours(d), np.float64), np.asarray(theirs(d), np.float64)
            assert a.shape == b.shape, (name, a.shape, b.shape)
            diff = np.abs(a - b)
            big = np.abs(b) > 1e-12
            out[name] = (float(diff.max()), float(np.max(diff[big] / np.abs(b[big]))))
    return out


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])  # a second draw: slow
def test_parity_with_properscoring_and_scoringrules(seed):
    for name, (abs_diff, rel_diff) in peer_differences(seed).items():
        assert rel_diff <= 1e-10 and abs_diff <= 1e-10, (name, abs_diff, rel_diff)


def test_crps_of_gaussian_sanity_against_properscoring(x64):
    # a large ensemble of Gaussian quantiles scores as the Gaussian's closed form (properscoring's
    # crps_gaussian) up to the discretisation, O(1/m)
    m = 4000
    x = stats.norm.ppf((np.arange(m) + 0.5) / m)
    for y in (-2.0, 0.0, 0.7, 3.5):
        assert float(scoring.crps_ensemble(x, y)) == pytest.approx(ps.crps_gaussian(y, 0.0, 1.0), abs=2e-4)


def test_ensemble_matches_the_double_sum_and_the_integral(x64):
    d = _inputs(3, n=12, m=7)
    for i in range(12):
        x, y, w = d["x"][i], d["y"][i], d["w"][i]
        assert float(scoring.crps_ensemble(x, y)) == pytest.approx(ref.crps_ensemble(x, y), rel=1e-12)
        assert float(scoring.crps_ensemble(x, y)) == pytest.approx(ref.crps_step(x, np.ones(7), y), rel=1e-12)
        assert float(scoring.crps_ensemble(x, y, member_weights=w)) == pytest.approx(ref.crps_step(x, w, y), rel=1e-12)
        assert float(scoring.crps_ensemble(x, y, member_weights=w, estimator="fair")) == pytest.approx(ref.crps_ensemble(x, y, w, fair=True), rel=1e-12)
        # the chaining identity: twCRPS is the CRPS integral over [a, b] only
        tw = float(scoring.twcrps_ensemble(x, y, lower=-0.3, upper=0.8, member_weights=w))
        assert tw == pytest.approx(ref.crps_step(x, w, y, -0.3, 0.8), rel=1e-12, abs=1e-15)


def test_ensemble_axis_and_member_weight_shapes(x64):
    d = _inputs(4, n=5, m=6)
    x, y, w = d["x"], d["y"], d["w"]
    base = scoring.crps_ensemble(x, y, member_weights=w)
    np.testing.assert_allclose(scoring.crps_ensemble(x.T, y, member_weights=w.T, axis=0), base, rtol=1e-14)
    np.testing.assert_allclose(
        scoring.crps_ensemble(x.T, y, member_weights=w[0], axis=0),
        [ref.crps_ensemble(x[i], y[i], w[0]) for i in range(5)], rtol=1e-12)
    # one ensemble, many outcomes (broadcast)
    np.testing.assert_allclose(scoring.crps_ensemble(x[0], y), [ref.crps_ensemble(x[0], v) for v in y], rtol=1e-12)


def test_rps_interval_and_wis_match_loops(x64):
    d = _inputs(5, n=20)
    np.testing.assert_allclose(scoring.rps(d["probs"], d["labels"]), [ref.rps(p, k) for p, k in zip(d["probs"], d["labels"])], rtol=1e-13)
    hi = d["lo"] + d["width"]
    np.testing.assert_allclose(
        scoring.interval_score(d["lo"], hi, d["y"], d["alpha"]),
        [ref.interval_score(*v) for v in zip(d["lo"], hi, d["y"], d["alpha"])], rtol=1e-13)
    np.testing.assert_allclose(
        scoring.weighted_interval_score(d["med"], d["lower"], d["upper"], d["y"], d["alphas"]),
        [ref.weighted_interval_score(m, lo, up, y, d["alphas"]) for m, lo, up, y in zip(d["med"], d["lower"], d["upper"], d["y"])],
        rtol=1e-13)


def test_wis_is_the_mean_pinball_loss_at_the_2k_plus_1_levels(x64):
    # Bracher et al. (2021): with w_0 = 1/2, w_k = alpha_k/2, WIS equals the pinball losses of the
    # 2K + 1 quantiles (levels alpha_k/2, 1/2, 1 - alpha_k/2) summed, times 2/(2K + 1)
    d = _inputs(6, n=30)
    al = d["alphas"]
    pin = scoring.pinball(d["med"], d["y"], 0.5) + sum(
        scoring.pinball(d["lower"][:, k], d["y"], al[k] / 2) + scoring.pinball(d["upper"][:, k], d["y"], 1 - al[k] / 2) for k in range(len(al)))
    wis = scoring.weighted_interval_score(d["med"], d["lower"], d["upper"], d["y"], al)
    np.testing.assert_allclose(wis, 2 * pin / (2 * len(al) + 1), rtol=1e-13)


# The parametric closed forms against the CRPS integral (tests/reference/scoring.py), outcomes in
# the tails and outside the support included; relative tolerance 1e-10: adaptive quadrature to
# epsrel 1e-11 of integrands with kinks (the support's ends, y) and heavy tails (t, df near 1);
# measured agreement 3e-13 at worst (Poisson, an exact sum of 10² steps)
QUAD_CASES = [
    ("beta", (0.7, 1.3), (-0.5, 0.0, 1e-6, 0.31, 0.999, 1.0, 2.5)),
    ("beta", (40.0, 25.0), (0.1, 0.6, 0.95)),
    ("beta", (0.05, 0.3), (0.2, 0.9)),
    ("gamma", (0.3, 2.0), (-1.0, 0.0, 1e-5, 0.4, 30.0)),
    ("gamma", (8.0, 0.5), (0.5, 16.0, 80.0)),
    ("t", (1.3, 0.5, 2.0), (-300.0, -2.0, 0.5, 4.0, 1e3)),
    ("t", (4.0, -1.0, 0.5), (-1.0, 0.0, 25.0)),
    ("t", (300.0, 0.0, 1.0), (-3.0, 0.2, 6.0)),
    ("poisson", (0.2,), (-3.0, 0.0, 0.5, 1.0, 7.0)),
    ("poisson", (13.5,), (0.0, 9.0, 13.2, 14.0, 40.0)),
]


@pytest.mark.parametrize("family, params, ys", QUAD_CASES)
def test_parametric_crps_matches_the_integral(x64, family, params, ys):
    ours = {"beta": scoring.crps_beta, "gamma": scoring.crps_gamma, "t": scoring.crps_t, "poisson": scoring.crps_poisson}[family]
    want = {"beta": ref.crps_beta, "gamma": ref.crps_gamma, "t": ref.crps_t, "poisson": ref.crps_poisson}[family]
    got = np.asarray(ours(*params, np.asarray(ys)))
    np.testing.assert_allclose(got, [want(*params, y) for y in ys], rtol=1e-10)


def test_rescaled_beta_matches_the_integral(x64):
    for y in (-4.0, -2.0, 0.3, 5.0, 9.0):
        got = float(scoring.crps_beta(2.5, 0.8, y, lower=-2.0, upper=5.0))
        assert got == pytest.approx(ref.crps_beta(2.5, 0.8, y, -2.0, 5.0), rel=1e-10)  # quadrature, as above


@pytest.mark.slow  # a quadrature per point: ~10 s
def test_parametric_crps_matches_the_integral_on_random_inputs(x64):
    d = _inputs(7, n=40)
    for i in range(40):
        a, b, sh, ra, df, lo, sc, lam, y = (d[k][i] for k in ("a", "b", "shape", "rate", "df", "loc", "scale", "lam", "y"))
        assert float(scoring.crps_beta(a, b, 0.5 + y / 3)) == pytest.approx(ref.crps_beta(a, b, 0.5 + y / 3), rel=1e-10)
        assert float(scoring.crps_gamma(sh, ra, abs(y) * sh / ra)) == pytest.approx(ref.crps_gamma(sh, ra, abs(y) * sh / ra), rel=1e-10)
        assert float(scoring.crps_t(df, lo, sc, y)) == pytest.approx(ref.crps_t(df, lo, sc, y), rel=1e-10)
        assert float(scoring.crps_poisson(lam, lam + 3 * y)) == pytest.approx(ref.crps_poisson(lam, lam + 3 * y), rel=1e-10)


@pytest.mark.slow  # compiles the reverse mode of four special-function kernels in float64: ~8 s
def test_gradients_are_finite_and_right(x64):
    # dCRPS/dy = 2F(y) - 1 for a continuous F, at the support's ends and outside it too; the
    # parameters' gradients against central differences (step 1e-6: error ~1e-10, asserted 1e-7)
    cases = [
        (lambda y: scoring.crps_beta(2.0, 1.5, y), stats.beta(2.0, 1.5).cdf, (-1.0, 0.0, 0.3, 1.0, 1.7)),
        (lambda y: scoring.crps_gamma(0.5, 1.5, y), stats.gamma(0.5, scale=1 / 1.5).cdf, (-1.0, 0.0, 0.2, 3.0)),
        (lambda y: scoring.crps_t(3.0, 0.5, 2.0, y), stats.t(3.0, 0.5, 2.0).cdf, (-40.0, 0.5, 0.5 + 1e-16, 2.0)),
    ]
    for f, cdf, ys in cases:
        for y in ys:
            assert float(jax.grad(f)(y)) == pytest.approx(2 * cdf(y) - 1, abs=1e-12)
    params = [
        (lambda v: scoring.crps_gamma(v, 1.5, 1.2), 2.0), (lambda v: scoring.crps_gamma(2.0, v, 1.2), 1.5),
        (lambda v: scoring.crps_gamma(2.0, v, -1.0), 1.5), (lambda v: scoring.crps_t(4.0, v, 1.0, 0.7), 0.1),
        (lambda v: scoring.crps_t(4.0, 0.0, v, 0.7), 1.3), (lambda v: scoring.crps_t(4.0, 0.0, v, 0.0), 1.3),
        (lambda v: scoring.crps_poisson(v, 3.0), 2.5), (lambda v: scoring.crps_poisson(v, -1.0), 2.5),
        (lambda v: scoring.crps_beta(2.0, 3.0, 0.4, lower=v), -0.5),
    ]
    for f, v in params:
        fd = (float(f(v + 1e-6)) - float(f(v - 1e-6))) / 2e-6
        assert float(jax.grad(f)(v)) == pytest.approx(fd, abs=1e-7)
    with pytest.raises(ValueError, match="Betainc gradient"):  # JAX's own limit, documented
        jax.grad(lambda a: scoring.crps_beta(a, 3.0, 0.4))(2.0)


def test_t_with_many_degrees_of_freedom(x64):
    # past the switch to Fisher's expansion (df >= 1e4 in float64, >= 100 in float32) the score
    # agrees with the CRPS integral to 1e-10 in float64 (measured 2e-12; the expansion's O(df⁻³)
    # error is below 6e-13 there) and to 3e-6 in float32 (a few float32 roundings); XLA's float32
    # betainc alone was off by 1e-3 at df = 1e4 and by 26% at 1e9. (scoringrules drifts here:
    # its B(1/2, df/2)² from SciPy's beta is off by 4e-10 at df = 1e5, 4e-9 at 1e8.)
    z = np.array([-6.0, -1.0, 0.0, 0.5, 3.0])
    for df in (5e3, 1e4, 1e5, 1e8):
        np.testing.assert_allclose(scoring.crps_t(df, 0.0, 1.0, z), [ref.crps_t(df, 0.0, 1.0, v) for v in z], rtol=1e-10)
    z32 = z.astype(np.float32)
    # below the switch, XLA's float32 betainc: 1.1e-5 relative at df = 99, asserted at 2e-5
    for df, rtol in ((20.0, 2e-5), (99.0, 2e-5), (100.0, 3e-6), (1e3, 3e-6), (1e5, 3e-6), (1e9, 3e-6)):
        with jax.enable_x64(False):
            got = scoring.crps_t(np.float32(df), np.float32(0), np.float32(1), z32)
        assert got.dtype == jnp.float32
        np.testing.assert_allclose(np.asarray(got), [ref.crps_t(df, 0.0, 1.0, float(v)) for v in z32], rtol=rtol, err_msg=str(df))


def test_gamma_and_poisson_with_large_shape_or_mean(x64):
    # from shape 20 (float32) / 1e4 (float64) on, P and Q come from Temme's expansion instead of
    # XLA's igamma (float32: 6e-5 off at 1e3, 0.4 at 1e6). Against the CRPS integral and the exact
    # Poisson sum: 1e-10 in float64 (measured 7e-13), 1e-5 in float32 (measured 6e-6 at 1e4);
    # scoringrules' Poisson score overflows to NaN from mean 1000 on, its gamma drifts (5e-11 at 2e4)
    z = np.array([-4.0, -1.0, 0.0, 0.5, 3.0])
    for a in (50.0, 1e3, 2e4):
        y = a + np.sqrt(a) * z
        np.testing.assert_allclose(scoring.crps_gamma(a, 1.0, y), [ref.crps_gamma(a, 1.0, v) for v in y], rtol=1e-10)
        k = np.floor(y)
        np.testing.assert_allclose(scoring.crps_poisson(a, k), [ref.crps_poisson(a, v) for v in k], rtol=1e-10)
    for a in (30.0, 1e3, 1e4):
        y32, a32 = (a + np.sqrt(a) * z).astype(np.float32), np.float32(a)
        with jax.enable_x64(False):
            g, p = scoring.crps_gamma(a32, np.float32(1), y32), scoring.crps_poisson(a32, np.floor(y32))
        assert g.dtype == p.dtype == jnp.float32
        np.testing.assert_allclose(np.asarray(g), [ref.crps_gamma(a, 1.0, float(v)) for v in y32], rtol=1e-5)
        np.testing.assert_allclose(np.asarray(p), [ref.crps_poisson(a, float(v)) for v in np.floor(y32)], rtol=1e-5)


def test_t_tends_to_the_gaussian_and_far_tails_stay_finite():
    # float32: df = 1e7 scores the Gaussian's CRPS (to float32's 1e-6 after a few operations),
    # and |z| = 1e30 (z² overflows) scores |z|
    g = float(ps.crps_gaussian(0.0, 0.0, 1.0))
    assert float(scoring.crps_t(1e7, 0.0, 1.0, 0.0)) == pytest.approx(g, rel=1e-5)
    far = np.asarray(scoring.crps_t(3.0, 0.0, 1.0, jnp.array([-1e30, 1e30], jnp.float32)))
    np.testing.assert_allclose(far, 1e30, rtol=1e-6)
    assert np.all(np.isfinite(np.asarray(scoring.crps_gamma(0.5, 1.0, jnp.array([0.0, 1e-30, 1e30])))))
    assert np.all(np.isfinite(np.asarray(scoring.crps_poisson(1e4, jnp.array([0.0, 1e4, 1e8])))))


# float32 against float64 of the same (float32-rounded) inputs, on moderate parameters (shapes,
# df and means up to ~40): XLA's float32 incomplete beta and gamma lose accuracy roughly in
# proportion to the shape parameter, so the tolerance is 2e-5 relative
def test_float32_agrees_with_float64():
    d = _inputs(8)
    calls = {
        "beta": lambda d: scoring.crps_beta(d["a"], d["b"], d["u"]),
        "gamma": lambda d: scoring.crps_gamma(d["shape"], d["rate"], d["g"]),
        "t": lambda d: scoring.crps_t(d["df"], d["loc"], d["scale"], d["y"]),
        "poisson": lambda d: scoring.crps_poisson(d["lam"], np.floor(d["lam"] + d["y"])),
        "ensemble": lambda d: scoring.crps_ensemble(d["x_far"], d["y_far"], member_weights=d["w"]),
    }
    d.update(x_far=d["x"] + 1e3, y_far=d["y"] + 1e3)  # centred at the outcome: no digits lost
    for name, f in calls.items():
        d32 = {k: (v.astype(np.float32) if v.dtype == np.float64 else v) for k, v in d.items()}
        lo = f(d32)
        assert lo.dtype == jnp.float32, name
        with jax.enable_x64(True):
            hi = f({k: (v.astype(np.float64) if v.dtype == np.float32 else v) for k, v in d32.items()})
            assert hi.dtype == jnp.float64, name
        np.testing.assert_allclose(np.asarray(lo), np.asarray(hi), rtol=2e-5, err_msg=name)


def test_fair_estimator_is_unbiased_and_the_standard_one_is_not(x64):
    # Ferro (2014): over ensembles of m draws from F, the fair score's mean is the CRPS of F
    # itself; the standard one adds E|X - X'|/(2m). N(0, 1) against y ~ N(0, 1): E CRPS = 1/sqrt(pi).
    n, m = 40000, 5
    x = jax.random.normal(jax.random.key(1), (n, m), jnp.float64)
    y = jax.random.normal(jax.random.key(2), (n,), jnp.float64)
    fair = float(jnp.mean(scoring.crps_ensemble(x, y, estimator="fair")))
    std = float(jnp.mean(scoring.crps_ensemble(x, y)))
    truth = 1 / np.sqrt(np.pi)
    # standard error of the mean of these scores: ~0.45/sqrt(40000) = 0.0023; 4 s.e.
    assert abs(fair - truth) < 0.01
    assert abs(std - (truth + (2 / np.sqrt(np.pi)) / (2 * m))) < 0.01
    # with common random numbers, the fair score ranks ensembles of N(0, s²) by the true CRPS,
    # lowest at the true s = 1
    scales = np.array([0.7, 0.85, 1.0, 1.15, 1.3])
    risk = [float(jnp.mean(scoring.crps_ensemble(s * x, y, estimator="fair"))) for s in scales]
    assert scales[int(np.argmin(risk))] == 1.0


def _risk(score, dist, n=2000):
    """$\\mathbb E_{y \\sim F} S(y) = \\int_0^1 S(F^{-1}(u)) du$ by the midpoint rule (the same
    outcomes for every candidate forecast, so their risks are compared without noise)."""
    return float(jnp.mean(score(jnp.asarray(dist.ppf((np.arange(n) + 0.5) / n)))))


def test_parametric_crps_is_proper(x64):
    # the expected score under the true distribution is lowest at the true parameters, against
    # neighbours in each direction
    cases = [
        (lambda p: lambda y: scoring.crps_beta(*p, y), (2.0, 3.0), [(1.7, 3.0), (2.3, 3.0), (2.0, 2.6), (2.0, 3.5)], stats.beta(2.0, 3.0)),
        (lambda p: lambda y: scoring.crps_gamma(*p, y), (3.0, 2.0), [(2.5, 2.0), (3.5, 2.0), (3.0, 1.7), (3.0, 2.3)], stats.gamma(3.0, scale=0.5)),
        (lambda p: lambda y: scoring.crps_t(*p, y), (4.0, 0.0, 1.0),
         [(2.5, 0.0, 1.0), (8.0, 0.0, 1.0), (4.0, 0.2, 1.0), (4.0, 0.0, 0.8), (4.0, 0.0, 1.2)], stats.t(4.0)),
    ]
    for make, truth, others, dist in cases:
        best = _risk(make(truth), dist)
        for p in others:
            assert _risk(make(p), dist) > best, (truth, p)
    k = np.arange(0, 80.0)
    pk = stats.poisson(6.0).pmf(k)
    risks = {lam: float(np.sum(pk * np.asarray(scoring.crps_poisson(lam, k)))) for lam in (5.0, 5.5, 6.0, 6.5, 7.0)}
    assert min(risks, key=risks.get) == 6.0


def test_rps_and_interval_score_are_proper(x64):
    rng = np.random.default_rng(9)
    q = rng.dirichlet(np.ones(4))
    labels = np.arange(4)
    risk = lambda p: float(np.sum(q * np.asarray(scoring.rps(np.tile(p, (4, 1)), labels))))  # noqa: E731
    for _ in range(50):
        assert risk(rng.dirichlet(np.ones(4))) > risk(q)
    # the empirical interval-score risk is minimised at the empirical alpha/2 and 1 - alpha/2
    # quantiles (to the candidate spacing)
    ys = rng.normal(size=4000)
    cands = np.linspace(-3, 3, 601)
    alpha = 0.2
    hi = np.quantile(ys, 1 - alpha / 2)
    risk_lo = jax.vmap(lambda c: jnp.mean(scoring.interval_score(jnp.minimum(c, hi), hi, jnp.asarray(ys), alpha)))(jnp.asarray(cands))
    assert abs(cands[int(jnp.argmin(risk_lo))] - np.quantile(ys, alpha / 2)) <= 0.011


# ---------------------------------------------------------------------------------------------
# Conformance: jit, vmap over a batch axis, no retrace; dtype follows the inputs

_B, _N = 3, 8
_R = np.random.default_rng(11)
BATCHED = {
    "crps_ensemble": (lambda x, y: scoring.crps_ensemble(x, y), (_R.normal(size=(_B, _N, 5)), _R.normal(size=(_B, _N)))),
    "crps_ensemble_fair_weighted": (
        lambda x, y, w: scoring.crps_ensemble(x, y, member_weights=w, estimator="fair"),
        (_R.normal(size=(_B, _N, 5)), _R.normal(size=(_B, _N)), _R.uniform(0.1, 1, (_B, _N, 5)))),
    "twcrps_ensemble": (lambda x, y: scoring.twcrps_ensemble(x, y, lower=-0.5, upper=1.0), (_R.normal(size=(_B, _N, 5)), _R.normal(size=(_B, _N)))),
    "rps": (scoring.rps, (_R.dirichlet(np.ones(4), (_B, _N)), _R.integers(0, 4, (_B, _N)))),
    "interval_score": (lambda lo, y: scoring.interval_score(lo, lo + 1, y, 0.1), (_R.normal(size=(_B, _N)), _R.normal(size=(_B, _N)))),
    "weighted_interval_score": (
        lambda m, y: scoring.weighted_interval_score(m, m[:, None] - jnp.array([[1.0, 0.5]]), m[:, None] + jnp.array([[1.0, 0.5]]), y, jnp.array([0.2, 0.6])),
        (_R.normal(size=(_B, _N)), _R.normal(size=(_B, _N)))),
    "crps_beta": (lambda a, y: scoring.crps_beta(a, 2.0, y), (_R.uniform(0.5, 3, (_B, _N)), _R.uniform(-0.2, 1.2, (_B, _N)))),
    "crps_gamma": (lambda s, y: scoring.crps_gamma(s, 1.5, y), (_R.uniform(0.5, 3, (_B, _N)), _R.uniform(0, 5, (_B, _N)))),
    "crps_t": (lambda df, y: scoring.crps_t(df, 0.0, 1.0, y), (_R.uniform(1.5, 9, (_B, _N)), _R.normal(size=(_B, _N)))),
    "crps_poisson": (lambda lam, y: scoring.crps_poisson(lam, y), (_R.uniform(0.5, 9, (_B, _N)), _R.integers(0, 9, (_B, _N)).astype(float))),
}


@pytest.mark.parametrize("name", sorted(BATCHED))
def test_new_scores_jit_vmap_no_retrace(name):
    fn, args = BATCHED[name]
    args = [jnp.asarray(a, jnp.float32) if np.asarray(a).dtype == np.float64 else jnp.asarray(a, jnp.int32) for a in args]
    chex.clear_trace_counter()  # the counter is keyed by code: parametrised cases share it

    @jax.jit
    @chex.assert_max_traces(n=1)
    def batched(*a):
        return jax.vmap(fn)(*a)

    out = batched(*args)
    batched(*[a + 0 if a.dtype == jnp.int32 else a * 1.0 for a in args])  # same shapes: no retrace
    chex.assert_shape(out, (_B, _N))
    assert out.dtype == jnp.float32
    want = np.stack([np.asarray(fn(*[a[i] for a in args])) for i in range(_B)])
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-6)  # float32, refused fusion order


# ---------------------------------------------------------------------------------------------
# Bad inputs: a ValueError naming the argument, never a number

def _put(a, v):
    """``a`` with its entry 1 (flat) replaced by ``v``."""
    out = np.array(a, float)
    out.flat[1] = v
    return out


_X, _Y5 = np.zeros((5, 3)) + np.arange(3.0), np.zeros(5)
_LO, _HI = np.zeros((5, 2)), np.ones((5, 2))
BAD = [
    (scoring.crps_ensemble, (_put(_X, np.nan), _Y5), {}, "ensemble contains NaN"),
    (scoring.crps_ensemble, (_X, _put(_Y5, np.inf)), {}, "y contains NaN or infinite"),
    (scoring.crps_ensemble, (_X[:, :0], _Y5), {}, "no members"),
    (scoring.crps_ensemble, (_X[:, :1], _Y5), {"estimator": "fair"}, "at least 2 members"),
    (scoring.crps_ensemble, (_X, _Y5), {"estimator": "qd"}, "estimator"),
    (scoring.crps_ensemble, (_X, _Y5), {"axis": 2}, "axis"),
    (scoring.crps_ensemble, (_X, _Y5), {"axis": 1.0}, "axis"),
    (scoring.crps_ensemble, (_X, np.zeros(4)), {}, "broadcast"),
    (scoring.crps_ensemble, (_X, _Y5), {"member_weights": -np.ones(3)}, "member_weights must be non-negative"),
    (scoring.crps_ensemble, (_X, _Y5), {"member_weights": np.zeros(3)}, "sum to zero"),
    (scoring.crps_ensemble, (_X, _Y5), {"member_weights": np.array([1.0, np.nan, 1.0])}, "member_weights contains NaN"),
    (scoring.crps_ensemble, (_X, _Y5), {"member_weights": np.ones(4)}, "member_weights must have"),
    (scoring.crps_ensemble, (_X, _Y5), {"member_weights": np.array([0.0, 1.0, 0.0]), "estimator": "fair"}, "at least 2 members"),
    (scoring.twcrps_ensemble, (_X, _Y5), {"lower": 1.0, "upper": 0.0}, "lower must be < upper"),
    (scoring.twcrps_ensemble, (_X, _Y5), {"lower": np.nan}, "lower contains NaN"),
    (scoring.twcrps_ensemble, (_X, _Y5), {"upper": np.ones(4)}, "broadcast"),
    (scoring.rps, (np.array([[0.5, 0.6]]), np.array([0])), {}, "sum to 1"),
    (scoring.rps, (np.array([[1.2, -0.2]]), np.array([0])), {}, "non-negative"),
    (scoring.rps, (np.array([[np.nan, 0.5]]), np.array([0])), {}, "probs contains NaN"),
    (scoring.rps, (np.array([[0.5, 0.5]]), np.array([2])), {}, r"labels must lie in \[0, 2\)"),
    (scoring.rps, (np.array([[0.5, 0.5]]), np.array([0.5])), {}, "labels must be integer"),
    (scoring.rps, (np.array([1.0]), np.array(0)), {}, "K >= 2"),
    (scoring.rps, (np.full((3, 2), 0.5), np.zeros(2, int)), {}, "broadcast"),
    (scoring.interval_score, (1.0, 0.0, 0.5), {"alpha": 0.1}, "lower must be <= upper"),
    (scoring.interval_score, (0.0, 1.0, 0.5), {"alpha": 0.0}, r"alpha must lie in \(0, 1\)"),
    (scoring.interval_score, (0.0, 1.0, 0.5), {"alpha": 1.5}, r"alpha must lie in \(0, 1\)"),
    (scoring.interval_score, (0.0, 1.0, np.nan), {"alpha": 0.2}, "y contains NaN"),
    (scoring.interval_score, (np.zeros(3), 1.0, np.zeros(4)), {"alpha": 0.2}, "broadcast"),
    (scoring.weighted_interval_score, (_Y5, _LO, _HI), {"y": _Y5, "alphas": np.array([0.2, 1.0])}, r"alphas must lie in \(0, 1\)"),
    (scoring.weighted_interval_score, (_Y5, _LO, _HI), {"y": _Y5, "alphas": np.array([0.2])}, "last axis"),
    (scoring.weighted_interval_score, (_Y5, _HI, _LO), {"y": _Y5, "alphas": np.array([0.2, 0.5])}, "lower must be <= upper"),
    (scoring.weighted_interval_score, (_Y5, _LO, _HI), {"y": _Y5, "alphas": np.array([0.2, 0.5]), "weights": np.array([1.0, -1.0])}, "weights must be non-negative"),
    (scoring.weighted_interval_score, (_Y5, _LO, _HI), {"y": _Y5, "alphas": np.array([0.2, 0.5]), "weights": np.ones(3)}, "weights must have shape"),
    (scoring.weighted_interval_score, (_Y5, _LO, _HI), {"y": _Y5, "alphas": np.array([0.2, 0.5]), "median_weight": -1.0}, "median_weight"),
    (scoring.weighted_interval_score, (_put(_Y5, np.nan), _LO, _HI), {"y": _Y5, "alphas": np.array([0.2, 0.5])}, "median contains NaN"),
    (scoring.crps_beta, (0.0, 1.0, 0.5), {}, "a must be > 0"),
    (scoring.crps_beta, (1.0, np.nan, 0.5), {}, "b contains NaN"),
    (scoring.crps_beta, (1.0, 1.0, 0.5), {"lower": 1.0, "upper": 0.0}, "lower must be < upper"),
    (scoring.crps_gamma, (1.0, -1.0, 0.5), {}, "rate must be > 0"),
    (scoring.crps_gamma, (np.ones(3), 1.0, np.ones(4)), {}, "broadcast"),
    (scoring.crps_t, (1.0, 0.0, 1.0), {"y": 0.5}, "df must be > 1"),
    (scoring.crps_t, (3.0, 0.0, 0.0), {"y": 0.5}, "scale must be > 0"),
    (scoring.crps_t, (3.0, np.inf, 1.0), {"y": 0.5}, "loc contains NaN or infinite"),
    (scoring.crps_poisson, (0.0,), {"y": 1.0}, "mean must be > 0"),
    (scoring.crps_poisson, (2.0,), {"y": np.nan}, "y contains NaN"),
]


@pytest.mark.parametrize("fn, args, kw, match", BAD, ids=[f"{f.__name__}-{m}" for f, *_, m in BAD])
def test_new_scores_refuse_bad_inputs(fn, args, kw, match):
    with pytest.raises(ValueError, match=match):
        fn(*args, **kw)


@pytest.mark.slow  # compiles every example's kernels again at new shapes: ~4 s
def test_docstring_examples_run():
    import doctest

    assert doctest.testmod(scoring, raise_on_error=True).attempted >= 12


def test_traced_inputs_of_the_ensemble_and_category_scores_are_checked_in_the_graph():
    """Unlike the binary rules (boundary-only, documented), crps_ensemble's member weights and
    rps's rows fail in the graph under jit."""
    x, y = jnp.array([[0.0, 1.0, 2.0]]), jnp.array([0.5])
    f = jax.jit(lambda w: scoring.crps_ensemble(x, y, member_weights=w))
    assert np.isfinite(float(f(jnp.ones((1, 3)))[0]))
    for w in (jnp.array([[1.0, -1.0, 1.0]]), jnp.zeros((1, 3))):
        with pytest.raises(Exception, match="member_weights"):
            f(w).block_until_ready()
    g = jax.jit(lambda p: scoring.rps(p, 1))
    assert np.isfinite(float(g(jnp.array([0.2, 0.3, 0.5]))))
    with pytest.raises(Exception, match="rows summing to 1"):
        g(jnp.array([0.2, 0.3, 0.6])).block_until_ready()


def test_pointwise_losses_broadcast_ranks_explicitly():
    """pinball and squared_error broadcast a column against a row as documented (NumPy's rules),
    also under the suite's rank promotion 'raise'."""
    q, y = jnp.array([0.0, 1.0]), jnp.array([[0.5], [2.0]])
    assert scoring.pinball(q, y, 0.5).shape == (2, 2)
    np.testing.assert_allclose(scoring.squared_error(q, y), (np.array([0.0, 1.0]) - np.array([[0.5], [2.0]])) ** 2)


def test_bool_settings_are_refused():
    with pytest.raises(TypeError, match="median_weight"):
        scoring.weighted_interval_score(jnp.array([0.0]), jnp.array([[-1.0]]), jnp.array([[1.0]]), jnp.array([0.2]),
                                        jnp.array([0.5]), median_weight=True)


def test_the_real_outcome_scores_declare_their_inputs():
    """Each score states its inputs once (``declare``): NumPy scalars and 0-d arrays pass as
    numbers do, bools and unknown settings are refused by name, a traced member axis is refused
    as not static, and traced parameters keep their in-graph check."""
    from jcalib._validation import declared

    for fn in (scoring.crps_beta, scoring.crps_ensemble, scoring.crps_gamma, scoring.crps_poisson, scoring.crps_t,
               scoring.interval_score, scoring.rps, scoring.twcrps_ensemble, scoring.weighted_interval_score):
        assert declared(fn), fn.__name__
    assert abs(float(scoring.crps_gamma(np.float32(1.0), np.asarray(1.0), np.float64(0.0))) - 0.5) < 1e-6  # exponential at 0
    with pytest.raises(ValueError, match="shape must be real numbers, not bools"):
        scoring.crps_gamma(True, 1.0, 0.0)
    with pytest.raises(ValueError, match="estimator must be one of"):
        scoring.crps_ensemble(_X, _Y5, estimator="energy")
    with pytest.raises(ValueError, match="axis must be an integer"):
        scoring.crps_ensemble(_X, _Y5, axis=1.0)
    with pytest.raises(TypeError, match="`axis` must be a static Python int"):
        jax.jit(lambda a: scoring.crps_ensemble(_X, _Y5, axis=a))(1)
    f = jax.jit(lambda df: scoring.crps_t(df, 0.0, 1.0, 0.5))
    assert np.isfinite(float(f(3.0)))
    with pytest.raises(Exception, match="df must be > 1"):
        f(0.5).block_until_ready()
