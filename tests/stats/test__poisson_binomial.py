"""Poisson-binomial pmfs of the consistency test's fast path: exact against enumeration and the
textbook DP, and the CDF windows lose no more than their stated 2^-64 of tail mass."""

import numpy as np
import pytest
from reference import poisson_binomial as ref

from jcalib.stats._poisson_binomial import poisson_binomial_cdfs, poisson_binomial_pmf


@pytest.mark.parametrize("m", [0, 1, 2, 5, 11])
def test_pmf_equals_enumeration(m):
    q = np.random.default_rng(m).random(m)
    np.testing.assert_allclose(poisson_binomial_pmf(q), ref.pmf_by_enumeration(q), rtol=0, atol=1e-15)


@pytest.mark.parametrize("m", [40, 333, 3000])
def test_pmf_equals_dp(m):
    rng = np.random.default_rng(m)
    q = rng.random(m) ** 3  # skewed towards 0, with some certain outcomes
    q[:3] = [0.0, 1.0, 1.0]
    # FFT products (d > 32 coefficients) carry float64 round-off of about 1e-16 per coefficient
    np.testing.assert_allclose(poisson_binomial_pmf(q), ref.pmf_by_dp(q), rtol=0, atol=1e-14)


def test_cdf_windows():
    rng = np.random.default_rng(0)
    q = rng.random(5000)
    bins = np.minimum((q * 7).astype(int), 6)
    bins[bins == 3] = 2  # bin 3 empty
    lo, F = poisson_binomial_cdfs(q, bins, 7)
    assert F.shape[0] == 7 and lo[3] == 0 and np.all(F[3] == 2.0)  # empty bin: S = 0 always
    for b in (0, 2, 6):
        pmf = ref.pmf_by_dp(q[bins == b])
        cdf = np.cumsum(pmf)
        kept = F[b][F[b] <= 1.0]
        np.testing.assert_allclose(kept, cdf[lo[b] : lo[b] + kept.size], rtol=0, atol=1e-13)
        assert cdf[lo[b] - 1] <= 2.0**-64 if lo[b] > 0 else True  # mass below the window
        assert 1 - cdf[lo[b] + kept.size - 1] > 0  # the last count of the window takes the rest
        assert np.sum(pmf[lo[b] + kept.size + 1 :]) <= 2.0**-64  # mass above the window
    # the width depends on n only
    assert poisson_binomial_cdfs(rng.random(5000), np.zeros(5000, int), 7)[1].shape == F.shape
