r"""Bootstrap confidence intervals for any statistic of arrays, by ``vmap`` over index draws.

A resample draws $n$ row indices uniformly with replacement and evaluates the statistic on the
rows it picked (with their weights, when there are any). Resamples are vmapped in chunks of
``chunk`` and the chunks run one after another under ``lax.map``, so memory is
$O(\mathrm{chunk}\cdot n)$ whatever ``n_resamples`` is, and everything is one compiled call.

Intervals (Efron, Tibshirani 1993, *An Introduction to the Bootstrap*, §13 and §14.3):

* ``"percentile"``: the $\alpha/2$ and $1-\alpha/2$ quantiles of the resampled statistics
  $\hat\theta^*_1, \dots, \hat\theta^*_B$ ($\alpha = 1 -$ ``level``; linear interpolation between
  order statistics, NumPy's default).
* ``"bca"`` (bias-corrected and accelerated, Efron 1987): the quantiles at
  $$\alpha_{1,2} = \Phi\Big(\hat z_0 + \frac{\hat z_0 + z_{\alpha/2,\,1-\alpha/2}}
  {1 - \hat a(\hat z_0 + z_{\alpha/2,\,1-\alpha/2})}\Big),\qquad
  \hat z_0 = \Phi^{-1}\Big(\frac{\#\{\hat\theta^* < \hat\theta\} + \#\{\hat\theta^* \le \hat\theta\}}{2B}\Big),$$
  $$\hat a = \frac{\sum_i (\bar\theta_{(\cdot)} - \hat\theta_{(i)})^3}
  {6\,\big(\sum_i (\bar\theta_{(\cdot)} - \hat\theta_{(i)})^2\big)^{3/2}}$$
  with the leave-one-out (jackknife) values $\hat\theta_{(i)}$, also vmapped in chunks; this
  costs $n$ extra evaluations of the statistic on $n - 1$ rows. ($\hat z_0$ counts ties half,
  as ``scipy.stats.bootstrap`` does.)

The statistic may return an array (a curve, say): intervals are then elementwise.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.special import ndtr, ndtri
from jaxtyping import Array, Float

from .._validation import check_binary_inputs, check_key, check_positive_int, check_weights, shown
from ..metrics.smooth import smooth_ece, smooth_ece_count_tables, smooth_ece_of_draws
from ._multinomial import counts_by_position, multinomial_draws, poisson_table

__all__ = ["BootstrapResult", "bootstrap", "paired_bootstrap"]


class BootstrapResult(NamedTuple):
    """The statistic on the data, its interval, and the resampled values.

    Attributes:
        estimate: the statistic on the full data.
        low: lower end of the interval (same shape as ``estimate``).
        high: upper end of the interval.
        resamples: the statistic on each resample, shape ``(n_resamples, *estimate.shape)``.
    """

    estimate: Array
    low: Array
    high: Array
    resamples: Array


def _check_key(key):
    """A single PRNG key: :func:`jcalib._validation.check_key` (the library's one ``TypeError``
    for an int, ``None``…), and one key, not a batch of them."""
    key = check_key(key)
    typed = jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
    if (typed and key.shape != ()) or (not typed and key.shape != (2,)):
        raise ValueError(f"key must be a single PRNG key, got shape {key.shape}")
    return key


def _check_level(level) -> float:
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level must be a number in (0, 1), got {shown(level)}")
    return float(level)


def _call(statistic, arrays, w):
    return statistic(*arrays) if w is None else statistic(*arrays, sample_weight=w)


def _chunked(fn, xs, chunk: int):
    """``vmap(fn)`` over the leading axis of ``xs`` (a pytree), ``chunk`` rows at a time."""
    m = jax.tree_util.tree_leaves(xs)[0].shape[0]
    chunk = max(1, min(chunk, m))
    nc = -(-m // chunk)

    def pad(x):
        return jnp.concatenate([x, jnp.repeat(x[:1], nc * chunk - m, axis=0)]).reshape((nc, chunk) + x.shape[1:])

    out = lax.map(jax.vmap(fn), jax.tree_util.tree_map(pad, xs))
    return jax.tree_util.tree_map(lambda o: o.reshape((nc * chunk,) + o.shape[2:])[:m], out)


def _resample_indices_apply(fn, key, n: int, n_resamples: int, chunk: int):
    """``fn(idx)`` for ``n_resamples`` vectors of ``n`` indices drawn with replacement, chunked.

    The draws depend only on ``key`` and ``n``: two statistics resampled with one key see the
    same index draws (this is what makes :func:`paired_bootstrap` paired).
    """
    keys = jax.random.split(key, n_resamples)
    return _chunked(lambda k: fn(jax.random.randint(k, (n,), 0, n, dtype=jnp.int32)), keys, chunk)


def _quantile(sorted_vals, q):
    """Linear-interpolation quantile of the sorted leading axis at (elementwise) levels ``q``."""
    B = sorted_vals.shape[0]
    pos = jnp.clip(q, 0, 1) * (B - 1)
    lo = jnp.clip(jnp.floor(pos).astype(jnp.int32), 0, B - 1)
    hi = jnp.minimum(lo + 1, B - 1)
    frac = (pos - lo.astype(pos.dtype)).astype(sorted_vals.dtype)
    take = lambda i: jnp.take_along_axis(sorted_vals, jnp.broadcast_to(i, sorted_vals.shape[1:])[None], axis=0)[0]
    return take(lo) * (1 - frac) + take(hi) * frac


def _jackknife(statistic, arrays, w, chunk):
    n = arrays[0].shape[0]
    base = jnp.arange(n - 1, dtype=jnp.int32)

    def loo(i):  # all rows but row i
        idx = base + (base >= i).astype(jnp.int32)
        return _call(statistic, tuple(a[idx] for a in arrays), None if w is None else w[idx])

    return _chunked(loo, jnp.arange(n, dtype=jnp.int32), chunk)


@eqx.filter_jit
def _bootstrap(statistic, arrays, w, key, level, n_resamples, method, chunk):
    n = arrays[0].shape[0]
    theta = _call(statistic, arrays, w)

    def one(idx):
        return _call(statistic, tuple(a[idx] for a in arrays), None if w is None else w[idx])

    res = _resample_indices_apply(one, key, n, n_resamples, chunk)
    return _intervals(theta, res, level, method, lambda: _jackknife(statistic, arrays, w, chunk))


@eqx.filter_jit
def _bootstrap_smooth_ece(arrays, w, key, level, n_resamples, method, chunk):
    """:func:`bootstrap` of :func:`smooth_ece` through count vectors (see :func:`bootstrap`)."""
    p, y = arrays
    theta = _call(smooth_ece, arrays, w)  # also checks the inputs in the graph
    tables = smooth_ece_count_tables(p, p - y.astype(p.dtype), jnp.ones_like(p) if w is None else w.astype(p.dtype))
    table = poisson_table(p.shape[0])
    occupied = tables.occupied.reshape(tables.coef[0].shape[:2])

    def batch(keys):
        draws = multinomial_draws(keys, table, occupied, tables.coef[0])
        recount = lambda: counts_by_position(keys, draws, table, occupied, tables.place)  # noqa: E731
        return smooth_ece_of_draws(draws, tables, recount)[0]

    keys = jax.random.split(key, n_resamples)
    nc = -(-n_resamples // chunk)
    keys = jnp.concatenate([keys, jnp.repeat(keys[:1], nc * chunk - n_resamples)]).reshape(nc, chunk)
    res = lax.map(batch, keys).reshape(-1)[:n_resamples]
    return _intervals(theta, res, level, method, lambda: _jackknife(smooth_ece, arrays, w, chunk))


def _intervals(theta, res, level, method, jackknife):
    dt = theta.dtype if jnp.issubdtype(theta.dtype, jnp.floating) else jnp.result_type(float)
    res = res.astype(dt)
    srt = jnp.sort(res, axis=0)
    alpha = ((1 - level) / 2).astype(dt)
    if method == "percentile":
        q_lo = jnp.broadcast_to(alpha, theta.shape)
        q_hi = jnp.broadcast_to(1 - alpha, theta.shape)
    else:
        th = theta.astype(dt)
        prop = (jnp.mean(res < th, axis=0, dtype=dt) + jnp.mean(res <= th, axis=0, dtype=dt)) / 2
        z0 = ndtri(prop)
        jack = jackknife().astype(dt)
        d = jnp.mean(jack, axis=0) - jack
        num = jnp.sum(d**3, axis=0)
        den = 6 * jnp.sum(d**2, axis=0) ** 1.5
        a = jnp.where(den > 0, num / jnp.where(den > 0, den, 1), 0)  # a constant statistic: no acceleration

        def adjusted(z):
            return ndtr(z0 + (z0 + z) / (1 - a * (z0 + z)))

        q_lo, q_hi = adjusted(ndtri(alpha)), adjusted(ndtri(1 - alpha))
        # z0 = ±inf (every resample on one side of the estimate): the interval is that extreme
        q_lo = jnp.where(jnp.isnan(q_lo), jnp.where(prop > 0.5, 1, 0), q_lo).astype(dt)
        q_hi = jnp.where(jnp.isnan(q_hi), jnp.where(prop > 0.5, 1, 0), q_hi).astype(dt)
    return BootstrapResult(theta, _quantile(srt, q_lo), _quantile(srt, q_hi), res)


def _check_arrays(arrays, sample_weight):
    if not arrays:
        raise ValueError("bootstrap needs at least one array to resample")
    arrs = []
    for i, a in enumerate(arrays):
        a = a if isinstance(a, jax.Array) else jnp.asarray(a)
        if a.ndim == 0:
            raise ValueError(f"arrays[{i}] must have a leading axis of rows, got a scalar")
        arrs.append(a)
    n = arrs[0].shape[0]
    if any(a.shape[0] != n for a in arrs):
        raise ValueError(f"arrays must share their leading axis, got lengths {[a.shape[0] for a in arrs]}")
    if n < 2:
        raise ValueError(f"bootstrap needs at least 2 rows, got {n}")
    return tuple(arrs), check_weights(sample_weight, n)


def bootstrap(
    statistic: Callable[..., Array],
    *arrays: Array,
    key: Array,
    n_resamples: int = 2000,
    level: float = 0.95,
    method: str = "percentile",
    sample_weight: Float[Array, " n"] | None = None,
    chunk: int = 128,
) -> BootstrapResult:
    r"""Bootstrap interval of ``statistic(*arrays)``: rows resampled with replacement.

    The same row indices are drawn for every array, so ``(probs, labels)`` stay paired. With
    ``sample_weight`` the resampled rows carry their weights and the statistic is called as
    ``statistic(*rows, sample_weight=w_rows)`` (every jcalib metric takes it).

    Args:
        statistic: a function of the arrays (e.g. :func:`jcalib.metrics.smooth_ece`), returning
            a scalar or an array; it must be traceable (jit/vmap), as every jcalib metric is.
        *arrays: arrays sharing their leading axis of $n \ge 2$ rows.
        key: PRNG key for the index draws.
        n_resamples: number of resamples $B$ (static).
        level: confidence level of the two-sided interval.
        method: ``"percentile"`` or ``"bca"`` (see the module docstring).
        sample_weight: optional non-negative row weights, shape ``(n,)``.
        chunk: resamples vmapped at once (static); memory is $O(\mathrm{chunk}\cdot n)$.

    **Fast path for smooth ECE.** When ``statistic`` is :func:`jcalib.metrics.smooth_ece` on
    ``(probs, labels)``, a resample is its count vector (how often each row was drawn), drawn
    exactly from $\mathrm{Multinomial}(n; 1/n, \dots, 1/n)$ by
    :func:`jcalib.stats._multinomial.multinomial_draws` (Poisson counts completed by a few
    uniform draws; Threefry-2x32-20 words keyed from ``key``), ``chunk`` resamples at a time
    and reduced at once to relplot's grid (one batched matrix product with coefficients laid
    out once for all resamples); :func:`jcalib.metrics.smooth.smooth_ece_of_draws` evaluates
    smooth ECE from that grid. Same distribution of resamples and the same value per resample
    as drawing indices (to float round-off), different draws for a given key; memory
    $O(\mathrm{chunk}\cdot n)$.

    Returns:
        :class:`BootstrapResult` ``(estimate, low, high, resamples)``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from jcalib.metrics import brier
        >>> p = jnp.linspace(0.05, 0.95, 200); y = (jnp.arange(200) % 3 == 0).astype(jnp.int32)
        >>> r = bootstrap(brier, p, y, key=jax.random.key(0), n_resamples=500)
        >>> bool(r.low < r.estimate < r.high), r.resamples.shape
        (True, (500,))

    References:
        Efron (1979), *Bootstrap methods: another look at the jackknife*; Efron (1987), *Better
        bootstrap confidence intervals* (BCa); Efron, Tibshirani (1993), §13–14.
    """
    if not callable(statistic):
        raise TypeError(f"statistic must be callable, got {type(statistic).__name__}")
    arrs, w = _check_arrays(arrays, sample_weight)
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    chunk = check_positive_int(chunk, "chunk")
    level = _check_level(level)
    if method not in ("percentile", "bca"):
        raise ValueError(f"method must be 'percentile' or 'bca', got {shown(method)}")
    if n_resamples < 2:
        raise ValueError(f"n_resamples must be at least 2, got {shown(n_resamples)}")
    args = (arrs, w, _check_key(key), jnp.asarray(level, jnp.result_type(float)), n_resamples, method, chunk)
    if statistic is smooth_ece and len(arrs) == 2 and arrs[0].ndim == 1 and arrs[1].ndim == 1:
        return _bootstrap_smooth_ece(*args)
    return _bootstrap(statistic, *args)


@dataclasses.dataclass(frozen=True)
class _Difference:
    """``metric(a, y) - metric(b, y)``: one hashable object per metric, so jit caches it."""

    metric: Callable[..., Array]

    def __call__(self, probs_a, probs_b, labels, sample_weight=None):
        if sample_weight is None:
            return self.metric(probs_a, labels) - self.metric(probs_b, labels)
        return self.metric(probs_a, labels, sample_weight=sample_weight) - self.metric(probs_b, labels, sample_weight=sample_weight)


def paired_bootstrap(
    metric: Callable[..., Array],
    probs_a: Array,
    probs_b: Array,
    labels: Array,
    *,
    key: Array,
    n_resamples: int = 2000,
    level: float = 0.95,
    method: str = "percentile",
    sample_weight: Float[Array, " n"] | None = None,
    chunk: int = 128,
) -> BootstrapResult:
    r"""Interval for the difference $m(a) - m(b)$ of a metric between two forecasters on one data set.

    Both forecasters are evaluated on the **same** resampled rows, so the interval reflects the
    uncertainty of the difference, which is usually far smaller than that of either metric
    (the two share the noise of the labels). An interval excluding 0 says the forecasters
    differ at the given level.

    Args:
        metric: ``metric(probs, labels[, sample_weight=...])``, e.g.
            :func:`jcalib.metrics.smooth_ece` or :func:`jcalib.metrics.top_label_ece`.
        probs_a, probs_b: the two forecasters' predictions on the same rows, ``(n,)`` or
            ``(n, C)``.
        labels: the outcomes, shape ``(n,)``.
        key, n_resamples, level, method, sample_weight, chunk: as in :func:`bootstrap`.

    Returns:
        :class:`BootstrapResult` of $m(a) - m(b)$.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from jcalib.metrics import brier
        >>> p = jnp.linspace(0.05, 0.95, 300); y = (jnp.arange(300) % 2).astype(jnp.int32)
        >>> r = paired_bootstrap(brier, p, jnp.full(300, 0.5), y, key=jax.random.key(0), n_resamples=200)
        >>> r.resamples.shape
        (200,)
    """
    if not callable(metric):
        raise TypeError(f"metric must be callable, got {type(metric).__name__}")
    pa, pb = jnp.asarray(probs_a), jnp.asarray(probs_b)
    if pa.shape != pb.shape:
        raise ValueError(f"probs_a and probs_b must have one shape, got {pa.shape} and {pb.shape}")
    if pa.ndim == 1:  # validates both forecasters and the labels once, here
        check_binary_inputs(pa, labels, sample_weight)
        check_binary_inputs(pb, labels, sample_weight)
    return bootstrap(
        _Difference(metric), pa, pb, labels, key=key, n_resamples=n_resamples, level=level,
        method=method, sample_weight=sample_weight, chunk=chunk,
    )
