r"""Poisson-binomial distributions of per-bin label sums, for exact O(bins) consistency resampling.

Under the null of :func:`jcalib.stats.consistency_test` the outcomes are independent,
$y_i \sim \mathrm{Bernoulli}(p_i)$, so the number of ones in a set of forecasts is a
Poisson-binomial variable with generating function $\prod_i (1 - p_i + p_i z)$ and sums over
disjoint bins are independent. The pmf is that product's coefficients, computed on the host in
float64 by divide and conquer: the linear factors are multiplied pairwise, level by level,
batched (direct sums for short polynomials, FFT products beyond), $O(m \log^2 m)$ for $m$
forecasts. FFT products carry float64 round-off in absolute terms (about $10^{-16}$ per
coefficient); negative round-off is clipped to 0 and the pmf renormalised. Each bin keeps only
the window of counts $|s - \mu| \le t$ with $e^{-2t^2/m} = 2^{-64}$: by Hoeffding's inequality
the mass beyond it on either side is below $2^{-64}$, far below the resolution of the uniforms
that draw from it (so the truncation is invisible to the draws).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["poisson_binomial_pmf", "poisson_binomial_cdfs"]

_DIRECT = 32  # polynomials of at most this many coefficients are multiplied by direct sums
_TAIL = 2.0**-64  # tail mass dropped on each side of a bin's window


def poisson_binomial_pmf(q: np.ndarray) -> np.ndarray:
    r"""pmf of $\sum_i \mathrm{Bernoulli}(q_i)$ on $\{0, \dots, m\}$, float64 (host NumPy).

    Coefficients of $\prod_i (1 - q_i + q_i z)$, multiplied pairwise in a balanced tree
    (padding factors are $1$), so the cost is $O(m \log^2 m)$.
    """
    return _pmfs([np.asarray(q, dtype=np.float64).reshape(-1)])[0]


def _pmfs(qs: list[np.ndarray]) -> list[np.ndarray]:
    """:func:`poisson_binomial_pmf` of each array; arrays of one power-of-two size class share one tree."""
    out: list[np.ndarray | None] = [None] * len(qs)
    classes: dict[int, list[int]] = {}
    for i, q in enumerate(qs):
        classes.setdefault(1 << max(0, (q.size - 1).bit_length()), []).append(i)
    for k, members in classes.items():
        polys = np.zeros((len(members), k, 2))
        polys[:, :, 0] = 1.0  # padding factors: 1 + 0 z
        for r, i in enumerate(members):
            polys[r, : qs[i].size, 0] = 1.0 - qs[i]
            polys[r, : qs[i].size, 1] = qs[i]
        while polys.shape[1] > 1:
            a, b = polys[:, 0::2], polys[:, 1::2]
            d = a.shape[2]
            if d <= _DIRECT:
                prod = np.zeros(a.shape[:2] + (2 * d - 1,))
                for j in range(d):
                    prod[:, :, j : j + d] += a[:, :, j : j + 1] * b
            else:
                nfft = 1 << (2 * d - 2).bit_length()
                fa, fb = np.fft.rfft(a, nfft, axis=2), np.fft.rfft(b, nfft, axis=2)
                prod = np.fft.irfft(fa * fb, nfft, axis=2)[:, :, : 2 * d - 1]
            polys = prod
        for r, i in enumerate(members):
            pmf = np.clip(polys[r, 0, : qs[i].size + 1], 0.0, None)  # FFT round-off can dip below 0
            out[i] = pmf / np.sum(pmf)
    return out


def _half_width(m: int) -> float:
    return math.sqrt(m * math.log(1 / _TAIL) / 2)


def poisson_binomial_cdfs(q: np.ndarray, bins: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Truncated CDF windows of the label sum of each bin, for inverse-CDF draws.

    Args:
        q: forecasts in $[0, 1]$, shape ``(n,)``.
        bins: bin index of each forecast in $[0, K)$, shape ``(n,)``.
        n_bins: $K$.

    Returns:
        ``(lo, F)``: ``lo[b]`` is the smallest count kept for bin $b$, and
        ``F[b, j] = P(S_b \le lo_b + j)`` for the counts of the window but its last; rows are
        padded with 2.0 to a width that depends on $n$ only, so
        $S_b = lo_b + \#\{j : F_{b,j} \le u\}$ for a uniform $u \in [0, 1)$.
    """
    q = np.asarray(q, dtype=np.float64)
    bins = np.asarray(bins)
    order = np.argsort(bins, kind="stable")
    qs = np.split(q[order], np.cumsum(np.bincount(bins, minlength=n_bins))[:-1])
    los, rows = [], []
    for qb, pmf in zip(qs, _pmfs(qs)):
        # Hoeffding: P(S - mu >= t) <= exp(-2 t^2 / m) = 2^-64 (likewise below the mean); the
        # bound, not the computed tails (whose round-off is larger than 2^-64), sets the window
        mu, t = float(np.sum(qb)), _half_width(qb.size)
        lo, hi = max(0, math.floor(mu - t)), min(qb.size, math.ceil(mu + t))
        cdf = np.cumsum(pmf)
        los.append(lo)
        rows.append(cdf[lo:hi])  # P(S <= s) for s in [lo, hi); S = hi takes the rest
    # one width for every data set of n forecasts (the window of a bin holding all of them), so
    # compiled consumers see one shape per n
    width = max(1, min(q.size, math.ceil(2 * _half_width(q.size)) + 2), max(r.size for r in rows))
    F = np.full((n_bins, width), 2.0)
    for b, r in enumerate(rows):
        F[b, : r.size] = r
    return np.asarray(los, dtype=np.int64), F
