"""Bootstrap count vectors: the Poisson thresholds are exact, and the counts are
Multinomial(n; 1/n, ..., 1/n) — exactly, for tiny n by the distribution of whole count vectors,
and by their marginals otherwise, through the rejection path as well."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from jcalib.stats import _multinomial
from jcalib.stats._multinomial import (
    counts_by_position, multinomial_counts, multinomial_draws, poisson_counts, poisson_table,
)


@pytest.mark.parametrize("n", [100, 10_000, 1_000_000])
def test_poisson_thresholds(n):
    t = poisson_table(n)
    T = (t.hi.astype(np.float64) * 2**32 + t.lo) / 2**64
    cdf = scipy.stats.poisson(t.lam).cdf(np.arange(T.size))
    np.testing.assert_allclose(T, cdf, rtol=1e-15, atol=2**-60)  # float64 CDF against exact integers
    assert scipy.stats.poisson(t.lam).sf(T.size) < 2**-64 <= scipy.stats.poisson(t.lam).sf(T.size - 1)
    assert t.k_extra == min(n, math.ceil(8 * math.sqrt(n)))


def _draws(table, B, seed=0):
    f = jax.jit(lambda ks: multinomial_counts(ks, table))
    return np.asarray(f(jax.random.split(jax.random.key(seed), B)))


@pytest.mark.parametrize("n", [1, 3, 50, 101, 5000])
def test_counts_sum_to_n(n):
    m = _draws(poisson_table(n), 20)
    assert m.shape == (20, n) and np.all(m.sum(axis=1) == n) and np.all(m >= 0)


@pytest.mark.parametrize("lam, k_extra", [(None, None), (1.0, 1), (0.5, 3)])
def test_whole_count_vectors_are_multinomial(lam, k_extra):
    """n = 4: the 35 count vectors against their multinomial probabilities (chi-square)."""
    n, B = 4, 20_000
    m = _draws(poisson_table(n, lam, k_extra), B)  # (1.0, 1): totals of 3 or 4 only, many rejections
    vectors, freq = np.unique(m, axis=0, return_counts=True)
    prob = np.array([math.factorial(n) / np.prod([math.factorial(int(c)) for c in v]) / n**n for v in vectors])
    assert vectors.shape[0] == math.comb(2 * n - 1, n)  # every vector occurs
    assert scipy.stats.chisquare(freq, prob * B).pvalue > 1e-3


def test_marginals_are_binomial():
    n, B = 2000, 400
    m = _draws(poisson_table(n), B, seed=1)
    # every row's count is Binomial(n, 1/n); pooled over rows (nearly independent) and resamples
    k = np.arange(7)
    freq = np.bincount(np.minimum(m.ravel(), 6), minlength=7)
    pmf = scipy.stats.binom(n, 1 / n).pmf(k)
    pmf[6] = scipy.stats.binom(n, 1 / n).sf(5)
    assert scipy.stats.chisquare(freq, pmf * m.size).pvalue > 1e-3
    # and rows are exchangeable: the first and the last tenth of the rows alike
    assert scipy.stats.ks_2samp(m[:, : n // 10].ravel(), m[:, -n // 10 :].ravel()).pvalue > 1e-3


@pytest.mark.parametrize("n", [7, 1000, 100_003])
def test_extra_rows_are_uniform(n):
    """The extra draws' row indices: in [0, n), uniform (chi-square over up to 50 cells of rows), and
    the words of raw uint32 keys and of typed keys with the same data are the same."""
    keys = jax.random.split(jax.random.key(3), 64)
    rows = np.asarray(_multinomial._uniform_rows(_multinomial._seeds(keys), n, 2000))
    assert rows.min() >= 0 and rows.max() < n
    c = min(n, 50)
    cell_of = lambda r: r.astype(np.int64) * c // n  # noqa: E731
    expected = np.bincount(cell_of(np.arange(n)), minlength=c) / n * rows.size  # rows per cell
    # 1e-3: a uniform sampler fails one seed in a thousand; the keys are fixed, so the test is deterministic
    assert scipy.stats.chisquare(np.bincount(cell_of(rows.ravel()), minlength=c), expected).pvalue > 1e-3
    raw = _multinomial._seeds(jax.random.key_data(keys))
    np.testing.assert_array_equal(np.asarray(raw), np.asarray(_multinomial._seeds(keys)))


def test_a_keys_draws_do_not_depend_on_its_batch():
    table = poisson_table(300, lam=0.9, k_extra=40)  # rejections now and then
    keys = jax.random.split(jax.random.key(4), 64)
    whole = np.asarray(multinomial_counts(keys, table))
    np.testing.assert_array_equal(np.asarray(multinomial_counts(keys[5:9], table)), whole[5:9])


def test_ties_of_high_words_are_decided_by_the_low_words(monkeypatch):
    """Words made to equal the thresholds' high words often: the first pass marks those
    positions, and the counts kept are the exact ones (the low words decide)."""
    n = 400
    table = poisson_table(n, lam=0.3, k_extra=n)  # every total <= n is kept
    real = _multinomial.threefry2x32

    def often_tied(k0, k1, x0, x1):  # a quarter of the words replaced by the first two high words
        a, b = real(k0, k1, x0, x1)
        tie = lambda w: jnp.where(w % 4 == 0, jnp.asarray(table.hi[:2])[(w >> 2) % 2], w)  # noqa: E731
        return tie(a), tie(b)

    monkeypatch.setattr(_multinomial, "threefry2x32", often_tied)
    occupied, place = _multinomial.plain_layout(n)
    coef = jnp.asarray(np.random.default_rng(0).random(occupied.shape + (2,)) * occupied[..., None], jnp.float32)
    keys = jax.random.split(jax.random.key(5), 16)
    draws = multinomial_draws(keys, table, occupied, coef)
    first = _multinomial._poisson_pass(_multinomial._seeds(keys), draws.attempt, table, occupied, jnp.float32,
                                        exact=False)
    assert float(jnp.max(first)) >= _multinomial._tie_mark(table, 2)  # ties were marked
    exact = poisson_counts(keys, draws.attempt, table, occupied)
    assert not np.array_equal(np.asarray(exact), np.asarray(first))
    np.testing.assert_allclose(np.asarray(draws.sums), np.einsum("tbs,tsk->tbk", exact, np.concatenate(
        [np.asarray(coef), occupied[..., None]], axis=-1)), rtol=1e-6)  # float32 sums of a few products
    m = np.asarray(counts_by_position(keys, draws, table, occupied, jnp.asarray(place)))
    assert np.all(m.sum(axis=1) == n)
