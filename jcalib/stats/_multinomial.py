r"""Bootstrap count vectors: exact $\mathrm{Multinomial}(n; 1/n, \dots, 1/n)$ draws, cheaply on CPU.

A bootstrap resample of $n$ rows is the vector $m$ of how often each row was drawn. Drawing $n$
indices and counting them costs a scatter of $n$ updates (about 15 ns each on XLA's CPU backend,
slower than the statistic of :func:`jcalib.metrics.smooth_ece` from counts). Instead:

1. $m_i \sim \mathrm{Poisson}(\lambda)$ independently, $\lambda = \max(0, 1 - 4/\sqrt n)$, by
   inverse CDF from a 64-bit uniform per row: $m_i = \#\{j \ge 1 : u_i \ge F_\lambda(j - 1)\}$
   with the thresholds $\lceil 2^{64} F_\lambda(j-1) \rceil$ computed exactly on the host
   (40-digit decimals) and compared as pairs of 32-bit words; $j$ stops where the tail
   $P(M \ge j) < 2^{-64}$. The low word of $u_i$ decides only when the high word equals a
   threshold's, so the low words are drawn only when that happens (about once in 3000
   resamples at $n = 10^5$).
2. Given their total $T = t$, such counts are $\mathrm{Multinomial}(t; 1/n, \dots)$, so adding
   $n - t$ further uniform row indices (two random words each, reduced mod $n$ as
   ``jax.random.randint`` reduces them) makes them
   $\mathrm{Multinomial}(n; 1/n, \dots)$ exactly. Totals outside $[n - K, n]$,
   $K = \min(n, \lceil 8\sqrt n\rceil)$ (each side a 4-standard-deviation event: about 6
   resamples in $10^5$), are redrawn (rejection on $T$ alone keeps step 2 exact); so at most
   $K$ extra indices are drawn.

:func:`multinomial_draws` does this for a batch of $B$ keys at once and hands back only the
products of the counts with per-position coefficients (what a statistic linear in the counts per
slot needs, :func:`jcalib.metrics.smooth.smooth_ece_of_draws`): one batched matrix product, with
the batch axis laid out between the two position axes so that no transpose is needed.

Every random word is Threefry-2x32 with 20 rounds (Salmon et al. 2011, the generator behind
JAX's default keys) of a counter, keyed by the resample's key data itself (as JAX's Threefry
keys it): the counter's first word is the block (one block gives the words of two positions, or
the two words of one extra index), its second the stream (the Poisson pass's, or the extra
draws'). Reproducible from the key. The cipher is :func:`jcalib._threefry.threefry2x32`, written
in integer array operations that XLA fuses into one vectorised loop (0.2 ms per $10^5$ words on
this project's CPU, against 0.8 ms for ``jax.random.bits``), and one cipher serves every draw:
each of ``jax.random``'s functions would compile its own copy (0.3 s apiece of a first call).
"""

from __future__ import annotations

import decimal
import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .._threefry import threefry2x32

__all__ = [
    "CountDraws", "PoissonTable", "counts_by_position", "multinomial_counts", "multinomial_draws", "plain_layout",
    "poisson_counts", "poisson_table",
]

_SPREAD = 4.0  # standard deviations between E[T] and n, and between E[T] and n - K


class PoissonTable(NamedTuple):
    """Host constants of :func:`multinomial_counts` for one $n$ (see the module docstring)."""

    n: int
    lam: float
    k_extra: int
    hi: np.ndarray  # high words of the thresholds ceil(2^64 F(j - 1)), j = 1..J
    lo: np.ndarray  # low words


def poisson_table(n: int, lam: float | None = None, k_extra: int | None = None) -> PoissonTable:
    r"""Rate, extra-draw budget and exact 64-bit inverse-CDF thresholds for $n$ rows.

    ``lam`` and ``k_extra`` default to the module docstring's choice; any $0 \le \lambda \le 1$
    and $0 \le K \le n$ give exact multinomial counts (others only reject more often).
    """
    lam = max(0.0, 1.0 - _SPREAD / math.sqrt(n)) if lam is None else float(lam)
    k_extra = min(n, math.ceil(2 * _SPREAD * math.sqrt(n))) if k_extra is None else int(k_extra)
    his, los = [], []
    if lam > 0:
        ctx = decimal.Context(prec=40)
        L = decimal.Decimal(lam)  # the float's exact value
        term = ctx.exp(-L)
        cdf = decimal.Decimal(0)
        tail_limit = decimal.Decimal(2) ** -64
        j = 0
        while True:
            cdf = ctx.add(cdf, term)  # F(j)
            j += 1
            term = ctx.divide(ctx.multiply(term, L), j)
            if 1 - cdf < tail_limit:  # P(M >= j) < 2^-64: no threshold for j
                break
            t = int(ctx.multiply(cdf, 2**64).to_integral_value(rounding=decimal.ROUND_CEILING))
            his.append(t >> 32)
            los.append(t & 0xFFFFFFFF)
    return PoissonTable(n, lam, k_extra, np.asarray(his, np.uint32), np.asarray(los, np.uint32))


class CountDraws(NamedTuple):
    """A batch of $B$ count vectors, reduced (see :func:`multinomial_draws`).

    Attributes:
        sums: ``(T, B, C + 1)``: per slot $t$ and resample $b$, the Poisson counts of the slot's
            positions times each of the $C$ coefficients, summed; the last column is the count.
        attempt: ``(B,)`` uint32, the draw each resample kept (0 unless its total was redrawn):
            :func:`poisson_counts` regenerates the Poisson part from it.
        extra: the extra draws, ``(B, K)`` row indices in $[0, n)$.
        live: which extra draws count, ``(B, K)`` bool (the first $n$ minus the Poisson total).
    """

    sums: jax.Array
    attempt: jax.Array
    extra: jax.Array
    live: jax.Array


def _tie_mark(table: PoissonTable, S: int) -> float:
    """What a tie adds to a position's count in the first pass: a power of two above any slot's true count."""
    return float(2 ** math.ceil(math.log2(S * table.hi.size + 1)))


# the counter's second word for the extra draws (the Poisson passes use 2a and 2a + 1)
_EXTRA_STREAM = 0xFFFFFFFF


def _seeds(keys):
    """The cipher's key words ``(B, 2)``: each key's own data (its first two words), as JAX's
    Threefry uses them; every word drawn here is the cipher of a counter under them."""
    data = jax.random.key_data(keys) if jnp.issubdtype(keys.dtype, jax.dtypes.prng_key) else keys
    return data.reshape(data.shape[0], -1)[:, :2].astype(jnp.uint32)


def _uniform_rows(seed, n: int, K: int):
    """``(B, K)`` row indices in $[0, n)$: two cipher words per index (counter ``(i,``
    :data:`_EXTRA_STREAM` ``)``), reduced mod $n$ as ``jax.random.randint`` reduces its two words."""
    block = jnp.arange(K, dtype=jnp.uint32)[None, :]
    hi, lo = threefry2x32(seed[:, :1], seed[:, 1:], block, jnp.uint32(_EXTRA_STREAM))
    span = jnp.uint32(n)
    offset = (hi % span) * jnp.uint32(2**32 % n) + lo % span  # wraps for n > 2^16, as randint's does
    return (offset % span).astype(jnp.int32)


def _poisson_pass(seed, attempt, table: PoissonTable, occupied, dtype, exact: bool):
    """The Poisson counts ``(T, B, S)`` of step 1 (module docstring) for each key's ``attempt``,
    the keys given by their cipher words ``seed`` (:func:`_seeds`).

    ``exact=False``: from the high words only, with :func:`_tie_mark` added where a high word
    equals a threshold's (the low word would decide); ``exact=True``: the low words decide those.
    """
    T, S = occupied.shape
    s0, s1 = seed[None, :, :1], seed[None, :, 1:]  # (1, B, 1)
    blocks = jnp.arange(T * S // 2, dtype=jnp.uint32).reshape(T, 1, S // 2)  # one block serves two positions

    def words(streams):  # (..., T, B, S) 32-bit words of streams (..., 1, B, 1)
        lead = (1,) * (streams.ndim - 3)
        a, b = threefry2x32(s0.reshape(lead + s0.shape), s1.reshape(lead + s1.shape), blocks.reshape(lead + blocks.shape), streams)
        return jnp.concatenate([a, b], axis=-1)

    # u = (hi 2^32 + lo) / 2^64 >= T_j  <=>  hi > T_j's high word, or equal and lo >= its low word
    th_hi, th_lo = table.hi, table.lo
    if exact:  # the low words have a stream of their own; both streams in one pass of the cipher
        hi, lo = words(jnp.stack([2 * attempt, 2 * attempt + jnp.uint32(1)])[:, None, :, None])
    else:
        hi = words((2 * attempt)[None, :, None])
    m = sum((hi > jnp.uint32(th_hi[j])).astype(dtype) for j in range(th_hi.size) if th_hi[j] != 0xFFFFFFFF)
    if exact:
        m = m + sum(((hi == jnp.uint32(h)) & (lo >= jnp.uint32(l))).astype(dtype) for h, l in zip(th_hi, th_lo))
    else:
        tie = functools.reduce(jnp.logical_or, [hi == jnp.uint32(v) for v in np.unique(th_hi)])
        m = m + _tie_mark(table, S) * tie.astype(dtype)
    return jnp.where(jnp.asarray(occupied)[:, None, :], m, 0)


def poisson_counts(keys, attempt, table: PoissonTable, occupied, dtype=jnp.float32):
    """The exact Poisson part ``(T, B, S)`` of :func:`multinomial_draws` (from its ``attempt``):
    from the high words, and again with the low words only when some high word ties a
    threshold's (a real branch: rare, see :func:`_tie_mark`)."""
    if not table.hi.size:
        return jnp.zeros(occupied.shape[:1] + (keys.shape[0],) + occupied.shape[1:], dtype)
    seed = _seeds(keys)
    m = _poisson_pass(seed, attempt, table, occupied, dtype, exact=False)
    tied = jnp.any(m >= _tie_mark(table, occupied.shape[1]))
    return lax.cond(tied, lambda: _poisson_pass(seed, attempt, table, occupied, dtype, True), lambda: m)


def multinomial_draws(keys, table: PoissonTable, occupied, coef) -> CountDraws:
    r"""$B$ exact $\mathrm{Multinomial}(n; 1/n, \dots, 1/n)$ count vectors, one per key, reduced by ``coef``.

    The rows sit at the ``occupied`` positions (``(T, S)`` bool, $S$ even, $n$ true entries; row
    $i$ at the $i$-th one of the caller's choosing, ``place``). A statistic linear in the counts
    per slot needs only the products with the per-position coefficients ``coef`` ``(T, S, C)``
    (0 at unoccupied positions): they are one batched matrix product over the slots, and the
    counts themselves are never laid out per resample. The first pass marks ties of high words
    in the counts (:func:`_tie_mark`); the count column of the product reveals them, and only a
    batch with a tie (about once in 3000 resamples at $n = 10^5$) is computed again with the low
    words. A resample whose total falls outside $[n - K, n]$ is redrawn (``attempt`` + 1) by a
    loop that runs only when some resample needs it. The draws of key $b$ depend on that key
    alone, not on the others in the batch.
    """
    n = table.n
    T, S = occupied.shape
    if S % 2:
        raise ValueError(f"the layout needs an even number of columns, got {S}")
    B = keys.shape[0]
    dt = coef.dtype
    coef1 = jnp.concatenate([coef, jnp.asarray(occupied, dt)[..., None]], axis=-1)  # the count as column C

    def product(m):
        return jnp.einsum("tbs,tsk->tbk", m, coef1, precision=lax.Precision.HIGHEST)

    def total(sums):  # exact: each slot's count is a small integer; -1 where a tie is marked
        count = sums[..., -1]
        t = jnp.sum(count.astype(jnp.int32), axis=0, dtype=jnp.int32)
        return jnp.where(jnp.any(count >= _tie_mark(table, S), axis=0), -1, t)

    def outside(t):  # a marked tie counts as outside (-1 < n - K)
        return (t > n) | (t < n - table.k_extra)

    attempt = jnp.zeros((B,), jnp.uint32)
    seed = _seeds(keys)
    if table.hi.size:
        def body(carry):  # (rare) the marked resamples again with their low words, a total outside anew
            attempt, sums, t = carry
            bad = outside(t)
            attempt = attempt + (bad & (t >= 0)).astype(jnp.uint32)
            sums = jnp.where(bad[None, :, None], product(_poisson_pass(seed, attempt, table, occupied, dt, True)), sums)
            return attempt, sums, total(sums)

        sums = product(_poisson_pass(seed, attempt, table, occupied, dt, exact=False))
        # a loop, not a cond: its buffers are updated in place, while a cond would copy the sums
        attempt, sums, t = lax.while_loop(lambda c: jnp.any(outside(c[2])), body, (attempt, sums, total(sums)))
    else:  # lambda = 0 (n <= 64): every draw is an extra one
        sums = jnp.zeros((T, B, coef1.shape[-1]), dt)
        t = jnp.zeros((B,), jnp.int32)
    extra = _uniform_rows(seed, n, table.k_extra)
    live = jnp.arange(table.k_extra, dtype=jnp.int32)[None, :] < (n - t)[:, None]
    return CountDraws(sums, attempt, extra, live)


def counts_by_position(keys, draws: CountDraws, table: PoissonTable, occupied, place):
    """The count vectors of :func:`multinomial_draws` in the layout, ``(B, T * S)`` int32 (row $i$
    at ``place[i]``): the Poisson part regenerated from ``keys`` (:func:`poisson_counts`; the
    draws keep only its products), the extra draws added."""
    m = poisson_counts(keys, draws.attempt, table, occupied)
    T, B, S = m.shape
    flat = jnp.transpose(m, (1, 0, 2)).reshape(B, T * S).astype(jnp.int32)
    return flat.at[jnp.arange(B)[:, None], place[draws.extra]].add(draws.live.astype(jnp.int32))


def plain_layout(n: int):
    r"""Rows $0, \dots, n-1$ at positions $0, \dots, n-1$ of a ``(ceil(n/2), 2)`` layout: ``(occupied, place)``."""
    T = -(-n // 2)
    return np.arange(2 * T).reshape(T, 2) < n, np.arange(n)


def multinomial_counts(keys, table: PoissonTable):
    """Count vectors by row, ``(B, n)`` int32, one per key (:func:`multinomial_draws` on the plain layout)."""
    occupied, place = plain_layout(table.n)
    draws = multinomial_draws(keys, table, occupied, jnp.zeros(occupied.shape + (0,), jnp.float32))
    return counts_by_position(keys, draws, table, occupied, jnp.asarray(place))[:, place]
