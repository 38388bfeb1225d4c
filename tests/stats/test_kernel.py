"""SKCE (Widmann, Lindsten, Zachariah 2019): the three estimators against explicit pair loops
and closed-form cases, tiling, the unbiased estimator's mean 0 under calibration, null
uniformity and power of the asymptotic (block: normal; unbiased: centred-kernel bootstrap)
and consistency tests, conformance and input errors. The SKCE intervals and the UCME / CME
test (Widmann, Lindsten, Zachariah 2021) against CalibrationTests.jl's formulas written out in
NumPy, the intervals' coverage, the CME test's null uniformity and power."""

import doctest

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import kernel_inference as kref
from reference import stats as ref

from jcalib._kernels import GaussianKernel, multinomial_kernel
from jcalib.stats import kernel as module
from jcalib.stats._multinomial import _seeds, _uniform_rows
from jcalib.stats import cme_test, skce, skce_interval, skce_test, ucme


def _data(seed, n, C=None):
    rng = np.random.default_rng(seed)
    if C is None:
        p = rng.random(n)
        return p, (rng.random(n) < p).astype(np.int32)
    P = rng.dirichlet(np.ones(C), n)
    return P, (rng.random((n, 1)) > np.cumsum(P, axis=1)).sum(axis=1)


@pytest.mark.parametrize("estimator", ["biased", "unbiased", "block"])
@pytest.mark.parametrize("C", [None, 3])
def test_estimators_match_reference(x64, estimator, C):
    p, y = _data(0, 23, C)  # 23 rows: tiles of 8 leave a partial tile, blocks of 3 a remainder
    if C is None:
        P, R = ref.binary_vectors(p, y)
    else:
        P = p
        R = np.eye(C)[y] - P
    bw = 0.3
    for b in (2, 3):
        got = float(skce(p, y, kernel=GaussianKernel(bw), estimator=estimator, block_size=b, tile=8))
        assert got == pytest.approx(ref.skce(P, R, bw, estimator, block_size=b), rel=1e-10, abs=1e-14)
    if estimator != "block":
        w = np.random.default_rng(1).random(23) + 0.2
        got = float(skce(p, y, kernel=GaussianKernel(bw), estimator=estimator, sample_weight=w, tile=8))
        assert got == pytest.approx(ref.skce(P, R, bw, estimator, w=w), rel=1e-10, abs=1e-14)


def test_closed_form_cases(x64):
    # one forecast value for everyone: k = 1 on all pairs, biased SKCE = 2 (mean(y) - p)^2
    p = np.full(10, 0.3)
    y = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    assert float(skce(p, y, estimator="biased")) == pytest.approx(2 * (0.4 - 0.3) ** 2, rel=1e-12)
    # the unbiased one: (sum_ij - sum_i) / (n(n-1)) with h_ij = 2 (y_i - p)(y_j - p)
    r = y - 0.3
    expected = 2 * (r.sum() ** 2 - np.sum(r**2)) / 90
    assert float(skce(p, y, estimator="unbiased")) == pytest.approx(expected, rel=1e-12)
    # a kernel that is 0 off the diagonal: biased = mean of ||r_i||^2 / n
    q = np.array([0.0, 1.0])
    got = skce(q, np.array([1, 0]), kernel=GaussianKernel(1e-3), estimator="biased")
    assert float(got) == pytest.approx((2 + 2) / 4, rel=1e-12)
    # the multinomial kernel of degree 0 is 1 everywhere: same as the constant case
    assert float(skce(p, y, kernel=multinomial_kernel(0), estimator="biased")) == pytest.approx(0.02, rel=1e-12)



@pytest.mark.parametrize("C", [None, 3])
def test_unbiased_test_matches_the_centred_bootstrap_written_out(x64, C):
    p, y = _data(2, 17, C)
    P, R = ref.binary_vectors(p, y) if C is None else (p, np.eye(C)[y] - p)
    key = jax.random.key(3)
    # resample b's rows: 17 indices from Threefry words of split(key)[b] (jcalib.stats._multinomial)
    draws = [np.asarray(_uniform_rows(_seeds(k[None]), 17, 17)[0]) for k in jax.random.split(key, 40)]
    stat, pv = ref.skce_bootstrap_pvalue(P, R, 0.3, draws)
    for chunk in (7, 128):  # a partial last chunk, and every resample in one
        got = skce_test(p, y, key=key, kernel=GaussianKernel(0.3), n_resamples=40, chunk=chunk, tile=8)
        assert float(got.statistic) == pytest.approx(stat, rel=1e-10)
        # the null values are 40 sums of 272 pair terms in float64, none near a tie with the
        # estimate: the same count k in p = (1 + k) / 41 (rel 1e-12: the division's rounding)
        assert float(got.p_value) == pytest.approx(pv, rel=1e-12)


@pytest.mark.parametrize("C", [2, 3, 10])
def test_residual_factor_keeps_every_residual_inner_product(x64, C):
    P = np.random.default_rng(C).dirichlet(np.ones(C), 50)
    R = np.eye(C)[np.arange(50) % C] - P  # rows summing to 0, as e_y - p
    F = np.asarray(module._residual_factor(jnp.asarray(R)))
    assert F.shape == (50, C - 1)
    np.testing.assert_allclose(F @ F.T, R @ R.T, atol=1e-13)  # float64 round-off of C-term sums

def test_unbiased_mean_zero_under_calibration(x64):
    # CalibrationErrors.jl's check: averaged over many calibrated data sets, the unbiased and
    # block estimators are 0 within Monte-Carlo error, the biased one is positive
    def one(k):
        kp, ky = jax.random.split(k)
        p = jax.random.uniform(kp, (50,))
        y = (jax.random.uniform(ky, (50,)) < p).astype(jnp.int32)
        return jnp.stack([skce(p, y, estimator=e) for e in ("unbiased", "block", "biased")])

    v = np.asarray(jax.vmap(one)(jax.random.split(jax.random.key(0), 2000)))
    se = v.std(axis=0) / np.sqrt(len(v))
    assert abs(v[:, 0].mean()) < 3 * se[0] and abs(v[:, 1].mean()) < 3 * se[1]
    assert v[:, 2].mean() > 10 * se[2]


def _test(method, estimator):
    def run(k, p, y):
        return skce_test(p, y, key=k, estimator=estimator, method=method, n_resamples=100).p_value

    return run


@pytest.mark.parametrize(
    "n,method,estimator",
    [
        (100, "asymptotic", "block"),
        (1000, "asymptotic", "block"),
        (100, "asymptotic", "unbiased"),
        pytest.param(1000, "asymptotic", "unbiased", marks=pytest.mark.slow),
        (100, "consistency", "unbiased"),
        pytest.param(1000, "consistency", "unbiased", marks=pytest.mark.slow),
    ],
)
def test_pvalues_uniform_under_calibration(replicate, n, method, estimator):
    pv = replicate(_test(method, estimator), n, 1000)
    # measured (asymptotic): block 0.031 / 0.024, unbiased 0.023 / 0.032 at n = 100 / 1000;
    # a later run of the slow n = 1000 cases: asymptotic unbiased 0.034, consistency unbiased 0.038
    assert ref.ks_distance_uniform(pv) < ref.ks_critical_1pct(1000)


@pytest.mark.parametrize(
    "method,estimator,least",
    [("asymptotic", "block", 0.35), ("asymptotic", "unbiased", 0.9), ("consistency", "unbiased", 0.9)],
)
def test_power_against_p_to_the_1_5(replicate, method, estimator, least):
    # the quadratic tests cost O(B n^2) per replication: 30 replications keep this CI-sized
    pv = replicate(_test(method, estimator), 2000, 30 if estimator == "unbiased" else 200, miscalibrated=True,
                   batch=10)
    # measured: block 0.50 (the linear estimator trades power for O(n) time), unbiased 1.0
    assert np.mean(pv < 0.05) >= least


def test_conformance():
    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(p, y):
        return skce(p, y), skce(p, y, estimator="block")

    for s in range(3):
        run(*_data(s, 40))
    P = np.random.default_rng(0).random((4, 40))
    out = jax.vmap(lambda p: skce(p, jnp.ones(40, jnp.int32)))(P)
    assert out.shape == (4,)


def test_bad_inputs():
    p, y = _data(0, 10)
    with pytest.raises(ValueError, match="estimator"):
        skce(p, y, estimator="linear")
    with pytest.raises(ValueError, match="block_size"):
        skce(p, y, estimator="block", block_size=1)
    with pytest.raises(ValueError, match="sample_weight"):
        skce(p, y, estimator="block", sample_weight=np.ones(10))
    with pytest.raises(TypeError, match="kernel"):
        skce(p, y, kernel=0.5)
    with pytest.raises(TypeError, match="key must be a JAX PRNG key"):
        skce_test(p, y)  # the unbiased estimator's bootstrap draws: no default key
    with pytest.raises(TypeError, match="key must be a JAX PRNG key"):
        skce_test(p, y, key=0)
    with pytest.raises(ValueError, match="consistency"):
        skce_test(p, y, estimator="biased", key=jax.random.key(0))
    with pytest.raises(ValueError, match="method"):
        skce_test(p, y, method="permutation", key=jax.random.key(0))


def test_docstring_examples():
    assert doctest.testmod(module, raise_on_error=True).attempted > 0


def _vectors(p, y, C):
    return ref.binary_vectors(p, y) if C is None else (p, np.eye(C)[y] - p)


@pytest.mark.parametrize("C", [None, 3])
def test_interval_matches_calibration_tests_jl(x64, C):
    # CalibrationTests.jl's AsymptoticBlockSKCETest (Welford running mean and sum of squares,
    # stderr = sqrt(S / (m (m - 1)))) and its confint(tail=:right), written out in NumPy
    p, y = _data(2, 23, C)  # 23 rows: blocks of 3 leave a remainder
    P, R = _vectors(p, y, C)
    ker = GaussianKernel(0.3)
    for b in (2, 3):
        est, se, _ = kref.block_test(P, R, 0.3, b)
        got = skce_interval(p, y, kernel=ker, block_size=b, level=0.9)
        lo, hi = kref.confint_both(est, se, 0.9)
        np.testing.assert_allclose([float(v) for v in got], [est, lo, hi, se], rtol=1e-10, atol=1e-14)
        got = skce_interval(p, y, kernel=ker, block_size=b, level=0.9, tail="right")
        lo, hi = kref.confint_right(est, se, 0.9)
        assert float(got.lower) == pytest.approx(lo, rel=1e-10, abs=1e-14) and float(got.upper) == hi
    u, se = kref.unbiased_interval_parts(P, R, 0.3)
    got = skce_interval(p, y, kernel=ker, estimator="unbiased", tile=8)
    lo, hi = kref.confint_both(u, se, 0.95)
    np.testing.assert_allclose([float(v) for v in got], [u, lo, hi, se], rtol=1e-10, atol=1e-14)
    assert float(got.estimate) == pytest.approx(float(skce(p, y, kernel=ker)), rel=1e-12)


def test_interval_right_tail_clips_at_zero(x64):
    p, y = _data(4, 40)  # calibrated: a negative estimate (-0.057), so the lower end is clipped
    got = skce_interval(p, y, tail="right", level=0.95)
    assert float(got.estimate) < 0 and float(got.lower) == 0.0 and float(got.upper) == np.inf
    p = np.linspace(0.05, 0.95, 400)
    got = skce_interval(p, (p > 0.5).astype(np.int32), tail="right", level=0.95)  # far from calibrated
    assert float(got.lower) == pytest.approx(float(got.estimate) - 1.6448536269514722 * float(got.std_error))
    assert float(got.lower) > 0


def _covers(estimator, target):
    """Per replication: (target inside the interval, estimate, standard error)."""

    def run(k, p, y):
        r = skce_interval(p, y, estimator=estimator)
        return jnp.stack([((r.lower <= target) & (target <= r.upper)).astype(r.estimate.dtype), r.estimate, r.std_error])

    return run


@pytest.mark.parametrize("miscalibrated", [False, True])
def test_block_interval_coverage(replicate, miscalibrated):
    # calibrated: the population SKCE is 0; miscalibrated (forecasts p^1.5 of y ~ Bernoulli(p)):
    # the population SKCE by quadrature, 0.0145 for the default kernel
    target = kref.population_skce_power(0.5) if miscalibrated else 0.0
    cover = replicate(_covers("block", target), 400, 2000, miscalibrated=miscalibrated).reshape(-1, 3)[:, 0].mean()
    # measured 0.9455 (calibrated) and 0.940 (miscalibrated); 2000 replications give a binomial
    # standard error of 0.005, so +-0.02 is four of them plus the normal approximation's error
    assert abs(cover - 0.95) < 0.02


def test_population_skce_by_quadrature_matches_a_large_sample(x64):
    # the coverage target: quadrature against the unbiased estimate on 20000 rows
    kp, ky = jax.random.split(jax.random.key(7))
    p = jax.random.uniform(kp, (20000,))
    y = (jax.random.uniform(ky, (20000,)) < p).astype(jnp.int32)
    got = skce_interval(p**1.5, y, estimator="unbiased")
    target = kref.population_skce_power(0.5)
    assert abs(float(got.estimate) - target) < 3 * float(got.std_error)
    assert target == pytest.approx(kref.population_skce_power(0.5, nodes=800), rel=1e-10)


def test_unbiased_interval_coverage_when_miscalibrated(replicate):
    # zeta_1 > 0: the U-statistic is asymptotically normal with variance 4 zeta_1 / n
    out = replicate(_covers("unbiased", kref.population_skce_power(0.5)), 1000, 500, miscalibrated=True,
                    batch=10).reshape(-1, 3)
    # measured 0.948 at n = 1000 (0.9155 at n = 400: skewness still shows); binomial standard
    # error 0.01 over 500 replications, so +-0.035
    assert abs(out[:, 0].mean() - 0.95) < 0.035
    # the squared standard error against the Monte-Carlo variance of the estimate: measured
    # ratio 0.989; a variance from 500 replications has a relative standard error of 6%
    assert abs(np.mean(out[:, 2] ** 2) / np.var(out[:, 1], ddof=1) - 1) < 0.2


def test_unbiased_interval_undercovers_under_calibration(replicate):
    # the documented limitation: zeta_1 = 0, n U tends to a weighted sum of centred chi-squares,
    # and the normal interval covers 0 less often than 95% (measured 0.872 at n = 400)
    out = replicate(_covers("unbiased", 0.0), 400, 1000, batch=10).reshape(-1, 3)
    assert 0.8 < out[:, 0].mean() < 0.93
    # not for want of variance: the squared standard error is about twice the Monte-Carlo
    # variance there (measured 1.82; Var(a_i) carries the second-order term zeta_2 / (n - 1))
    assert np.mean(out[:, 2] ** 2) > 1.3 * np.var(out[:, 1], ddof=1)


@pytest.mark.parametrize("C", [None, 3])
def test_cme_matches_calibration_tests_jl(x64, C):
    # AsymptoticCMETest and UCME of CalibrationTests.jl / CalibrationErrors.jl, in NumPy
    p, y = _data(5, 30, C)
    tp, ty = _data(6, 3, C)
    P, _ = _vectors(p, y, C)
    TP, _ = _vectors(tp, ty, C)
    ker = GaussianKernel(0.3)  # narrow enough that S is well conditioned (no direction dropped)
    est, stat, pval = kref.cme(P, y, TP, ty, 0.3)
    got = cme_test(p, y, test_probs=tp, test_labels=ty, kernel=ker)
    assert float(got.statistic) == pytest.approx(stat, rel=1e-10)
    assert float(got.p_value) == pytest.approx(pval, rel=1e-10)
    assert float(ucme(p, y, test_probs=tp, test_labels=ty, kernel=ker)) == pytest.approx(est, rel=1e-10)
    w = np.random.default_rng(3).random(30) + 0.1
    est_w, _, _ = kref.cme(P, y, TP, ty, 0.3, w=w)
    assert float(ucme(p, y, test_probs=tp, test_labels=ty, kernel=ker, sample_weight=w)) == pytest.approx(est_w, rel=1e-10)


@pytest.mark.parametrize("C", [None, 3])
def test_cme_drawn_locations_are_held_out_rows(x64, C):
    # drawing with a key = giving the drawn rows as locations and testing the other rows
    p, y = _data(8, 40, C)
    k = jax.random.key(3)
    got = cme_test(p, y, key=k, n_test=3)
    idx = np.asarray(jax.lax.top_k(jax.random.uniform(k, (40,)), 3)[1])  # the rows of the 3 largest uniforms
    assert len(set(idx.tolist())) == 3
    rest = np.setdiff1d(np.arange(40), idx)
    want = cme_test(p[rest], y[rest], test_probs=p[idx], test_labels=y[idx])
    np.testing.assert_allclose([float(v) for v in got], [float(v) for v in want], rtol=1e-10)


def test_chi2_survival_series_matches_scipy(x64):
    """The CME test's p-value, P(chi2_k >= x) for integer k, by its finite series: against
    scipy at every k up to the bound, from x = 0 to far in the tail (float64: the series'
    rounding is a few eps per term)."""
    import scipy.stats

    from jcalib.stats.kernel import _chi2_sf

    sf = jax.jit(_chi2_sf, static_argnums=2)
    for max_df in (1, 2, 5, 12):
        for k in range(1, max_df + 1):
            for x in (0.0, 1e-6, 0.3, 2.0, 11.0, 60.0, 400.0):
                want = scipy.stats.chi2.sf(x, k)
                assert float(sf(jnp.int32(k), jnp.float64(x), max_df)) == pytest.approx(want, rel=1e-12, abs=1e-300)


def test_cme_singular_covariance(x64):
    p, y = _data(9, 60)
    one = cme_test(p, y, test_probs=[0.3], test_labels=[1])
    # a repeated location, and the binary pair (p, 0), (p, 1) (opposite deviations): rank 1,
    # one degree of freedom, the one-location test
    for tp, ty in (([0.3, 0.3], [1, 1]), ([0.3, 0.3], [0, 1])):
        got = cme_test(p, y, test_probs=tp, test_labels=ty)
        # the same direction found by an SVD of two columns: rounding of the rotation only
        np.testing.assert_allclose([float(v) for v in got], [float(v) for v in one], rtol=1e-8)
    # every row's deviation 0 (forecasts 0 and 1 that come true): no evidence
    q = np.array([0.0, 1.0] * 5)
    got = cme_test(q, q.astype(np.int32), test_probs=[0.5], test_labels=[1])
    assert (float(got.statistic), float(got.p_value)) == (0.0, 1.0)
    # every row's deviation the same non-zero value: certain rejection
    got = cme_test(np.full(10, 0.3), np.ones(10, np.int32), test_probs=[0.5], test_labels=[1])
    assert (float(got.statistic), float(got.p_value)) == (np.inf, 0.0)


def _cme(n_test):
    def run(k, p, y):
        return cme_test(p, y, key=k, n_test=n_test).p_value

    return run


def test_cme_pvalues_uniform_under_calibration(replicate):
    pv = replicate(_cme(2), 500, 1000)
    # measured KS distance 0.020 (0.045 at n = 100, 0.046 at n = 1000); the chi-square is
    # asymptotic (see the docstring)
    assert ref.ks_distance_uniform(pv) < ref.ks_critical_1pct(1000)


def test_cme_pvalues_uniform_under_calibration_multiclass():
    def one(k):
        kp, ky, kt = jax.random.split(k, 3)
        P = jax.random.dirichlet(kp, jnp.ones(3), (500,))
        y = jax.random.categorical(ky, jnp.log(P))
        return cme_test(P, y, key=kt).p_value

    pv = np.asarray(jax.lax.map(jax.vmap(one), jax.random.split(jax.random.key(1), 1000).reshape(20, 50))).ravel()
    assert ref.ks_distance_uniform(pv) < ref.ks_critical_1pct(1000)  # measured 0.020


def test_cme_power_against_p_to_the_1_5(replicate):
    pv = replicate(_cme(2), 500, 200, miscalibrated=True)
    # measured 1.0 (0.85 at n = 200 in float64)
    assert np.mean(pv < 0.05) >= 0.9


def _inference(p, y, k):
    return (skce_interval(p, y), skce_interval(p, y, estimator="unbiased", level=0.9), cme_test(p, y, key=k),
            ucme(p, y, test_probs=p[:3], test_labels=y[:3]))


def test_interval_and_cme_conformance():
    run = jax.jit(chex.assert_max_traces(_inference, n=1))
    data = [_data(s, 40) for s in range(3)]
    keys = jax.random.split(jax.random.key(0), 3)
    outs = [run(p, y, k) for (p, y), k in zip(data, keys)]  # three data sets, one trace
    P = np.stack([d[0] for d in data])
    Y = np.stack([d[1] for d in data])
    batched = jax.vmap(_inference)(P, Y, keys)
    for i, out in enumerate(outs):
        for a, b in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(batched)):
            # float32: vmap batches the matrix products and the SVD differently
            np.testing.assert_allclose(np.asarray(b)[i], np.asarray(a), rtol=1e-4, atol=1e-6)


def test_interval_and_cme_are_row_permutation_invariant(x64):
    # the unbiased interval and the CME test at given locations (drawn locations are rows by
    # position, and the block estimator's blocks are consecutive rows: both depend on the order)
    p, y = _data(10, 50, 3)
    tp, ty = p[:2], y[:2]
    perm = np.random.default_rng(0).permutation(50)
    for f in (lambda p, y: skce_interval(p, y, estimator="unbiased"),
              lambda p, y: cme_test(p, y, test_probs=tp, test_labels=ty),
              lambda p, y: ucme(p, y, test_probs=tp, test_labels=ty)):
        a = [float(v) for v in jax.tree_util.tree_leaves(f(p, y))]
        b = [float(v) for v in jax.tree_util.tree_leaves(f(p[perm], y[perm]))]
        np.testing.assert_allclose(b, a, rtol=1e-10)


def test_interval_and_cme_bad_inputs():
    p, y = _data(0, 10)
    k = jax.random.key(0)
    with pytest.raises(ValueError, match="estimator"):
        skce_interval(p, y, estimator="biased")
    with pytest.raises(ValueError, match="tail"):
        skce_interval(p, y, tail="left")
    with pytest.raises(ValueError, match="level"):
        skce_interval(p, y, level=1.5)
    with pytest.raises(ValueError, match="2 blocks"):
        skce_interval(p[:3], y[:3])
    with pytest.raises(ValueError, match="3 rows"):
        skce_interval(p[:2], y[:2], estimator="unbiased")
    with pytest.raises(TypeError, match="key must be a JAX PRNG key"):
        cme_test(p, y)  # drawing the test locations needs a key
    with pytest.raises(TypeError, match="key"):
        cme_test(p, y, key=0)
    with pytest.raises(ValueError, match="n_test"):
        cme_test(p, y, key=k, n_test=5)
    with pytest.raises(ValueError, match="both test_probs and test_labels"):
        cme_test(p, y, test_probs=p[:2])
    with pytest.raises(ValueError, match="test_probs"):
        cme_test(p, y, test_probs=[0.2, 1.5], test_labels=[0, 1])
    with pytest.raises(ValueError, match="test_labels"):
        cme_test(p, y, test_probs=[0.2, 0.5], test_labels=[0, 2])
    with pytest.raises(ValueError, match="test_probs"):
        cme_test(p, y, test_probs=np.array([[0.5, 0.5]]), test_labels=[0])
    with pytest.raises(ValueError, match="at least 3 rows"):
        cme_test(p[:2], y[:2], test_probs=[0.2, 0.5], test_labels=[0, 1])
    with pytest.raises(TypeError, match="kernel"):
        cme_test(p, y, key=k, kernel=0.5)
    P, Y = _data(0, 10, 3)
    with pytest.raises(ValueError, match="3 columns"):
        ucme(P, Y, test_probs=np.array([[0.5, 0.5]]), test_labels=[0])
    with pytest.raises(ValueError, match="test_labels"):
        ucme(P, Y, test_probs=P[:2], test_labels=[0, 3])
    with pytest.raises(ValueError, match="mismatched lengths"):
        ucme(P, Y, test_probs=P[:2], test_labels=[0])


def test_block_size_below_two_is_refused_whichever_estimator():
    """A block of one row has no pair: refused even when the estimator does not use blocks, so
    a typo is not ignored."""
    p, y = np.full(10, 0.5), np.arange(10) % 2
    for estimator in ("unbiased", "biased", "block"):
        with pytest.raises(ValueError, match="block_size"):
            skce(p, y, estimator=estimator, block_size=1)


def test_cme_drawn_locations_compile_one_program():
    """Eager calls on new data of the same shape: the forecast vectors, the draw of the
    locations, the statistic and its p-value are one compiled program, compiled once (the
    operations of the draw and of the forecast vectors are not compiled one by one); with given
    locations, the statistic and its p-value are one program too."""
    import jax.monitoring

    compiled = []

    def listen(event, duration, **kw):
        if event == "/jax/core/compile/backend_compile_duration":
            compiled.append(kw.get("fun_name", ""))

    data = [_data(s, 41) for s in range(3)]
    jax.clear_caches()
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        for i, (p, y) in enumerate(data):
            cme_test(p, y, key=jax.random.key(i), n_test=4)
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    assert compiled.count("jit(_cme_test_drawn)") == 1, compiled
    assert "jit(_vectors_of)" not in compiled, compiled  # inside the test's program
    # that one, and the keys and array conversions of the first call (JAX's own small programs)
    assert len(compiled) <= 8, compiled
    compiled.clear()
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        for p, y in data:
            cme_test(p, y, test_probs=p[:2], test_labels=y[:2])
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    assert compiled.count("jit(_cme_test)") == 1, compiled
    assert not [c for c in compiled if "gammaincc" in c or "_chi2_sf" in c], compiled
