r"""Isotonic regression for batches: pool-adjacent-violators by rounds. :func:`pav_by_rounds`
returns the fit of one problem and batches under ``vmap`` (the CORP consistency bands in
:mod:`jcalib.stats.corp` and the Venn–Abers predictors in :mod:`jcalib.recalibration.venn_abers`);
:func:`pav_block_sums` takes a batch of problems given by their sums over runs of rows and
returns a sum over each fit's blocks (the CORP bootstrap). They live here, below both
subpackages, under public names of a private module."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Float, Shaped

__all__ = ["mul_wide", "pav_block_sums", "pav_by_rounds", "products_ge"]


def pav_by_rounds(y: Float[Array, " n"], w: Float[Array, " n"]) -> Float[Array, " n"]:
    r"""The PAV fit of ``y`` with weights ``w`` (as :func:`jcalib.recalibration.pav`), by rounds that pool **every**
    adjacent pair of violating blocks at once, until none is left.

    Pooling adjacent violators in any order reaches the same isotonic fit (Ayer et al. 1955;
    Best, Chakravarti 1990, *Active set algorithms for isotonic regression; a unifying
    framework*, Math. Program.), so a round may pool all of them together. A round is a
    few passes over the rows (block ids by a running count of the boundaries, block sums by
    ``segment_sum``, never by differences of prefix sums, which would lose float32 precision): no per-row loop and no whole-array select per merge, which is what makes the
    one-at-a-time kernel slow once ``vmap`` batches it over resamples (its nested
    ``while_loop`` and ``cond`` become selects of the whole stack at every step). On forecasts
    sorted against binary outcomes, about a dozen rounds at $n = 10^5$. Rows of weight 0 join
    the block before them (the first block if none)."""
    n = y.shape[0]
    idx = jnp.arange(n, dtype=jnp.int32)
    live = w > 0
    start0 = (live & (jnp.cumsum(live, dtype=jnp.int32) > 1)).at[0].set(True)

    def means(start):
        block = jnp.cumsum(start, dtype=jnp.int32) - 1
        sw = jax.ops.segment_sum(w, block, num_segments=n, indices_are_sorted=True)
        swy = jax.ops.segment_sum(w * y, block, num_segments=n, indices_are_sorted=True)
        return (swy / jnp.where(sw > 0, sw, 1))[block]

    def pool(c):
        start, _ = c
        m = means(start)
        violated = start & (idx > 0) & (jnp.concatenate([m[:1], m[:-1]]) >= m)
        return start & ~violated, jnp.any(violated)

    start, _ = lax.while_loop(lambda c: c[1], pool, (start0, jnp.asarray(True)))
    return means(start)


def mul_wide(a, b):
    """``(hi, lo)``: the 32-bit words of the 64-bit product of two uint32 arrays (16-bit limbs,
    carries kept), for the exact comparisons here and the CORP bootstrap's uniform row indices."""
    m = jnp.uint32(0xFFFF)
    a0, a1, b0, b1 = a & m, a >> 16, b & m, b >> 16
    p00, p01, p10 = a0 * b0, a0 * b1, a1 * b0
    mid = p01 + p10
    mid_carry = (mid < p01).astype(jnp.uint32)  # the middle sum's bit 32
    lo = p00 + (mid << 16)
    return a1 * b1 + (mid >> 16) + (mid_carry << 16) + (lo < p00).astype(jnp.uint32), lo


def products_ge(a, b, c, d):
    """``a * b >= c * d`` exactly, for non-negative int32 (64-bit products)."""
    if jax.dtypes.canonicalize_dtype(jnp.int64) == jnp.int64:
        i64 = jnp.int64
        return a.astype(i64) * b.astype(i64) >= c.astype(i64) * d.astype(i64)
    u = jnp.uint32
    h1, l1 = mul_wide(a.astype(u), b.astype(u))
    h2, l2 = mul_wide(c.astype(u), d.astype(u))
    return (h1 > h2) | ((h1 == h2) & (l1 >= l2))


def _pool_round(state):
    """One round: every block whose left neighbour's mean is at least its own (or of weight 0)
    joins it, all at once; the sums are moved to the front, in order (one scatter-add each)."""
    w, wy, _, k = state
    b, cap = w.shape
    idx = jnp.arange(cap, dtype=jnp.int32)[None, :]
    wp = jnp.concatenate([jnp.zeros((b, 1), w.dtype), w[:, :-1]], axis=1)
    yp = jnp.concatenate([jnp.zeros((b, 1), wy.dtype), wy[:, :-1]], axis=1)
    if jnp.issubdtype(w.dtype, jnp.integer):
        ge = products_ge(yp, w, wy, wp)  # yp / wp >= wy / w, exactly
    else:
        ge = yp * w >= wy * wp
    # a block of weight 0 joins the one before it; the first block, if of weight 0, takes the second
    joins = (idx > 0) & (idx < k[:, None]) & ((w == 0) | ((wp == 0) & (idx == 1)) | ((wp > 0) & ge))
    keep = ~joins
    # each block's new index: the number of blocks kept up to it, less one (one flat scatter per sum)
    dest = (jnp.cumsum(keep, axis=1, dtype=jnp.int32) - 1 + (jnp.arange(b, dtype=jnp.int32) * cap)[:, None]).ravel()
    w2 = jnp.zeros((b * cap,), w.dtype).at[dest].add(w.ravel(), indices_are_sorted=True).reshape(b, cap)
    y2 = jnp.zeros((b * cap,), wy.dtype).at[dest].add(wy.ravel(), indices_are_sorted=True).reshape(b, cap)
    return w2, y2, jnp.any(joins, axis=1), jnp.sum(keep & (idx < k[:, None]), axis=1, dtype=jnp.int32)


def pav_block_sums(w: Shaped[Array, "B U"], wy: Shaped[Array, "B U"], value, *, min_size: int = 64) -> Array:
    r"""$\sum_b \mathrm{value}(W_b, Y_b)$ over the blocks $b$ of the PAV fit of each row of a batch,
    where the problem of a row is given by its units: runs of consecutive sorted rows that the fit
    keeps whole, with weights ``w`` and weighted outcome sums ``wy`` (shape ``(B, U)``).

    Pooling adjacent violators in any order reaches the same fit (Ayer et al. 1955; Best,
    Chakravarti 1990), so each round pools every violating pair at once (as
    :func:`pav_by_rounds`), but on the blocks' sums rather than on rows: the blocks left are moved
    to the front of the array by one scatter-add of each sum, and once no row of the batch holds
    more than half of the array's length, the array is cut to that half (static lengths
    $U, U/2, \dots$ down to about ``min_size``). On forecasts sorted against binary outcomes a
    round halves the blocks, so the work is about twice that of one round over the units. A unit
    of weight 0 joins the block before it (the first block if none). Integer sums (unit weights)
    are compared exactly (64-bit products); real ones in their dtype.

    Args:
        w: the units' weights $W_u \ge 0$, integer or real, shape ``(B, U)``.
        wy: the units' weighted outcome sums $Y_u$, same dtype and shape.
        value: ``value(W, Y)`` of a block, elementwise; a padded block of weight 0 must give 0.
        min_size: the length below which the array is no longer cut (static).

    Returns:
        Shape ``(B,)``: the sum of ``value`` over each row's blocks.
    """
    b, u = w.shape
    sizes = [u]
    while sizes[-1] > min_size:
        sizes.append(-(-sizes[-1] // 16) * 8)  # half, a multiple of 8
    state = (w, wy, jnp.ones((b,), bool), jnp.full((b,), u, jnp.int32))
    result, done = None, jnp.zeros((b,), bool)
    for i in range(len(sizes)):
        nxt = sizes[i + 1] if i + 1 < len(sizes) else 0
        # rounds until every row has converged or holds at most nxt blocks
        state = lax.while_loop(lambda s, nxt=nxt: jnp.any(s[2] & (s[3] > nxt)), _pool_round, state)
        w, wy, violated, k = state
        val = jnp.sum(value(w, wy), axis=1)
        finished = ~violated & ~done  # rows that converged here keep this value
        result = val if result is None else jnp.where(finished, val, result)
        done = done | finished
        if nxt:
            state = (w[:, :nxt], wy[:, :nxt], violated, k)
    return result
