"""BCa's grouped jackknife (jcalib.stats.resampling): the leave-one-out jackknife exactly up to
n = 1000 rows (on the smooth-ECE fast path too), the grouped one's acceleration constant and
intervals against the exact jackknife, and one compiled program per statistic and shape
(counted with jax.monitoring)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import stats as ref

from jcalib.metrics import brier, smooth_ece
from jcalib.stats import bootstrap
from jcalib.stats import resampling as R


def _data(seed, n):
    rng = np.random.default_rng(seed)
    p = rng.random(n) ** 1.5
    return p, (rng.random(n) < p**0.8).astype(np.int32)


def _acceleration(jack):
    d = np.mean(jack) - np.asarray(jack, float)
    return np.sum(d**3) / (6 * np.sum(d**2) ** 1.5)


def _jackknife(statistic, p, y, key, chunk=64):
    """The jackknife values bootstrap(..., method="bca", key=key) uses, through its own chunks."""
    n = p.shape[0]
    G, m = R._groups(n)
    order = R._jackknife_order(jax.random.split(key)[1], n, G)
    if statistic is smooth_ece:
        pj, yj = jnp.asarray(p), jnp.asarray(y)
        w = jnp.ones(n, pj.dtype)
        tables = R._smooth_tables(pj, yj, w, fine=False)
        fine = lambda: R._smooth_fine_tables(pj, yj, w, tables)  # noqa: E731
        _, delete = R._smooth_chunks(tables, None, R._smooth_groups(tables, order, G, m), chunk, False, fine)
        per = R._CHUNKS_PER_CALL
    else:
        arrays = (jnp.asarray(p), jnp.asarray(y))
        delete = lambda s, k: R._jackknife_chunk(statistic, arrays, None, order, s, chunk, m)  # noqa: E731
        per = 1
    return np.asarray(R._run_chunks(delete, G, chunk, False, jnp.int32, per))[:G]


def test_fast_path_bca_is_the_textbook_interval_with_the_leave_one_out_jackknife(x64):
    """n <= 1000: every row is its own group; the smooth-ECE fast path's jackknife values are
    smooth_ece of the n - 1 other rows (to float64 round-off, as its resamples), and the
    interval is Efron's formula on them."""
    p, y = _data(0, 120)
    r = bootstrap(smooth_ece, p, y, key=jax.random.key(2), n_resamples=400, level=0.9, method="bca")
    jack = _jackknife(smooth_ece, p, y, jax.random.key(2))
    want = np.array([float(smooth_ece(np.delete(p, i), np.delete(y, i))) for i in range(120)])
    np.testing.assert_allclose(jack, want, rtol=1e-12)
    lo, hi = ref.bca_interval(float(r.estimate), np.asarray(r.resamples), want, 0.9)
    np.testing.assert_allclose([float(r.low), float(r.high)], [lo, hi], rtol=1e-10)


@pytest.mark.parametrize("statistic", [brier, smooth_ece], ids=["brier", "smooth_ece"])
def test_grouped_jackknife_agrees_with_the_exact_one(x64, monkeypatch, statistic):
    """n = 2000 rows in G = 500 groups of 4 against the leave-one-out jackknife (G = n), same
    key, so the same resamples: only the acceleration differs.

    The grouped constant is the skewness of G group values over 6 sqrt(G): its standard error is
    about sqrt(6 / G) on the scale of the groups' skewness gamma / sqrt(m) (gamma = 6 sqrt(n) a),
    so relative to the constant about sqrt(6 n) / (G |gamma|): 0.14 for the Brier score here;
    it must agree within 3 such standard errors. Smooth ECE's constant is a fifth of the Brier
    score's (its jackknife values are nearly symmetric), so its grouped estimate is relatively
    noisier, but the constant enters the endpoints' levels only through a (z0 + z)^2, a few
    thousandths here: the intervals must agree within 1% of their width for both."""
    n, G = 2000, 500
    p, y = _data(1, n)
    key = jax.random.key(3)
    monkeypatch.setattr(R, "_JACKKNIFE_GROUPS", n)
    exact = bootstrap(statistic, p, y, key=key, n_resamples=2000, method="bca")
    a_exact = _acceleration(_jackknife(statistic, p, y, key))
    monkeypatch.setattr(R, "_JACKKNIFE_GROUPS", G)
    grouped = bootstrap(statistic, p, y, key=key, n_resamples=2000, method="bca")
    a_grouped = _acceleration(_jackknife(statistic, p, y, key))
    np.testing.assert_array_equal(np.asarray(grouped.resamples), np.asarray(exact.resamples))
    if statistic is brier:
        se = np.sqrt(6 * n) / (G * abs(6 * np.sqrt(n) * a_exact))
        assert abs(a_grouped - a_exact) < 3 * se * abs(a_exact), (a_grouped, a_exact, se)
    width = float(exact.high - exact.low)
    assert abs(float(grouped.low - exact.low)) < 0.01 * width
    assert abs(float(grouped.high - exact.high)) < 0.01 * width


def _compiles(run):
    """Number of XLA compilations during ``run()`` (jax.monitoring's backend-compile events)."""
    events = []

    def listen(event, duration, **_):
        if event == "/jax/core/compile/backend_compile_duration":
            events.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        run()
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    return len(events)


@pytest.mark.parametrize("statistic", [brier, smooth_ece], ids=["brier", "smooth_ece"])
@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_one_program_per_statistic_and_shape(statistic, method):
    """New data, a new key and another number of resamples (in the same power-of-two bucket of
    chunks) compile nothing; a number of resamples in another bucket compiles only the interval."""
    p, y = _data(4, 300)
    p = p.astype(np.float32)

    def run(seed, B):
        q, z = _data(seed, 300)
        return lambda: jax.block_until_ready(
            bootstrap(statistic, q.astype(np.float32), z, key=jax.random.key(seed), n_resamples=B, method=method, chunk=32))

    run(5, 40)()  # 2 chunks of 32: a bucket of 2
    assert _compiles(run(6, 60)) == 0  # 2 chunks again
    assert _compiles(run(7, 100)) <= 1  # 4 chunks: the interval's sort of 128 values
