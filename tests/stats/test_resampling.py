"""Tests of jcalib.stats.bootstrap: resamples equal the statistic on the drawn rows (NumPy),
percentile and BCa intervals equal the textbook formulas on those resamples, BCa agrees with
scipy.stats.bootstrap, intervals of the Brier score cover the population value at the nominal
rate, weights travel with their rows, paired resampling, conformance and input errors."""

import doctest

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from reference import stats as ref

from jcalib.metrics import brier, smooth_ece
from jcalib.stats import bootstrap, paired_bootstrap
from jcalib.stats import resampling as resampling_module
from jcalib.stats.resampling import _resample_indices, _resample_keys


def _data(seed, n):
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    return p, (rng.random(n) < p).astype(np.int32)


def _indices(key, n, B):
    return np.asarray(_resample_indices(key, n, B))


def test_resamples_are_the_statistic_on_the_drawn_rows(x64):
    p, y = _data(0, 60)
    key = jax.random.key(3)
    r = bootstrap(brier, p, y, key=key, n_resamples=300, chunk=7)  # 7 does not divide 300
    idx = _indices(key, 60, 300)
    expected = np.array([np.mean((p[i] - y[i]) ** 2) for i in idx])
    np.testing.assert_allclose(np.asarray(r.resamples), expected, rtol=1e-12)
    assert float(r.estimate) == pytest.approx(np.mean((p - y) ** 2), rel=1e-12)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_interval_matches_reference_formulas(x64, method):
    p, y = _data(1, 80)
    r = bootstrap(brier, p, y, key=jax.random.key(0), n_resamples=999, level=0.9, method=method)
    res = np.asarray(r.resamples)
    if method == "percentile":
        lo, hi = ref.quantile_linear(res, 0.05), ref.quantile_linear(res, 0.95)
    else:
        jack = [np.mean((np.delete(p, i) - np.delete(y, i)) ** 2) for i in range(80)]
        lo, hi = ref.bca_interval(float(r.estimate), res, jack, 0.9)
    np.testing.assert_allclose([float(r.low), float(r.high)], [lo, hi], rtol=1e-10)


def test_bca_agrees_with_scipy(x64):
    p, y = _data(2, 300)
    ours = bootstrap(brier, p, y, key=jax.random.key(1), n_resamples=10_000, method="bca")
    theirs = scipy.stats.bootstrap(
        (p, y), lambda a, b, axis=-1: np.mean((a - b) ** 2, axis=axis), paired=True, method="BCa",
        n_resamples=10_000, random_state=0,
    ).confidence_interval
    width = theirs.high - theirs.low
    # different random draws: endpoints agree up to Monte-Carlo error of 10^4 resamples
    # (about 1-2% of the width), allowed 5%
    assert abs(float(ours.low) - theirs.low) < 0.05 * width
    assert abs(float(ours.high) - theirs.high) < 0.05 * width


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_brier_interval_covers_population_value(method):
    # p ~ U(0, 1), y ~ Bernoulli(p): population Brier score E[p(1 - p)] = 1/6
    reps, n, level = 300, 200, 0.9

    def one(k):
        kp, ky, kb = jax.random.split(k, 3)
        p = jax.random.uniform(kp, (n,))
        y = (jax.random.uniform(ky, (n,)) < p).astype(jnp.int32)
        r = bootstrap(brier, p, y, key=kb, n_resamples=300, level=level, method=method)
        return (r.low <= 1 / 6) & (1 / 6 <= r.high)

    covered = np.asarray(jax.vmap(one)(jax.random.split(jax.random.key(7), reps)))
    mc_sd = np.sqrt(level * (1 - level) / reps)
    # nominal rate within 3 Monte-Carlo standard deviations (0.052)
    assert abs(covered.mean() - level) < 3 * mc_sd, covered.mean()


def test_weights_travel_with_their_rows(x64):
    rng = np.random.default_rng(4)
    x = rng.random(50)
    w = rng.integers(1, 5, 50).astype(float)

    def wmean(v, sample_weight):
        return jnp.sum(sample_weight * v) / jnp.sum(sample_weight)

    key = jax.random.key(5)
    r = bootstrap(wmean, x, key=key, n_resamples=200, sample_weight=w)
    idx = _indices(key, 50, 200)
    np.testing.assert_allclose(np.asarray(r.resamples), [np.sum(w[i] * x[i]) / np.sum(w[i]) for i in idx], rtol=1e-12)
    # unit weights: the same draws and values as no weights
    p, y = _data(5, 50)
    a = bootstrap(brier, p, y, key=key, n_resamples=50)
    b = bootstrap(brier, p, y, key=key, n_resamples=50, sample_weight=np.ones(50))
    np.testing.assert_allclose(np.asarray(a.resamples), np.asarray(b.resamples), rtol=1e-12)


def test_vector_statistic_has_elementwise_intervals():
    x = np.random.default_rng(6).normal(size=(100, 3))
    r = bootstrap(lambda a: jnp.mean(a, axis=0), x, key=jax.random.key(0), n_resamples=300)
    assert r.resamples.shape == (300, 3) and r.low.shape == (3,)
    assert bool(jnp.all(r.low < r.estimate)) and bool(jnp.all(r.estimate < r.high))


def test_paired_bootstrap_uses_the_same_draws_for_both(x64):
    p, y = _data(8, 200)
    q = np.clip(p + 0.25, 0, 1)
    key = jax.random.key(9)
    d = paired_bootstrap(brier, p, q, y, key=key, n_resamples=500)
    a = bootstrap(brier, p, y, key=key, n_resamples=500)
    b = bootstrap(brier, q, y, key=key, n_resamples=500)
    np.testing.assert_allclose(np.asarray(d.resamples), np.asarray(a.resamples - b.resamples), rtol=1e-10, atol=1e-15)
    assert float(d.high) < 0  # q is worse by a clear margin
    # the shared label noise cancels: the paired interval is narrower than the one two
    # independent intervals would give
    wa, wb = float(a.high - a.low), float(b.high - b.low)
    assert float(d.high - d.low) < np.hypot(wa, wb)


def test_smooth_ece_bootstrap_runs_in_chunks():
    p, y = _data(10, 400)
    r = bootstrap(smooth_ece, p, y, key=jax.random.key(0), n_resamples=64, chunk=16)
    assert r.resamples.shape == (64,) and float(r.low) <= float(r.estimate) <= float(r.high) + 0.05


@pytest.mark.parametrize("weighted", [False, True])
def test_smooth_ece_fast_path_resamples_like_index_draws(x64, weighted):
    """The count-vector path and the index-draw path: one distribution of resampled smECE."""
    p, y = _data(13, 300)
    p = p**1.3  # some miscalibration, so the resampled values are spread
    w = np.random.default_rng(13).uniform(0.5, 2.0, 300) if weighted else None
    fast = bootstrap(smooth_ece, p, y, key=jax.random.key(0), n_resamples=1500, sample_weight=w)
    slow = bootstrap(lambda a, b, **kw: smooth_ece(a, b, **kw), p, y, key=jax.random.key(1), n_resamples=1500,
                     sample_weight=w)
    assert float(fast.estimate) == float(slow.estimate) == float(smooth_ece(p, y, sample_weight=w))
    assert scipy.stats.ks_2samp(np.asarray(fast.resamples), np.asarray(slow.resamples)).pvalue > 1e-3
    assert scipy.stats.ks_2samp(np.asarray(fast.resamples), np.asarray(slow.resamples) * 1.1).pvalue < 1e-3


@pytest.mark.parametrize("kind", ["mixed", "near-calibrated"])
def test_smooth_ece_fast_path_values_are_smooth_ece_of_the_resamples(x64, kind):
    """Each resample's value is smooth_ece of the rows its count vector repeats. Near-calibrated
    data (n = 4000, forecasts in [0.45, 0.55]) take some bisections below sigma = 11/1024, onto
    other grids (the branch through _smooth_ece_of_counts), in batches mixed with ones that do not."""
    from jcalib.metrics.smooth import smooth_ece_count_tables
    from jcalib.stats._multinomial import counts_by_position, multinomial_draws, poisson_table

    if kind == "mixed":
        p, y = _data(14, 500)
    else:
        rng = np.random.default_rng(4000)
        p = rng.uniform(0.45, 0.55, 4000)
        y = (rng.random(4000) < p).astype(np.int32)
    n, B = p.size, 40
    key = jax.random.key(3)
    r = bootstrap(smooth_ece, p, y, key=key, n_resamples=B, chunk=16)  # 40 = 2.5 chunks: padding
    table = poisson_table(n)
    t = smooth_ece_count_tables(jnp.asarray(p), jnp.asarray(p - y), jnp.ones(n))
    occupied = t.occupied.reshape(t.coef.shape[:2])
    keys = _resample_keys(jax.random.split(key)[0], jnp.uint32(0), B)
    draws = multinomial_draws(keys, table, occupied, t.coef)
    counts = np.asarray(counts_by_position(keys, draws, table, occupied, t.place)[:, t.place])
    assert np.all(counts.sum(axis=1) == n)
    order = np.asarray(jnp.argsort(jnp.asarray(p)))
    sigmas = []
    for m, got in zip(counts, np.asarray(r.resamples)):
        want, sigma = smooth_ece(np.repeat(p[order], m), np.repeat(y[order], m), return_bandwidth=True)
        np.testing.assert_allclose(got, float(want), rtol=1e-12)  # float64 round-off
        sigmas.append(float(sigma))
    if kind == "near-calibrated":
        assert 0 < sum(s < 11 / 1024 for s in sigmas) < B


def test_smooth_ece_fast_path_calls_of_several_chunks_equal_a_call_per_chunk():
    """The fast path runs up to _CHUNKS_PER_CALL chunks per call of its program (a loop of
    traced length): 10 chunks as calls of 8 and 2 give the values of 10 calls of one chunk, the
    finer grids' chunks (near-calibrated forecasts) included."""
    rng = np.random.default_rng(7)
    p = rng.uniform(0.45, 0.55, 3000)
    y = (rng.random(3000) < p).astype(np.int32)
    pj, yj = jnp.asarray(p), jnp.asarray(y)
    w = jnp.ones_like(pj)
    R = resampling_module
    tables = R._smooth_tables(pj, yj, w, fine=False)
    fine = lambda: R._smooth_fine_tables(pj, yj, w, tables)  # noqa: E731
    resample, _ = R._smooth_chunks(tables, jax.random.key(5), None, 16, False, fine)
    assert R._CHUNKS_PER_CALL == 8
    grouped = R._run_chunks(resample, 150, 16, False, jnp.uint32, per=8)
    single = R._run_chunks(resample, 150, 16, False, jnp.uint32, per=1)
    assert np.isfinite(grouped[:150]).all()
    np.testing.assert_array_equal(grouped, single)  # the same draws and arithmetic per chunk


def test_smooth_ece_fast_path_no_retrace():
    p, y = _data(15, 200)
    bootstrap(smooth_ece, p, y, key=jax.random.key(0), n_resamples=20)
    size = resampling_module._smooth_resample_calls._cache_size()
    p2, y2 = _data(16, 200)
    bootstrap(smooth_ece, p2, y2, key=jax.random.key(1), n_resamples=20)
    assert resampling_module._smooth_resample_calls._cache_size() == size


def test_conformance_jit_vmap_no_retrace():
    traces = []

    def stat(p, y):
        traces.append(1)  # runs once per trace
        return jnp.mean((p - y.astype(p.dtype)) ** 2)

    p, y = _data(11, 64)
    bootstrap(stat, p, y, key=jax.random.key(0), n_resamples=32)
    first = len(traces)
    p2, y2 = _data(12, 64)
    bootstrap(stat, p2, y2, key=jax.random.key(1), n_resamples=32)
    assert len(traces) == first  # new data and key, same shapes: no retrace

    @jax.jit
    def lows(keys):
        return jax.vmap(lambda k: bootstrap(brier, p, y, key=k, n_resamples=32).low)(keys)

    out = lows(jax.random.split(jax.random.key(0), 4))
    assert out.shape == (4,) and len(set(np.asarray(out).tolist())) > 1


def test_bad_inputs():
    p, y = _data(0, 10)
    k = jax.random.key(0)
    with pytest.raises(TypeError, match="statistic"):
        bootstrap(3, p, y, key=k)
    with pytest.raises(ValueError, match="level"):
        bootstrap(brier, p, y, key=k, level=1.5)
    with pytest.raises(ValueError, match="method"):
        bootstrap(brier, p, y, key=k, method="basic")
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap(brier, p, y, key=k, n_resamples=0)
    with pytest.raises(ValueError, match="leading axis"):
        bootstrap(brier, p, y[:5], key=k)
    with pytest.raises(ValueError, match="sample_weight"):
        bootstrap(brier, p, y, key=k, sample_weight=-np.ones(10))
    with pytest.raises(TypeError, match="key"):
        bootstrap(brier, p, y, key=0)
    with pytest.raises(ValueError, match="at least one array"):
        bootstrap(brier, key=k)
    with pytest.raises(ValueError, match="one shape"):
        paired_bootstrap(brier, p, p[:5], y, key=k)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        paired_bootstrap(brier, p, p + 2, y, key=k)


def test_docstring_examples():
    assert doctest.testmod(resampling_module, raise_on_error=True).attempted > 0


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_host_interval_equals_the_traced_one(method):
    """Concrete inputs get their interval from NumPy and SciPy on the host, a traced bootstrap
    from its own program: the same numbers and dtype, for a float and an integer statistic."""
    p, y = _data(21, 150)
    for stat in (brier, lambda p, y: jnp.sum(y)):
        eager = bootstrap(stat, p, y, key=jax.random.key(4), n_resamples=300, method=method)
        traced = jax.jit(lambda k: bootstrap(stat, p, y, key=k, n_resamples=300, method=method))(jax.random.key(4))
        for a, b in ((eager.low, traced.low), (eager.high, traced.high)):
            assert a.dtype == b.dtype
            # float32 ndtr/ndtri of SciPy and of JAX may differ in the last bits of BCa's levels
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5)
