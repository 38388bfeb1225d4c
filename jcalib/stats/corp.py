r"""CORP: consistent, optimally binned, reproducible reliability diagrams and score
decompositions by isotonic regression (Dimitriadis, Gneiting, Jordan 2021).

**Recalibration by PAV.** Sort the forecasts $x_1 \le \dots \le x_n$ and pool exact ties.
The CORP estimate of the conditional event probability $\mathbb P(Y = 1 \mid X = x)$ is the
isotonic (non-decreasing) least-squares fit $\hat x_i$ of the outcomes on the forecasts, found
by pool-adjacent-violators (:func:`jcalib.recalibration.pav`): it bins the forecasts optimally
(the bins are the PAV blocks) and needs no tuning (Dimitriadis, Gneiting, Jordan 2021, the CORP
approach). The same $\hat x$ minimises the mean of every proper scoring
rule for the mean of a binary outcome among non-decreasing maps, so one fit serves the Brier
and the log score.

**Score decomposition** (their CORP score decomposition): with $\bar S$ the mean score of the forecasts,
$\bar S_{\mathrm{rc}}$ that of the recalibrated $\hat x$ and $\bar S_{\mathrm{mg}}$ that of the
marginal (climatological) forecast $r = \bar y$,

$$\bar S = \underbrace{(\bar S - \bar S_{\mathrm{rc}})}_{\mathrm{MCB}}
 - \underbrace{(\bar S_{\mathrm{mg}} - \bar S_{\mathrm{rc}})}_{\mathrm{DSC}}
 + \underbrace{\bar S_{\mathrm{mg}}}_{\mathrm{UNC}},$$

miscalibration $\mathrm{MCB} \ge 0$ (zero iff the forecasts are their own PAV fit),
discrimination $\mathrm{DSC} \ge 0$ and uncertainty $\mathrm{UNC}$. For the Brier score
$S(x, y) = (x - y)^2$ and the log score $S(x, y) = -y \log x - (1 - y)\log(1 - x)$ (with
$0 \log 0 = 0$).

**Quantile forecasts.** For a quantile at level $\alpha$ the score is the pinball loss
$S_\alpha(q, y) = (\mathbb 1\{y \le q\} - \alpha)(q - y)$; the recalibrated forecast is the
isotonic $\alpha$-quantile regression of the outcomes on the forecasts and the marginal forecast
the $\alpha$-quantile of the outcomes (Gneiting, Resin 2023, *Regression diagnostics meets
forecast evaluation: conditional calibration, reliability diagrams, and coefficient of
determination*, Electron. J. Stat.; Jordan, Mühlemann, Ziegel 2022, *Characterizing the
optimal solutions to the isotonic regression problem for identifiable functionals*, Ann. Inst.
Stat. Math.). The $\alpha$-quantile is set-valued, so, as model-diagnostics does, PAV runs
with the lower quantile of each block (``inverted_cdf``), the upper quantile is taken on the
blocks found and made non-decreasing from the right, and the fit is the midpoint of the two;
the marginal forecast is the midpoint of the outcomes' lower and upper $\alpha$-quantiles.
Ties of the forecasts are ordered by decreasing outcome before PAV (model-diagnostics' order).

**CRPS.** $\mathrm{CRPS}(F, y) = 2\int_0^1 S_\alpha(F^{-1}(\alpha), y)\,d\alpha$, so for a
forecast given by its quantiles at levels $\alpha_1, \dots, \alpha_K$ (e.g. $\alpha_k =
(2k - 1)/(2K)$) the CRPS is approximated by $\frac{2}{K}\sum_k S_{\alpha_k}$ and decomposes
level by level: MCB, DSC and UNC of the CRPS are $\frac 2K$ times the sums of the quantile
decompositions (the quantile-based decomposition of Arnold, Walz, Ziegel, Gneiting 2024,
*Decompositions of the mean continuous ranked probability score*, Electron. J. Stat.).

**Intervals.** With a PRNG ``key`` the components get percentile bootstrap intervals: rows
are resampled with replacement $B$ times and the whole decomposition (PAV included) is
recomputed, in chunks of resamples. For the binary scores a resample is its count vector over
the once-sorted forecasts (multinomial, drawn as Poisson counts topped up to $n$ draws), so no
resample is sorted again, and its PAV runs over runs of rows that every resample's fit keeps
whole. A key gives the same resamples on every call; the draws do not depend on the weights.

**Consistency bands** (:func:`corp_curve`), as the R package reliabilitydiag draws them: under
the null hypothesis of calibration the outcomes are drawn again as $Y^*_i \sim
\mathrm{Bernoulli}(x_i)$, the PAV fit is recomputed, and the band at each forecast value is the
pointwise $\frac{1 - \ell}{2}$ and $\frac{1 + \ell}{2}$ quantiles of the refits (their uncertainty
quantification by resampling). A PAV curve outside the band is evidence of miscalibration there.

References:
    T. Dimitriadis, T. Gneiting, A. I. Jordan (2021), *Stable reliability diagrams for
    probabilistic classifiers*, PNAS 118(8), e2016191118.
"""

from __future__ import annotations

import functools
import math
from decimal import Decimal
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy.special import xlogy
from jaxtyping import Array, Float

from .._threefry import fold_in, split
from .._validation import (
    BinaryLabels,
    BinaryProbs,
    Choice,
    Custom,
    Int,
    Key,
    Real,
    RealArray,
    Weights,
    declare,
)
from .._isotonic import mul_wide, pav_block_sums, pav_by_rounds
from ..recalibration import pav

__all__ = ["CORPCurve", "ScoreDecomposition", "corp_curve", "quantile_score_decomposition", "score_decomposition"]


class ScoreDecomposition(NamedTuple):
    r"""$\bar S = \mathrm{MCB} - \mathrm{DSC} + \mathrm{UNC}$, with bootstrap intervals.

    Attributes:
        score: the mean score $\bar S$ of the forecasts.
        miscalibration: MCB $= \bar S - \bar S_{\mathrm{rc}} \ge 0$.
        discrimination: DSC $= \bar S_{\mathrm{mg}} - \bar S_{\mathrm{rc}} \ge 0$.
        uncertainty: UNC $= \bar S_{\mathrm{mg}}$.
        low: lower ends of the percentile bootstrap intervals of ``(score, miscalibration,
            discrimination, uncertainty)``, stacked on the last axis (shape ``(..., 4)``), or
            ``None`` without a key.
        high: the upper ends, likewise.
        resamples: the resampled components, shape ``(B, ..., 4)``, or ``None``.
    """

    score: Array
    miscalibration: Array
    discrimination: Array
    uncertainty: Array
    low: Array | None = None
    high: Array | None = None
    resamples: Array | None = None


class CORPCurve(NamedTuple):
    """The arrays a CORP reliability diagram draws, over the sorted forecasts.

    Attributes:
        forecasts: the forecasts sorted ascending, shape ``(n,)``.
        recalibrated: the PAV fit (the conditional event probability) at each, shape ``(n,)``.
        band_low: lower end of the consistency band at each forecast, or ``None`` without a key.
        band_high: upper end of the band, or ``None``.
    """

    forecasts: Array
    recalibrated: Array
    band_low: Array | None = None
    band_high: Array | None = None


# --- binary scores ----------------------------------------------------------------------------


def _brier(x, y):
    return (x - y) ** 2


def _log(x, y):
    return -xlogy(y, x) - xlogy(1 - y, 1 - x)  # 0 log 0 = 0, as for a recalibrated 0 or 1


_BINARY_SCORES = {"brier": _brier, "log": _log}


def _tie_ids(xs):
    """Index of the tie group of each sorted forecast (exact ties pooled), shape ``(n,)``."""
    new = jnp.concatenate([jnp.ones((1,), bool), xs[1:] != xs[:-1]])
    return jnp.cumsum(new, dtype=jnp.int32) - 1


def _recalibrate(ys, gid, w):
    """PAV fit at each sorted row: tie groups pooled (weights summed, labels averaged), then
    :func:`pav` over the groups; groups of weight 0 take their neighbours' values."""
    n = ys.shape[0]
    gw = jax.ops.segment_sum(w, gid, num_segments=n)
    gwy = jax.ops.segment_sum(w * ys, gid, num_segments=n)
    gy = jnp.where(gw > 0, gwy / jnp.where(gw > 0, gw, 1), 0)
    return pav(gy, gw)[gid]


def _recalibrate_batched(ys, gid, w):
    """:func:`_recalibrate` for many weight vectors under ``vmap`` (PAV by rounds)."""
    n = ys.shape[0]
    gw = jax.ops.segment_sum(w, gid, num_segments=n)
    gwy = jax.ops.segment_sum(w * ys, gid, num_segments=n)
    gy = jnp.where(gw > 0, gwy / jnp.where(gw > 0, gw, 1), 0)
    return pav_by_rounds(gy, gw)[gid]


def _components(score_fn, xs, ys, recal, w):
    """(score, MCB, DSC, UNC) of weighted rows from the forecasts and their recalibration."""
    total = jnp.sum(w)
    ybar = jnp.sum(w * ys) / total

    def mean(scores):  # a row of weight 0 counts 0, even where its score is infinite
        return jnp.sum(jnp.where(w > 0, w * scores, 0)) / total

    s, s_rc, s_mg = mean(score_fn(xs, ys)), mean(score_fn(recal, ys)), mean(score_fn(ybar, ys))
    return jnp.stack([s, s - s_rc, s_mg - s_rc, s_mg])


def _binary_decomposition(score_fn, xs, ys, gid, w):
    recal = _recalibrate(ys, gid, w)
    return _components(score_fn, xs, ys, recal, w)


def _percentile(res, level):
    """Percentile interval (NumPy's linear interpolation) over the leading axis."""
    dt = res.dtype
    a = jnp.asarray((1 - level) / 2, dt)
    return jnp.quantile(res, a, axis=0), jnp.quantile(res, 1 - a, axis=0)


def _chunked_map(fn, key, n_resamples, chunk):
    """``fn(k)`` for ``n_resamples`` keys split from ``key``, ``chunk`` vmapped at once; the
    last chunk is filled up and cut, so one batched body is compiled."""
    chunk = min(chunk, n_resamples)
    padded = -(-n_resamples // chunk) * chunk
    return lax.map(fn, split(key, padded), batch_size=chunk)[:n_resamples]


def _result(est, res, level):
    if res is None:
        return ScoreDecomposition(est[..., 0], est[..., 1], est[..., 2], est[..., 3])
    lo, hi = _percentile(res, level)
    return ScoreDecomposition(est[..., 0], est[..., 1], est[..., 2], est[..., 3], lo, hi, res)


_LEVEL = Real(0, 1, open_lo=True, open_hi=True, static=True)  # a confidence level, static under jit
_RESAMPLES = Int(1, 2**20, bytes_per=8, what="its resampled components")
_CHUNK = Int(1, 2**16)


def _segments(xs, ys, gid):
    r"""Segment id of each sorted row and the number of segments: the runs of tie groups that lie
    in one PAV block of **every** bootstrap resample, so a resample's PAV runs over segments.

    A block of an isotonic fit has every suffix mean at most its mean $m$ and every prefix mean at
    least $m$ (else splitting it lowers the squared error). So where two blocks meet, the last tie
    group of the left block has a resampled mean $< 1$ (it holds an outcome 0) and the first group
    of the right block a mean $> 0$ (it holds an outcome 1). Between two such groups, some adjacent
    pair of tie groups has a 0 in the left one and a 1 in the right one (take the last group
    holding a 0: the next holds only 1s); segments are cut only there, rows of weight 0 included,
    which, whatever the counts, leaves every block boundary on a cut."""
    n = xs.shape[0]
    has0 = jax.ops.segment_max((ys == 0).astype(jnp.int32), gid, num_segments=n, indices_are_sorted=True) > 0
    has1 = jax.ops.segment_max((ys == 1).astype(jnp.int32), gid, num_segments=n, indices_are_sorted=True) > 0
    cut = jnp.concatenate([jnp.zeros((1,), bool), has0[:-1] & has1[1:]])
    seg = jnp.cumsum(cut, dtype=jnp.int32)[gid]
    return seg, seg[-1] + 1


_UNIT = 8  # rows per unit: each segment is cut into runs of at most this many consecutive rows


def _unit_slots(seg, rows_per_unit):
    """Slot of each sorted row when every segment is cut into units of ``rows_per_unit``
    consecutive rows and unit ``u`` holds slots ``u * rows_per_unit`` onwards; and the number of units."""
    n = seg.shape[0]
    i = jnp.arange(n, dtype=jnp.int32)
    first = jnp.concatenate([jnp.ones((1,), bool), seg[1:] != seg[:-1]])
    q = i - lax.cummax(jnp.where(first, i, 0))  # position in the segment
    unit = jnp.cumsum(q % rows_per_unit == 0, dtype=jnp.int32) - 1
    return unit * rows_per_unit + q % rows_per_unit, unit[-1] + 1


@jax.jit
def _prepare(probs, labels, w):
    order = jnp.argsort(probs)
    xs, ys, ws = probs[order], labels[order], w[order]
    gid = _tie_ids(xs)
    seg, n_segments = _segments(xs, ys, gid)
    slot, n_units = _unit_slots(seg, _UNIT)
    return xs, ys, ws, gid, slot, n_units


def _size_bucket(m, n):
    """A static size for ``m`` things: rounded up to a multiple of an eighth of the power of two below
    it (a few compiled sizes over all data sets), or ``n`` when ``m`` is traced."""
    if isinstance(m, jax.core.Tracer):
        return n
    s = int(m)
    step = 1 << max(s.bit_length() - 4, 0)
    return min(-(-s // step) * step, n)


# A resample's count vector is drawn as independent Poisson counts of mean lambda / n per row, their
# total N topped up with n - N rows drawn uniformly (redrawn in the rare case N > n or n - N > the
# room M for them): lambda = n - _SLACK * sqrt(n), M = (_SLACK + _ROOM) * sqrt(n).
_SLACK, _ROOM = 5.0, 6.0


def _poisson_plan(n):
    r"""Thresholds $T_k = \mathrm{round}(2^{32} F(k - 1))$ of the Poisson($\mu$) CDF $F$, $\mu =
    \lambda / n$, as uint32 (a count is the number of thresholds a 32-bit word reaches; counts whose
    probability is below $2^{-32}$ are cut off), and the room ``M`` for the rows drawn on top."""
    lam = max(n - _SLACK * math.sqrt(n), 0.0)
    room = min(n, math.ceil((_SLACK + _ROOM) * math.sqrt(n)) + 1)
    mu, thresholds = lam / n, []
    if mu > 0:
        pk, cdf, k = math.exp(-mu), 0.0, 0
        while True:
            cdf += pk  # P(count <= k)
            t = round(cdf * 2.0**32)
            if t >= 2**32:
                break
            thresholds.append(t)  # count > k iff the word is >= t
            k += 1
            pk *= mu / k
    return thresholds, room


def _words(key, shape):
    """Uniform 32-bit words from XLA's counter-based Threefry generator (several times faster on a
    CPU than ``jax.random.bits``), keyed by ``key``'s data. Under ``vmap`` each key draws its own
    words (a loop over the keys): XLA's own batching of the generator would key every lane by the
    first key."""
    data = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    data = jnp.concatenate([data.reshape(-1).astype(jnp.uint32), jnp.zeros((4,), jnp.uint32)])[:4]

    @jax.custom_batching.custom_vmap
    def generate(d):
        return lax.rng_bit_generator(d, shape, jnp.uint32, algorithm=lax.RandomAlgorithm.RNG_THREE_FRY)[1]

    @generate.def_vmap
    def _(axis_size, in_batched, d):
        return (lax.map(generate, d), True) if in_batched[0] else (generate(d), False)

    return generate(data)


def _uniform_rows(key, m, n):
    r"""``m`` row indices uniform on $\{0, \dots, n - 1\}$: $\lfloor n (2^{32} a + b) / 2^{64} \rfloor$
    for two words $a, b$ (each index's probability is $1/n$ to within $2^{-64}$)."""
    a, b = _words(key, (2, m))
    nn = jnp.full((m,), n, jnp.uint32)
    h1, l1 = mul_wide(nn, a)
    h2, _ = mul_wide(nn, b)
    return (h1 + ((l1 + h2) < l1).astype(jnp.uint32)).astype(jnp.int32)


def _bootstrap_counts(key, n, attempt=0):
    """One resample's row counts (Poisson part, shape ``(n,)``, int32), its top-up rows (``(M,)``,
    the unused ones ``n``) and whether the draw is kept; ``attempt`` numbers the redraws."""
    thresholds, room = _poisson_plan(n)
    k1, k2 = split(fold_in(key, attempt))
    counts = jnp.zeros((n,), jnp.int32)
    if thresholds:
        words = _words(k1, (n,))
        for t in thresholds:
            counts = counts + (words >= jnp.uint32(t)).astype(jnp.int32)
    total = jnp.sum(counts, dtype=jnp.int32)
    extra = jnp.where(jnp.arange(room, dtype=jnp.int32) < n - total, _uniform_rows(k2, room, n), n)
    return counts, extra, (total <= n) & (n - total <= room)


def _count_vector(key, n):
    """The count vector over the ``n`` sorted rows of the resample that ``key`` draws (for tests)."""
    attempt = 0
    while True:
        counts, extra, ok = _bootstrap_counts(key, n, attempt)
        if ok:
            return counts.at[extra].add(1, mode="drop")
        attempt += 1


def _resample_units(keys, sums, scores, lay, unit_of_row, n_units):
    r"""Unit sums $W_u$, $Y_u$ (shape ``(chunk, n_units)`` each) and the weighted score sums
    (``(chunk,)``) of the resamples drawn by ``keys``.

    A resample is a count vector $c$ over the sorted rows: independent Poisson counts of mean
    $\lambda / n$ (one 32-bit word a row, compared with the CDF's thresholds), whose total $N$ is then
    topped up to $n$ with $n - N$ rows drawn uniformly. Given $N$, Poisson counts are multinomial
    with $N$ trials and equal cell probabilities, and adding $n - N$ independent uniform draws makes
    them multinomial with $n$ trials: the count vector of $n$ draws with replacement. (A draw with
    $N > n$ or more than $M$ rows to add, probability about $10^{-7}$, is redrawn with the next
    ``attempt``; a resample's draws depend on its key only.) Each unit's sums are gathered from its
    rows' counts (``lay``: the row in each slot, ``n`` for an empty one), so nothing is scattered
    but the top-up rows. ``sums`` holds each row's weight and weighted outcome (int32 for unit
    weights, or real), ``scores`` its weighted score."""
    n = scores.shape[0]
    b = keys.shape[0]
    sums_pad = jnp.concatenate([sums, jnp.zeros((1, 2), sums.dtype)])
    scores_pad = jnp.concatenate([scores, jnp.zeros((1,), scores.dtype)])
    unit_pad = jnp.concatenate([unit_of_row, jnp.full((1,), n_units, jnp.int32)])
    w_lay, wy_lay = sums_pad[lay, 0], sums_pad[lay, 1]  # (rows per unit, units)

    def one(key, attempt):
        counts, extra, ok = _bootstrap_counts(key, n, attempt)
        c = jnp.concatenate([counts, jnp.zeros((1,), jnp.int32)])[lay].astype(sums.dtype)
        s = jnp.dot(counts.astype(scores.dtype), scores) + jnp.sum(scores_pad[extra])
        dt = sums.dtype
        return jnp.sum(c * w_lay, axis=0, dtype=dt), jnp.sum(c * wy_lay, axis=0, dtype=dt), s, ok, extra

    def attempt_all(attempt):
        w, wy, s, ok, extra = lax.map(lambda k: one(k, attempt), keys)
        # the top-up rows: one flat scatter for the chunk (the unused ones, row n, are dropped)
        unit = unit_pad[extra]
        flat = jnp.where(unit < n_units, unit + (jnp.arange(b, dtype=jnp.int32) * n_units)[:, None], b * n_units)
        flat = flat.ravel()
        w = w.ravel().at[flat].add(sums_pad[extra, 0].ravel(), mode="drop").reshape(b, n_units)
        wy = wy.ravel().at[flat].add(sums_pad[extra, 1].ravel(), mode="drop").reshape(b, n_units)
        return w, wy, s, ok

    w, wy, s, ok = attempt_all(0)

    def redraw(state):
        w, wy, s, ok, attempt = state
        w2, wy2, s2, ok2 = attempt_all(attempt)
        new = ~ok
        return (jnp.where(new[:, None], w2, w), jnp.where(new[:, None], wy2, wy), jnp.where(new, s2, s), ok | ok2,
                attempt + 1)

    w, wy, s, _, _ = lax.while_loop(lambda st: ~jnp.all(st[3]), redraw, (w, wy, s, ok, jnp.asarray(1, jnp.int32)))
    return w, wy, s


def _resampled_components(score_fn, sums, scores, lay, unit_of_row, keys, n_units):
    r"""(score, MCB, DSC, UNC) of a chunk of bootstrap resamples, shape ``(chunk, 4)``, from their
    unit sums: PAV runs over the units (:func:`pav_block_sums`) and, the outcomes being 0 or 1, a
    block of mean $r$ scores $Y_b S(r, 1) + (W_b - Y_b) S(r, 0)$."""
    w, wy, s = _resample_units(keys, sums, scores, lay, unit_of_row, n_units)
    dt = scores.dtype

    def weighted(a, b, r):  # a S(r, 1) + b S(r, 0), a term of weight 0 counting 0
        one, zero = jnp.ones_like(r), jnp.zeros_like(r)
        return jnp.where(a > 0, a * score_fn(r, one), 0) + jnp.where(b > 0, b * score_fn(r, zero), 0)

    def block_value(bw, by):
        bw, by = bw.astype(dt), by.astype(dt)
        return weighted(by, bw - by, jnp.where(bw > 0, by / jnp.where(bw > 0, bw, 1), 0))

    total, total_y = jnp.sum(w, axis=1, dtype=w.dtype).astype(dt), jnp.sum(wy, axis=1, dtype=w.dtype).astype(dt)
    s_all = s / total
    s_rc = pav_block_sums(w, wy, block_value) / total
    s_mg = weighted(total_y, total - total_y, total_y / total) / total
    return jnp.stack([s_all, s_all - s_rc, s_mg - s_rc, s_mg], axis=-1)


@functools.partial(jax.jit, static_argnames=("score", "n_resamples", "chunk", "n_units", "unit_weights"))
def _score_decomposition(xs, ys, ws, gid, slot, key, *, score, n_resamples, chunk, n_units, unit_weights):
    score_fn = _BINARY_SCORES[score]
    est = _binary_decomposition(score_fn, xs, ys, gid, ws)
    if key is None:
        return est, None
    n = xs.shape[0]
    # per row, once: weight and weighted outcome (integers for unit weights, summed exactly), and the
    # weighted score (weight 0 counts 0, even where infinite)
    if unit_weights:
        sums = jnp.stack([jnp.ones((n,), jnp.int32), ys.astype(jnp.int32)], axis=-1)
    else:
        sums = jnp.stack([ws, ws * ys], axis=-1)
    scores = jnp.where(ws > 0, ws * score_fn(xs, ys), 0)
    per_unit = _UNIT
    if n_units == n:  # sizes unknown at trace time (or no fewer units than rows): a unit per row
        per_unit, slot = 1, jnp.arange(n, dtype=jnp.int32)
    lay = jnp.full((n_units * per_unit,), n, jnp.int32).at[slot].set(jnp.arange(n, dtype=jnp.int32))
    lay = lay.reshape(n_units, per_unit).T
    unit_of_row = slot // per_unit
    chunk = min(chunk, n_resamples)
    padded = -(-n_resamples // chunk) * chunk
    keys = split(key, padded)
    keys = keys.reshape((padded // chunk, chunk) + keys.shape[1:])  # a raw uint32 key splits into (padded, 2)
    res = lax.map(lambda ks: _resampled_components(score_fn, sums, scores, lay, unit_of_row, ks, n_units), keys)
    return est, res.reshape(padded, 4)[:n_resamples]


@declare(
    probs=BinaryProbs(),
    labels=BinaryLabels(length_of="probs", dtype_of="probs"),
    score=Choice("brier", "log"),
    sample_weight=Weights(length_of="probs", fill=True),
    key=Key(optional=True),
    n_resamples=_RESAMPLES,
    level=_LEVEL,
    chunk=_CHUNK,
)
def score_decomposition(
    probs: Float[Array, " n"],
    labels: Float[Array, " n"],
    *,
    score: str = "brier",
    sample_weight: Float[Array, " n"] | None = None,
    key: Array | None = None,
    n_resamples: int = 1000,
    level: float = 0.95,
    chunk: int = 64,
) -> ScoreDecomposition:
    r"""CORP decomposition of the mean Brier or log score of binary forecasts:
    $\bar S = \mathrm{MCB} - \mathrm{DSC} + \mathrm{UNC}$ (Dimitriadis, Gneiting, Jordan 2021,
    module docstring), the recalibrated forecasts being the PAV fit of the outcomes on the
    forecasts. Not normalised: each component is in the score's units (the Brier score's
    UNC is $\bar y(1 - \bar y)$). MCB, DSC and UNC are those of model-diagnostics'
    ``decompose`` (tested to $10^{-10}$ in float64). Exact ties of the forecasts are pooled;
    scikit-learn's isotonic regression inside model-diagnostics also pools forecasts closer
    than the dtype's resolution ($10^{-15}$ in float64), where the two may differ.

    Args:
        probs: forecasts of the event, shape ``(n,)``, in $[0, 1]$.
        labels: outcomes in $\{0, 1\}$, shape ``(n,)``.
        score: ``"brier"`` or ``"log"``.
        sample_weight: optional non-negative row weights, shape ``(n,)``.
        key: PRNG key for percentile bootstrap intervals of the components; ``None`` (the
            default): no intervals, nothing drawn at random.
        n_resamples: bootstrap resamples $B$ (static).
        level: confidence level of the intervals.
        chunk: resamples vmapped at once (static); memory $O(\mathrm{chunk}\cdot n)$.

    Returns:
        :class:`ScoreDecomposition` ``(score, miscalibration, discrimination, uncertainty,
        low, high, resamples)``; scalars, and ``(4,)`` interval ends in that order.

    Examples:
        >>> import jax.numpy as jnp
        >>> d = score_decomposition(jnp.array([0.1, 0.4, 0.4, 0.8]), jnp.array([0, 1, 0, 1]))
        >>> [round(float(v), 4) for v in (d.score, d.miscalibration, d.discrimination, d.uncertainty)]
        [0.1425, 0.0175, 0.125, 0.25]

    References:
        Dimitriadis, Gneiting, Jordan (2021): the CORP approach and its score decomposition.
    """
    xs, ys, ws, gid, slot, n_units = _prepare(probs, labels, sample_weight)
    n = xs.shape[0]
    n_units = n if key is None else _size_bucket(n_units, n)
    # unit weights (concretely all 1) are summed as integers; the draws do not depend on the weights
    unit_weights = key is not None and not isinstance(ws, jax.core.Tracer) and bool(jnp.all(ws == 1))
    est, res = _score_decomposition(xs, ys, ws, gid, slot, key, score=score, n_resamples=n_resamples, chunk=chunk,
                                    n_units=n_units, unit_weights=unit_weights)
    return _result(est, res, level)


@functools.partial(jax.jit, static_argnames=("n_resamples", "level", "chunk"))
def _corp_curve(probs, labels, w, key, *, n_resamples, level, chunk):
    order = jnp.argsort(probs)
    xs, ys, ws = probs[order], labels[order], w[order]
    gid = _tie_ids(xs)
    fit = _recalibrate(ys, gid, ws)
    if key is None:
        return xs, fit, None, None
    # under the null, each outcome is redrawn from its own forecast; the band is pointwise
    refits = _chunked_map(
        lambda k: _recalibrate_batched(jax.random.bernoulli(k, xs).astype(xs.dtype), gid, ws),
        key, n_resamples, chunk)
    lo, hi = _percentile(refits, level)
    return xs, fit, lo, hi


@declare(
    probs=BinaryProbs(),
    labels=BinaryLabels(length_of="probs", dtype_of="probs"),
    sample_weight=Weights(length_of="probs", fill=True),
    key=Key(optional=True),
    n_resamples=_RESAMPLES,
    level=_LEVEL,
    chunk=_CHUNK,
)
def corp_curve(
    probs: Float[Array, " n"],
    labels: Float[Array, " n"],
    *,
    sample_weight: Float[Array, " n"] | None = None,
    key: Array | None = None,
    n_resamples: int = 100,
    level: float = 0.9,
    chunk: int = 64,
) -> CORPCurve:
    r"""The CORP reliability curve (PAV fit of the outcomes on the forecasts) with consistency
    bands by resampling under the null of calibration, as the R package reliabilitydiag draws
    them (``region.method = "resampling"``, ``region.position = "diagonal"``; its defaults
    ``n.boot = 100``, ``region.level = 0.9``).

    Args:
        probs: forecasts of the event, shape ``(n,)``, in $[0, 1]$.
        labels: outcomes in $\{0, 1\}$, shape ``(n,)``.
        sample_weight: optional non-negative row weights (they weight the PAV fits).
        key: PRNG key for the consistency band; ``None`` (the default): no band.
        n_resamples: outcome vectors drawn under the null (static).
        level: pointwise level of the band.
        chunk: resamples vmapped at once (static).

    Returns:
        :class:`CORPCurve` ``(forecasts, recalibrated, band_low, band_high)`` over the sorted
        forecasts.

    Examples:
        >>> import jax.numpy as jnp
        >>> c = corp_curve(jnp.array([0.2, 0.1, 0.7, 0.6]), jnp.array([1, 0, 0, 1]))
        >>> [round(v, 4) for v in c.recalibrated.tolist()]
        [0.0, 0.6667, 0.6667, 0.6667]

    References:
        Dimitriadis, Gneiting, Jordan (2021): consistency bands by resampling.
    """
    return CORPCurve(*_corp_curve(probs, labels, sample_weight, key, n_resamples=n_resamples, level=level,
                                  chunk=chunk))


# --- quantile forecasts -----------------------------------------------------------------------


def _kth(ys, by_value, lo, hi, k):
    """The ``k``-th smallest (1-based) of ``ys[lo:hi]``; ``by_value`` sorts ``ys`` ascending."""
    inside = (by_value >= lo) & (by_value < hi)
    pos = jnp.argmax(jnp.cumsum(inside, dtype=jnp.int32) >= k)
    return ys[by_value[pos]]


def _lower_q(ys, by_value, alpha, lo, hi):
    m = (hi - lo).astype(ys.dtype)
    k = jnp.maximum(jnp.ceil(m * alpha), 1).astype(jnp.int32)  # numpy's "inverted_cdf"
    return _kth(ys, by_value, lo, hi, k)


def _upper_q(ys, by_value, beta, lo, hi):
    # -quantile(-y, 1 - alpha, "inverted_cdf"): beta = 1 - alpha computed exactly on the host
    m = (hi - lo).astype(ys.dtype)
    k = jnp.maximum(jnp.ceil(m * beta), 1).astype(jnp.int32)
    return _kth(ys, by_value, lo, hi, (hi - lo) - k + 1)


def _quantile_pav(ys, alpha, beta):
    r"""Isotonic $\alpha$-quantile regression of ``ys`` (already in forecast order): PAV with
    the block's lower quantile (Busing's formulation, as model-diagnostics runs it), the upper
    quantile on the blocks found, non-decreasing from the right, and the midpoint."""
    n = ys.shape[0]
    by_value = jnp.argsort(ys, stable=True).astype(jnp.int32)

    def fun(lo, hi):
        return _lower_q(ys, by_value, alpha, lo, hi)

    def outer(c):
        x, r, b, i, prev = c
        b = b + 1
        xb = ys[i]

        def repair(args):
            x, r, b, i, _ = args
            b = b - 1
            xb = fun(r[b], i + 1)

            def up_cond(s):
                _, i, xb = s
                return (i < n - 1) & (xb >= ys[jnp.minimum(i + 1, n - 1)])

            def up(s):
                b, i, _ = s
                return b, i + 1, fun(r[b], i + 2)

            b, i, xb = lax.while_loop(up_cond, up, (b, i, xb))

            def down_cond(s):
                b, _, xb = s
                return (b >= 1) & (x[jnp.maximum(b - 1, 0)] >= xb)

            def down(s):
                b, i, _ = s
                return b - 1, i, fun(r[b - 1], i + 1)

            b, i, xb = lax.while_loop(down_cond, down, (b, i, xb))
            return b, i, xb

        b, i, xb = lax.cond(prev >= xb, repair, lambda a: (a[2], a[3], a[4]), (x, r, b, i, xb))
        x = x.at[b].set(xb)
        r = r.at[b + 1].set(i + 1)
        return x, r, b, i + 1, xb

    r0 = jnp.full((n + 1,), n, jnp.int32).at[0].set(0).at[1].set(1)
    x0 = ys
    x, r, b, _, _ = lax.while_loop(lambda c: c[3] < n, outer, (x0, r0, jnp.asarray(0, jnp.int32),
                                                              jnp.asarray(1, jnp.int32), ys[0]))
    nb = b + 1  # blocks 0..b, starting at r[0..b], ending at r[1..b+1]
    ks = jnp.arange(n, dtype=jnp.int32)
    live = ks < nb
    starts = jnp.where(live, r[:n], n)
    ends = jnp.where(live, r[1:], n)
    lower = jnp.where(live, x, jnp.inf)
    upper = jax.vmap(lambda lo, hi: _upper_q(ys, by_value, beta, lo, jnp.maximum(hi, lo + 1)))(
        jnp.minimum(starts, n - 1), ends)
    upper = jnp.where(live, upper, jnp.inf)
    upper = lax.cummin(upper, reverse=True)  # minimum from the right
    block = jnp.searchsorted(starts, ks, side="right") - 1
    return 0.5 * (lower[block] + upper[block])


def _pinball(q, y, alpha):
    return ((y <= q).astype(q.dtype) - alpha) * (q - y)


def _quantile_components(q, y, alpha, beta):
    # forecasts ascending, ties by decreasing outcome (model-diagnostics' order)
    order = jnp.lexsort((-y, q))
    qs, ys = q[order], y[order]
    recal = _quantile_pav(ys, alpha, beta)
    by_value = jnp.argsort(ys, stable=True).astype(jnp.int32)
    n = ys.shape[0]
    zero, end = jnp.asarray(0, jnp.int32), jnp.asarray(n, jnp.int32)
    marginal = 0.5 * (_lower_q(ys, by_value, alpha, zero, end) + _upper_q(ys, by_value, beta, zero, end))
    s = jnp.mean(_pinball(qs, ys, alpha))
    s_rc = jnp.mean(_pinball(recal, ys, alpha))
    s_mg = jnp.mean(_pinball(marginal, ys, alpha))
    return jnp.stack([s, s - s_rc, s_mg - s_rc, s_mg])


def _all_levels(quantiles, y, alphas, betas):
    """Components per level, shape ``(Q, 4)``."""
    return jax.vmap(_quantile_components, in_axes=(1, None, 0, 0))(quantiles, y, alphas, betas)


@functools.partial(jax.jit, static_argnames=("score", "n_resamples", "level", "chunk"))
def _quantile_decomposition(quantiles, y, alphas, betas, key, *, score, n_resamples, level, chunk):
    def stat(qq, yy):
        per_level = _all_levels(qq, yy, alphas, betas)
        return 2 * jnp.mean(per_level, axis=0) if score == "crps" else per_level

    est = stat(quantiles, y)
    if key is None:
        return est, None
    n = y.shape[0]

    def one(k):
        idx = jax.random.randint(k, (n,), 0, n)
        return stat(quantiles[idx], y[idx])

    return est, _chunked_map(one, key, n_resamples, chunk)


def _quantile_levels(value, name, bound):
    if isinstance(value, jax.core.Tracer):
        raise TypeError(f"{name} must be concrete (1 - level is computed exactly on the host), not a traced value")
    arr = np.atleast_1d(np.asarray(RealArray(ndim=(0, 1)).check(value, name, bound), np.float64))
    if np.any((arr <= 0) | (arr >= 1)):
        bad = int(np.argmax((arr <= 0) | (arr >= 1)))
        raise ValueError(f"{name} must lie in (0, 1) (entry {bad} is {arr[bad]:g})")
    q = bound.get("quantiles")
    if q is not None and q.shape[1] != arr.shape[0]:
        raise ValueError(f"{name} must have one level per column of quantiles ({q.shape[1]}), got {arr.shape[0]}")
    return arr


def _quantile_matrix(value, name, bound):
    arr = RealArray(ndim=(1, 2)).check(value, name, bound)
    return arr[:, None] if arr.ndim == 1 else arr


@declare(
    quantiles=Custom(_quantile_matrix, "finite quantile forecasts (T,) or (T, Q)"),
    y=RealArray(length_of="quantiles"),
    levels=Custom(_quantile_levels, "concrete levels in (0, 1), one per column"),
    score=Choice("pinball", "crps"),
    key=Key(optional=True),
    n_resamples=_RESAMPLES,
    level=_LEVEL,
    chunk=_CHUNK,
)
def quantile_score_decomposition(
    quantiles: Float[Array, "T Q"],
    y: Float[Array, " T"],
    levels: Float[Array, " Q"],
    *,
    score: str = "pinball",
    key: Array | None = None,
    n_resamples: int = 200,
    level: float = 0.95,
    chunk: int = 1,
) -> ScoreDecomposition:
    r"""CORP decomposition of the pinball (quantile) score, level by level, or of the CRPS of
    forecasts given by their quantiles (module docstring): the recalibrated forecasts are the
    isotonic $\alpha$-quantile regression of the outcomes on the forecasts, the marginal
    forecast the outcomes' $\alpha$-quantile. Not normalised (in the outcome's units). Per
    level it agrees with model-diagnostics' ``decompose(..., scoring_function=PinballLoss(
    level))`` (tested to $10^{-10}$ in float64 for forecasts without ties).

    Quantile PAV evaluates each block's quantile afresh: time $O(n \cdot b)$ per level, with
    $b$ the number of merges ($O(n^2)$ at worst), so bootstrap intervals suit a few thousand
    rows. Rows are unweighted (weighted quantiles are not implemented here, nor in
    model-diagnostics).

    Args:
        quantiles: quantile forecasts, shape ``(T, Q)`` (or ``(T,)`` for one level).
        y: outcomes, shape ``(T,)``.
        levels: the quantile levels $\alpha$ of the columns, shape ``(Q,)``, in $(0, 1)$,
            concrete (``1 - level`` is computed exactly, as model-diagnostics does).
        score: ``"pinball"`` (one decomposition per level) or ``"crps"`` ($\frac 2Q$ times the
            sum over levels: the CRPS of the quantile forecasts, best with levels
            $(2k - 1)/(2Q)$).
        key: PRNG key for percentile bootstrap intervals (rows resampled); ``None``: none.
        n_resamples: bootstrap resamples (static).
        level: confidence level of the intervals.
        chunk: resamples vmapped at once (static). The default 1 runs them one after another:
            quantile PAV's data-dependent loops cost more vmapped than in sequence on a CPU.

    Returns:
        :class:`ScoreDecomposition`; each component has shape ``(Q,)`` for ``"pinball"`` and
        ``()`` for ``"crps"``; ``low``/``high`` add a last axis of 4.

    Examples:
        >>> import jax.numpy as jnp
        >>> d = quantile_score_decomposition(jnp.array([1.0, 2.0, 3.0, 4.0]), jnp.array([1.5, 1.0, 3.5, 5.0]), [0.5])
        >>> [round(float(v[0]), 4) for v in (d.score, d.miscalibration, d.discrimination, d.uncertainty)]
        [0.375, 0.3125, 0.6875, 0.75]

    References:
        Gneiting, Resin (2023); Arnold, Walz, Ziegel, Gneiting (2024) (CRPS);
        Dimitriadis, Gneiting, Jordan (2021).
    """
    dt = quantiles.dtype
    y = y.astype(dt)
    betas = np.array([float(1 - Decimal(str(a))) for a in levels.tolist()])
    est, res = _quantile_decomposition(quantiles, y, jnp.asarray(levels, dt), jnp.asarray(betas, dt), key,
                                       score=score, n_resamples=n_resamples, level=level, chunk=chunk)
    return _result(est, res, level)
