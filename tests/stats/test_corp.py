"""Tests of CORP (jcalib.stats.corp): the decompositions against a plain-NumPy restatement and
against model-diagnostics' ``decompose`` (Brier, log, pinball; to 1e-10 in float64), the
identity score = MCB - DSC + UNC and the signs, the CRPS as twice the mean pinball
decomposition, bootstrap intervals, the consistency band against a loop of refits, and
conformance (jit without retracing, vmap over forecasters, float32)."""

import doctest

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conformance import count_compilations
from reference import corp as ref

from jcalib._isotonic import pav_by_rounds
from jcalib.recalibration import pav
from jcalib.stats import corp as corp_module
from jcalib.stats import corp_curve, quantile_score_decomposition, score_decomposition

md = pytest.importorskip("model_diagnostics.scoring")


def _binary(n, seed, rounded=True):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    if rounded:
        p = np.round(p, 2)  # ties, as rounded forecasts have
    y = (rng.uniform(size=n) < p**1.5).astype(np.float64)
    return p, y


def _tuple(d):
    return tuple(float(v) for v in (d.score, d.miscalibration, d.discrimination, d.uncertainty))


def test_docstrings():
    assert doctest.testmod(corp_module, optionflags=doctest.ELLIPSIS).failed == 0


@pytest.mark.parametrize("score", ["brier", "log"])
@pytest.mark.parametrize("n,seed,rounded", [(1, 0, True), (9, 1, True), (200, 2, True), (200, 3, False)])
def test_binary_matches_reference(x64, score, n, seed, rounded):
    p, y = _binary(n, seed, rounded)
    w = np.random.default_rng(seed).integers(0, 3, n).astype(float)
    w[0] = 1.0
    np.testing.assert_allclose(_tuple(score_decomposition(p, y, score=score)), ref.decomposition(p, y, score),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(_tuple(score_decomposition(p, y, score=score, sample_weight=w)),
                               ref.decomposition(p, y, score, w), rtol=0, atol=1e-12)


@pytest.mark.parametrize("score", ["brier", "log"])
@pytest.mark.parametrize("seed", [0, 1])
def test_binary_matches_model_diagnostics(x64, score, seed):
    p, y = _binary(300, seed)
    sf = md.SquaredError() if score == "brier" else md.LogLoss()
    w = np.random.default_rng(seed).uniform(0.5, 2, 300)
    for weights in (None, w):
        r = md.decompose(y, p, weights, scoring_function=sf).row(0, named=True)
        d = score_decomposition(p, y, score=score, sample_weight=weights)
        np.testing.assert_allclose(
            _tuple(d), (r["score"], r["miscalibration"], r["discrimination"], r["uncertainty"]), rtol=0, atol=1e-10)


@pytest.mark.parametrize("alpha", [0.1, 0.5, 0.7])
@pytest.mark.parametrize("n,seed", [(2, 1), (15, 2), (400, 3)])
def test_pinball_matches_model_diagnostics(x64, alpha, n, seed):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=n)
    y = np.round(q + rng.normal(size=n) * 0.7 + 0.2, 1)  # tied outcomes: the set-valued quantile
    r = md.decompose(y, q, scoring_function=md.PinballLoss(level=alpha)).row(0, named=True)
    d = quantile_score_decomposition(q, y, [alpha])
    np.testing.assert_allclose(
        [float(v[0]) for v in (d.score, d.miscalibration, d.discrimination, d.uncertainty)],
        (r["score"], r["miscalibration"], r["discrimination"], r["uncertainty"]), rtol=0, atol=1e-10)


def test_crps_is_twice_the_mean_pinball_decomposition(x64):
    rng = np.random.default_rng(4)
    levels = (2 * np.arange(1, 10) - 1) / 18
    mu = rng.normal(size=150)
    y = mu + rng.normal(size=150)
    from scipy.stats import norm

    q = mu[:, None] + 1.3 * norm.ppf(levels)[None, :]  # too wide: miscalibrated
    per_level = quantile_score_decomposition(q, y, levels)
    crps = quantile_score_decomposition(q, y, levels, score="crps")
    for a, b in zip(_tuple(crps), (per_level.score, per_level.miscalibration, per_level.discrimination,
                                   per_level.uncertainty)):
        assert a == pytest.approx(2 * float(jnp.mean(b)), abs=1e-12)
    refs = [md.decompose(y, q[:, k], scoring_function=md.PinballLoss(level=a)).row(0, named=True)
            for k, a in enumerate(levels)]
    assert crps.miscalibration == pytest.approx(2 * np.mean([r["miscalibration"] for r in refs]), abs=1e-10)
    assert crps.miscalibration > 0


@pytest.mark.parametrize("n", [1, 2, 7, 60])
def test_pav_by_rounds_matches_the_library_pav(x64, n):
    rng = np.random.default_rng(n)
    for _ in range(10):
        y = (rng.uniform(size=n) < rng.uniform(size=n)).astype(np.float64)
        w = rng.integers(0, 3, n).astype(np.float64)
        w[rng.integers(n)] += 1
        np.testing.assert_allclose(pav_by_rounds(jnp.asarray(y), jnp.asarray(w)),
                                   pav(jnp.asarray(y), jnp.asarray(w)), rtol=0, atol=1e-12)


def test_identity_and_signs():
    for seed in range(5):
        p, y = _binary(120, seed)
        for score in ("brier", "log"):
            d = score_decomposition(p, y, score=score)
            assert float(d.score) == pytest.approx(float(d.miscalibration - d.discrimination + d.uncertainty), abs=1e-5)
            assert d.miscalibration >= -1e-6 and d.discrimination >= -1e-6


def test_recalibrated_forecasts_have_no_miscalibration(x64):
    p, y = _binary(200, 7)
    c = corp_curve(p, y)
    d = score_decomposition(c.recalibrated, y[np.argsort(p, kind="stable")])
    assert float(d.miscalibration) == pytest.approx(0, abs=1e-15)
    assert float(d.uncertainty) == pytest.approx(np.mean(y) * (1 - np.mean(y)), abs=1e-15)


def test_bootstrap_intervals(x64):
    p, y = _binary(300, 8)
    d = score_decomposition(p, y, key=jax.random.key(0), n_resamples=200)
    est = np.array(_tuple(d))
    chex.assert_shape((d.low, d.high, d.resamples), ((4,), (4,), (200, 4)))
    assert np.all(d.low <= est) and np.all(est <= d.high)
    # the same key gives the same resamples; every resample keeps the identity
    again = score_decomposition(p, y, key=jax.random.key(0), n_resamples=200)
    np.testing.assert_array_equal(d.resamples, again.resamples)
    # a resample's draws depend on its key only, not on the chunk it is drawn in
    np.testing.assert_array_equal(d.resamples[:10],
                                  score_decomposition(p, y, key=jax.random.key(0), n_resamples=10, chunk=3).resamples)
    r = np.asarray(d.resamples)
    np.testing.assert_allclose(r[:, 0], r[:, 1] - r[:, 2] + r[:, 3], atol=1e-12)
    q = quantile_score_decomposition(p, y + p, [0.5], key=jax.random.key(1), n_resamples=20, score="crps")
    chex.assert_shape((q.low, q.resamples), ((4,), (20, 4)))


@pytest.mark.parametrize("score", ["brier", "log"])
@pytest.mark.parametrize("rounded", [True, False])
@pytest.mark.parametrize("weighted", [True, False])
def test_resamples_are_the_decompositions_of_their_count_vectors(x64, score, rounded, weighted):
    # a resample's PAV over units equals the row-level decomposition weighted by its counts (unit
    # weights: the integer path; weights with zeros: the real one)
    p, y = _binary(300, 13, rounded)
    w = np.random.default_rng(13).uniform(0.5, 2, 300) * (np.arange(300) % 7 != 0) if weighted else np.ones(300)
    key = jax.random.key(5)
    d = score_decomposition(p, y, score=score, sample_weight=w if weighted else None, key=key, n_resamples=8,
                            chunk=4)
    order = np.argsort(p, kind="stable")
    for i, k in enumerate(jax.random.split(key, 8)):
        counts = np.asarray(corp_module._count_vector(k, 300), float)  # over the sorted rows
        assert counts.sum() == 300
        w_k = w.copy()
        w_k[order] *= counts
        np.testing.assert_allclose(d.resamples[i], ref.decomposition(p, y, score, w_k), rtol=0, atol=1e-10)


@pytest.mark.parametrize("n", [10, 200])
def test_count_vectors_are_multinomial(n):
    # n = 10: every row drawn uniformly (no Poisson part); n = 200: Poisson counts of mean
    # (n - 5 sqrt(n)) / n topped up to n. Over K count vectors of n draws with replacement, each count
    # is Binomial(n, 1/n): mean 1, variance 1 - 1/n, and P(0) = (1 - 1/n)^n.
    K = 3000
    keys = jax.random.split(jax.random.key(2), K)
    # first attempts, one compiled loop (lax.map, as the library draws them: not vmap, whose batching
    # of XLA's generator does not key each resample by its own key)
    counts, extra, ok = jax.jit(lambda ks: jax.lax.map(lambda k: corp_module._bootstrap_counts(k, n), ks))(keys)
    c = np.asarray(counts).copy()
    for i in range(K):
        np.add.at(c[i], np.asarray(extra[i])[np.asarray(extra[i]) < n], 1)
    for i in np.flatnonzero(~np.asarray(ok)):  # the rare redraws
        c[i] = np.asarray(corp_module._count_vector(keys[i], n))
    assert np.all(c.sum(axis=1) == n) and c.min() >= 0
    # per-row means: each has sd sqrt((1 - 1/n) / K) (about 0.018); 5 sd over at most 200 rows
    assert np.max(np.abs(c.mean(axis=0) - 1)) < 5 * np.sqrt((1 - 1 / n) / K)
    # the pooled variance and the share of zeros: K n counts (each within 5 of their sd)
    pooled = c.ravel().astype(float)
    assert pooled.var() == pytest.approx(1 - 1 / n, abs=5 * np.sqrt(2 / (K * n)) * 1.5)  # 1.5: counts are dependent
    p0 = (1 - 1 / n) ** n
    assert np.mean(pooled == 0) == pytest.approx(p0, abs=5 * np.sqrt(p0 * (1 - p0) / (K * n)) * 1.5)
    # two rows' counts: covariance -1/n
    cov = np.cov(c[:, 0], c[:, 1])[0, 1]
    assert cov == pytest.approx(-1 / n, abs=5 / np.sqrt(K))


def test_count_vectors_redrawn_when_the_poisson_total_misses(monkeypatch, x64):
    # no slack and little room: about half the Poisson totals exceed n and are redrawn; the count
    # vectors still sum to n and the resamples are still their decompositions
    monkeypatch.setattr(corp_module, "_SLACK", 0.0)
    monkeypatch.setattr(corp_module, "_ROOM", 0.5)
    p, y = _binary(301, 14, rounded=False)  # a length of its own: nothing cached from other tests
    key = jax.random.key(6)
    d = score_decomposition(p, y, key=key, n_resamples=6, chunk=3)
    order = np.argsort(p, kind="stable")
    for i, k in enumerate(jax.random.split(key, 6)):
        counts = np.asarray(corp_module._count_vector(k, 301), float)
        assert counts.sum() == 301
        w_k = np.ones(301)
        w_k[order] = counts
        np.testing.assert_allclose(d.resamples[i], ref.decomposition(p, y, "brier", w_k), rtol=0, atol=1e-10)


def test_bootstrap_under_vmap_over_keys(x64):
    # each key draws its own resamples under vmap (traced sizes: a unit per row, real sums)
    p, y = _binary(120, 15)
    keys = jax.random.split(jax.random.key(7), 3)
    batched = jax.vmap(lambda k: score_decomposition(p, y, key=k, n_resamples=5).resamples)(keys)
    for i, k in enumerate(keys):
        np.testing.assert_allclose(batched[i], score_decomposition(p, y, key=k, n_resamples=5).resamples, rtol=0,
                                   atol=1e-12)  # float64 sums against integer ones


def test_consistency_band_matches_a_loop_of_refits():
    p, _ = _binary(400, 9, rounded=False)
    y = (np.random.default_rng(1).uniform(size=400) < p).astype(np.float64)
    c = corp_curve(p, y, key=jax.random.key(3), n_resamples=300)
    lo, hi = ref.consistency_band(p, 0.9, 300)
    # two independent Monte-Carlo bands of 300 refits: their ends agree to sampling error
    assert np.median(np.abs(np.asarray(c.band_low) - lo)) < 0.03
    assert np.median(np.abs(np.asarray(c.band_high) - hi)) < 0.03
    assert np.all(np.diff(np.asarray(c.recalibrated)) >= 0)
    inside = (c.band_low <= c.forecasts + 1e-6) & (c.forecasts <= c.band_high + 1e-6)
    assert float(jnp.mean(inside)) > 0.9  # the band is around the diagonal


def test_jit_no_retrace_and_vmap():
    p, y = _binary(64, 10)
    p, y = jnp.asarray(p, jnp.float32), jnp.asarray(y, jnp.float32)
    p2, y2, p3 = p[::-1], y[::-1], p * 0.5
    score_decomposition(p, y)
    with count_compilations() as c:
        score_decomposition(p2, y2)
        score_decomposition(p3, y)
    assert c.n == 0
    traces = []

    @jax.jit
    def batch(P, Y):
        traces.append(1)
        return jax.vmap(lambda a, b: jnp.stack(_tuple_arrays(score_decomposition(a, b, score="log"))))(P, Y)

    P = jnp.stack([p, p**2, jnp.sqrt(p)])
    Y = jnp.stack([y, y, 1 - y])
    out = batch(P, Y)
    batch(P * 0.9, Y)
    assert len(traces) == 1
    for i in range(3):
        np.testing.assert_allclose(out[i], _tuple(score_decomposition(P[i], Y[i], score="log")), rtol=1e-5, atol=1e-6)


def _tuple_arrays(d):
    return d.score, d.miscalibration, d.discrimination, d.uncertainty


def test_float32_close_to_float64():
    p, y = _binary(500, 11)
    d32 = _tuple(score_decomposition(jnp.asarray(p, jnp.float32), jnp.asarray(y, jnp.float32), score="log"))
    np.testing.assert_allclose(d32, ref.decomposition(p, y, "log"), atol=1e-5)


def test_bad_inputs():
    p, y = _binary(10, 12)
    with pytest.raises(ValueError, match="score"):
        score_decomposition(p, y, score="crps")
    with pytest.raises(TypeError, match="key"):
        score_decomposition(p, y, key=0)
    with pytest.raises(ValueError, match="level"):
        score_decomposition(p, y, key=jax.random.key(0), level=1.5)
    with pytest.raises(ValueError, match="levels"):
        quantile_score_decomposition(p, y, [1.0])
    with pytest.raises(ValueError, match="levels"):
        quantile_score_decomposition(np.stack([p, p], 1), y, [0.5])
    with pytest.raises(ValueError, match="labels"):
        corp_curve(p, y[:5])


def test_a_raw_uint32_key_draws_the_resamples_of_its_typed_key():
    rng = np.random.default_rng(3)
    p = rng.uniform(0.05, 0.95, 300)
    y = (rng.uniform(size=300) < p).astype(np.int32)
    raw = score_decomposition(p, y, key=jax.random.PRNGKey(5), n_resamples=16, chunk=4)
    typed = score_decomposition(p, y, key=jax.random.wrap_key_data(jax.random.PRNGKey(5)), n_resamples=16, chunk=4)
    np.testing.assert_array_equal(np.asarray(raw.low), np.asarray(typed.low))
