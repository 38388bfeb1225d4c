r"""Bootstrap confidence intervals for any statistic of arrays, by ``vmap`` over index draws.

A resample draws $n$ row indices uniformly with replacement and evaluates the statistic on the
rows it picked (with their weights, when there are any). Resample $j$ draws with the key
``jax.random.fold_in(k, j)`` ($k$ the first half of ``jax.random.split(key)``), so its draws
depend on ``key``, $n$ and $j$ alone. Resamples are vmapped in chunks of ``chunk``: one
compiled program per statistic, array shapes and ``chunk`` evaluates any chunk (its first
resample's index is an argument, not a constant), so the number of resamples never recompiles
anything but the interval's final sort, and memory is $O(\mathrm{chunk}\cdot n)$. (Under an
outer ``jit`` or ``vmap`` the chunks run under ``lax.map`` inside the caller's program.)

Intervals (Efron, Tibshirani 1993, *An Introduction to the Bootstrap*, §13 and §14.3):

* ``"percentile"``: the $\alpha/2$ and $1-\alpha/2$ quantiles of the resampled statistics
  $\hat\theta^*_1, \dots, \hat\theta^*_B$ ($\alpha = 1 -$ ``level``; linear interpolation between
  order statistics, NumPy's default). Cost: $B$ evaluations of the statistic on $n$ rows.
* ``"bca"`` (bias-corrected and accelerated, Efron 1987): the quantiles at
  $$\alpha_{1,2} = \Phi\Big(\hat z_0 + \frac{\hat z_0 + z_{\alpha/2,\,1-\alpha/2}}
  {1 - \hat a(\hat z_0 + z_{\alpha/2,\,1-\alpha/2})}\Big),\qquad
  \hat z_0 = \Phi^{-1}\Big(\frac{\#\{\hat\theta^* < \hat\theta\} + \#\{\hat\theta^* \le \hat\theta\}}{2B}\Big),$$
  $$\hat a = \frac{\sum_g (\bar\theta_{(\cdot)} - \hat\theta_{(g)})^3}
  {6\,\big(\sum_g (\bar\theta_{(\cdot)} - \hat\theta_{(g)})^2\big)^{3/2}}$$
  ($\hat z_0$ counts ties half, as ``scipy.stats.bootstrap`` does) with the values
  $\hat\theta_{(g)}$ of a **grouped jackknife**: the rows are dealt into $G = \min(n, 1000)$
  groups of $m = \lfloor n/G \rfloor$ rows (in a random order drawn from ``key``; the
  $n - Gm < G$ rows left over are in no group and never deleted), and $\hat\theta_{(g)}$ is
  the statistic without group $g$ (the grouped, delete-$m$ jackknife; Efron, Tibshirani 1993, ch. 11). For $n \le 1000$ every row
  is its own group: the ordinary leave-one-out jackknife, exactly. For larger $n$ the grouped
  values estimate the same constant: for a mean, $\sum_g d_g^3 / (\sum_g d_g^2)^{3/2}$ has
  expectation $\mu_3 / (\sigma^3\sqrt n)$ for any group size, to first order, as for single
  deletions. It is the skewness of $G$ group values, so its standard error is about
  $\sqrt{6 n}/(G\,|\gamma|)$ relative to the constant ($\gamma = 6\sqrt n\,\hat a$), against
  $\sqrt{6/n}/|\gamma|$ for the leave-one-out one; $\hat a$ enters the endpoints' levels only
  through $\hat a(\hat z_0 + z)^2$, so the intervals move by a small fraction of their width
  (tested against the exact jackknife in ``tests/stats/test_jackknife.py``).

  Cost: the percentile interval evaluates the statistic $B$ times on $n$ rows; BCa adds
  $G \le 1000$ evaluations on $n - \lfloor n/G\rfloor$ rows, whatever $n$ (the leave-one-out
  jackknife would add $n$, more than the whole bootstrap once $n > B$). For
  :func:`jcalib.metrics.smooth_ece` both run on the count-vector fast path (see
  :func:`bootstrap`): a deleted group is the count vector of ones with the group's rows set to 0.

The statistic may return an array (a curve, say): intervals are then elementwise.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import scipy.special
from jax import lax
from jax.scipy import special as jax_special
from jaxtyping import Array, Float

from .._threefry import fold_in, split_into
from .._validation import (
    BinaryLabels, BinaryProbs, Choice, ClassLabels, Custom, Int, Key, Real, SimplexProbs, Weights, check_weights, declare,
    full, to_device, trace_once,
)
from ..metrics.smooth import (
    smooth_ece, smooth_ece_coarse, smooth_ece_count_tables, smooth_ece_counts_spectra, smooth_ece_draws_spectra,
    smooth_ece_fine, smooth_ece_fine_tables, smooth_ece_of_counts, smooth_ece_of_draws,
)
from ._multinomial import counts_by_position, multinomial_draws, poisson_table

__all__ = ["BootstrapResult", "bootstrap", "paired_bootstrap"]

_JACKKNIFE_GROUPS = 1000  # G: the grouped jackknife of BCa deletes one of min(n, G) groups at a time


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


def _callable(fn, name, bound):
    if not callable(fn):
        raise TypeError(f"{name} must be callable, got {type(fn).__name__}")
    return fn


def _check_arrays(arrays, name, bound):
    """The arrays to resample: numeric, each with a leading axis, one length n >= 2."""
    if not arrays:
        raise ValueError("bootstrap needs at least one array to resample")
    arrs = []
    for i, a in enumerate(arrays):
        if not isinstance(a, jax.Array):
            try:
                a = np.asarray(a)
            except (TypeError, ValueError) as e:  # ragged nesting, opaque objects
                raise ValueError(f"{name}[{i}] must be a numeric array, got {type(a).__name__}") from e
            if a.dtype.kind not in "biuf":
                raise ValueError(f"{name}[{i}] must be a numeric array, got dtype {a.dtype}")
            a = to_device(a)
        elif not (jnp.issubdtype(a.dtype, jnp.number) or a.dtype == jnp.bool_):
            raise ValueError(f"{name}[{i}] must be a numeric array, got dtype {a.dtype}")
        if a.ndim == 0:
            raise ValueError(f"{name}[{i}] must have a leading axis of rows, got a scalar")
        arrs.append(a)
    n = arrs[0].shape[0]
    if any(a.shape[0] != n for a in arrs):
        raise ValueError(f"{name} must share their leading axis, got lengths {[a.shape[0] for a in arrs]}")
    if n < 2:
        raise ValueError(f"bootstrap needs at least 2 rows, got {n} in {name}[0]")
    return tuple(arrs)


def _check_row_weights(w, name, bound):
    """Optional non-negative finite row weights, shape ``(n,)`` (their total is the statistic's concern)."""
    return check_weights(w, bound["arrays"][0].shape[0], name)


def _probs_b(value, name, bound):
    """The second forecaster's predictions: as the first's, and of their shape."""
    pb = _forecasts(value, name, bound)
    pa = bound["probs_a"]
    if pb.shape != pa.shape:
        raise ValueError(f"probs_a and probs_b must have one shape, got {tuple(pa.shape)} and {tuple(pb.shape)}")
    return pb


def _forecasts(value, name, bound):
    """Binary forecasts ``(n,)`` in [0, 1] or rows on the simplex ``(n, C)``, by the input's ndim, n >= 2."""
    ndim = np.ndim(value)
    if ndim not in (1, 2):
        raise ValueError(f"{name} must be 1-D (binary forecasts) or 2-D (rows on the simplex), "
                         f"got shape {np.shape(value)}")
    probs = (SimplexProbs() if ndim == 2 else BinaryProbs()).check(value, name, bound)
    if probs.shape[0] < 2:
        raise ValueError(f"bootstrap needs at least 2 rows, got {probs.shape[0]} in {name}")
    return probs


def _paired_labels(value, name, bound):
    """0/1 labels of binary forecasts, or class labels in ``[0, C)`` of simplex rows, as long as ``probs_a``."""
    if bound["probs_a"].ndim == 1:
        return BinaryLabels(length_of="probs_a").check(value, name, bound)
    return ClassLabels(classes_of="probs_a", length_of="probs_a").check(value, name, bound)


_N_RESAMPLES = Int(2, 2**24, bytes_per=4, what="the resampled statistics")
_LEVEL = Real(0, 1, open_lo=True, open_hi=True, static=True)  # a confidence level: static under jit
_METHOD = Choice("percentile", "bca")
_CHUNK = Int(1, 2**20, what="resamples per compiled chunk")


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


def _resample_keys(k_res, start, count: int):
    """The keys of resamples ``start, ..., start + count - 1``: ``fold_in(k_res, j)``."""
    return jax.vmap(lambda j: fold_in(k_res, j))(start + jnp.arange(count, dtype=jnp.uint32))


def _resample_indices(key, n: int, count: int):
    """Row indices of the first ``count`` resamples of ``bootstrap(..., key=key)`` on $n$ rows, ``(count, n)``."""
    keys = _resample_keys(split_into(key)[0], jnp.uint32(0), count)
    return jax.vmap(lambda k: jax.random.randint(k, (n,), 0, n, dtype=jnp.int32))(keys)


def _groups(n: int) -> tuple[int, int]:
    """(G, m): the grouped jackknife's number of groups and rows per group."""
    G = min(n, _JACKKNIFE_GROUPS)
    return G, n // G


@functools.partial(jax.jit, static_argnums=(1, 2))
def _jackknife_order(k_jack, n: int, G: int):
    """The order the rows are dealt into groups: a random permutation, or none when every row is a group."""
    if G == n:
        return jnp.arange(n, dtype=jnp.int32)
    return jax.random.permutation(k_jack, n).astype(jnp.int32)


# ------------------------------------------------------------------------------------------
# the general path: index draws, one program per statistic, shapes and chunk


@eqx.filter_jit
def _statistic(statistic, arrays, w):
    return _call(statistic, arrays, w)


@eqx.filter_jit
def _resample_chunk(statistic, arrays, w, k_res, start, chunk: int):
    """The statistic on resamples ``start, ..., start + chunk - 1``."""
    n = arrays[0].shape[0]

    def one(k):
        idx = jax.random.randint(k, (n,), 0, n, dtype=jnp.int32)
        return _call(statistic, tuple(a[idx] for a in arrays), None if w is None else w[idx])

    return jax.vmap(one)(_resample_keys(k_res, start, chunk))


@eqx.filter_jit
def _jackknife_chunk(statistic, arrays, w, order, start, chunk: int, m: int):
    """The statistic without group g, for g = ``start, ..., start + chunk - 1``: group g is rows
    ``order[g m : (g + 1) m]``."""
    n = arrays[0].shape[0]
    j = jnp.arange(n - m, dtype=jnp.int32)

    def one(g):
        idx = order[j + m * (j >= g * m).astype(jnp.int32)]
        return _call(statistic, tuple(a[idx] for a in arrays), None if w is None else w[idx])

    return jax.vmap(one)(start + jnp.arange(chunk, dtype=jnp.int32))


# ------------------------------------------------------------------------------------------
# the fast path of smooth ECE: count vectors


@functools.lru_cache(maxsize=32)
def _poisson_table(n: int):
    return poisson_table(n)


@functools.partial(jax.jit, static_argnames="fine")
def _smooth_tables(p, y, w, fine: bool):
    return smooth_ece_count_tables(p, p - y.astype(p.dtype), w.astype(p.dtype), fine=fine)


@jax.jit
def _smooth_fine_tables(p, y, w, tables):
    return smooth_ece_fine_tables(p, p - y.astype(p.dtype), w.astype(p.dtype), tables)


def _smooth_layout(tables):
    """The Poisson table and the ``(slots, 32)`` occupancy of the fast path's layout."""
    return _poisson_table(tables.place.shape[0]), tables.occupied.reshape(tables.coef.shape[:2])


def _smooth_draws(tables, k_res, start, chunk: int):
    table, occupied = _smooth_layout(tables)
    return multinomial_draws(_resample_keys(k_res, start, chunk), table, occupied, tables.coef)


def _smooth_draw_counts(tables, k_res, start, chunk: int, draws):
    """The count vectors of resamples ``start, ..., start + chunk - 1`` in the layout (their
    Poisson part regenerated from the keys)."""
    table, occupied = _smooth_layout(tables)
    return counts_by_position(_resample_keys(k_res, start, chunk), draws, table, occupied, tables.place)


def _smooth_group_counts(tables, groups, start, chunk: int):
    """Count vectors of ones with group g's rows set to zero, g = ``start, ..., start + chunk - 1``."""
    g = start + jnp.arange(chunk, dtype=jnp.int32)
    return (tables.occupied[None] & (groups[None] != g[:, None])).astype(jnp.int32)


_CHUNKS_PER_CALL = 8
r"""Chunks of the fast path per call of its compiled program, run by a loop inside it: the
chunks of one call share the program's buffers (measured about 15% less time per chunk at
$n = 2\cdot 10^4$ than one call per chunk, and 1,000 resamples in one call of 8 chunks
instead of two of 4 took 2-9% less CPU time). The loop's length is an argument: any number of
resamples runs the same program. Its buffers hold 8 chunks' first-grid spectra (16 MB at the
default chunk of 128 in float32)."""


def _in_loop(one, n_chunks):
    """``one(i)`` (a pytree of arrays) for ``i < n_chunks`` (traced, at most
    :data:`_CHUNKS_PER_CALL`), stacked along a new leading axis; rows past ``n_chunks`` are 0.
    ``one`` runs once, for its jaxpr (and the buffers' shapes), which the loop's body replays:
    tracing it again would take as long (about 0.2 s of a first call)."""
    shapes, one = trace_once(one, jnp.int32(0))
    bufs = jax.tree_util.tree_map(lambda s: jnp.zeros((_CHUNKS_PER_CALL,) + s.shape, s.dtype), shapes)

    def body(i, bufs):
        out = one(i)
        return jax.tree_util.tree_map(lambda b, o: lax.dynamic_update_index_in_dim(b, o, i, 0), bufs, out)

    return lax.fori_loop(0, n_chunks, body, bufs)


@functools.partial(jax.jit, static_argnums=4)
def _smooth_resample_calls(tables, k_res, start, n_chunks, chunk: int):
    """smooth ECE of ``n_chunks`` chunks of resamples from ``start`` on the first grid (NaN
    where a resample needs a finer one), and what :func:`_smooth_fine_resamples` needs for those: the
    spectra and the draws (less their sums)."""
    def one(i):
        draws = _smooth_draws(tables, k_res, start + i.astype(start.dtype) * chunk, chunk)
        spec0 = smooth_ece_draws_spectra(draws, tables)
        return smooth_ece_coarse(spec0, tables), spec0, draws._replace(sums=None)

    return _in_loop(one, n_chunks)


@functools.partial(jax.jit, static_argnums=4)
def _smooth_jackknife_calls(tables, groups, start, n_chunks, chunk: int):
    """smooth ECE without group g for ``n_chunks`` chunks of groups from ``start``, as
    :func:`_smooth_resample_calls`."""
    def one(i):
        spec0 = smooth_ece_counts_spectra(_smooth_group_counts(tables, groups, start + i * chunk, chunk), tables)
        return smooth_ece_coarse(spec0, tables), spec0

    return _in_loop(one, n_chunks)


def _chunk_of(j, trees):
    """Row ``j`` of each array of ``trees`` (the chunk ``j`` of a call's buffers)."""
    return jax.tree_util.tree_map(lambda a: lax.dynamic_index_in_dim(a, j, keepdims=False), trees)


@functools.partial(jax.jit, static_argnums=3)
def _smooth_fine_resamples(tables, k_res, start, chunk: int, j, out):
    """:func:`_smooth_resample_calls`' chunk ``j`` (of its output ``out``) completed with the
    finer grids (``tables`` with their layouts): the count vectors regenerated, then the search."""
    (v, sigma), spec0, draws = _chunk_of(j, out)
    counts = _smooth_draw_counts(tables, k_res, start + j.astype(start.dtype) * chunk, chunk, draws)
    return smooth_ece_fine(counts, spec0, v, sigma, tables)[0]


@functools.partial(jax.jit, static_argnums=3)
def _smooth_fine_groups(tables, groups, start, chunk: int, j, out):
    """:func:`_smooth_jackknife_calls`' chunk ``j`` completed with the finer grids."""
    (v, sigma), spec0 = _chunk_of(j, out)
    counts = _smooth_group_counts(tables, groups, start + j * chunk, chunk)
    return smooth_ece_fine(counts, spec0, v, sigma, tables)[0]


def _smooth_chunks(tables, k_res, groups, chunk: int, traced: bool, fine_tables):
    """``(resample(start, k), delete(start, k))``: the fast path's values of ``k`` chunks from
    ``start`` (see :func:`_run_chunks`).

    Concrete inputs: the first grid's program runs the chunks, and the finer grids' layouts
    (``fine_tables()``) and programs (:func:`_smooth_fine_resamples`,
    :func:`_smooth_fine_groups`) are compiled and run only for a chunk with a value that needs
    them. Traced inputs: ``tables`` has the finer grids' layouts, and ``k`` is 1."""
    if traced:  # one graph, inside the caller's: the finer grids behind a real branch
        def resample(start, k):
            draws = _smooth_draws(tables, k_res, start, chunk)
            return smooth_ece_of_draws(draws, tables, lambda: _smooth_draw_counts(tables, k_res, start, chunk, draws))[0]

        def delete(start, k):
            return smooth_ece_of_counts(_smooth_group_counts(tables, groups, start, chunk), tables)[0]

        return resample, delete

    built = []

    def with_fine():
        if not built:
            built.append(fine_tables())
        return built[0]

    def finish(k, out, fine):  # the first k chunks' values, with the finer grids where needed
        v = np.array(out[0][0][:k])
        for j in np.flatnonzero(np.isnan(v).any(axis=1)):
            v[j] = np.asarray(fine(with_fine(), jnp.int32(j), out))
        return v.reshape(-1)

    def resample(start, k):
        out = _smooth_resample_calls(tables, k_res, start, to_device(np.int32(k)), chunk)
        return finish(k, out, lambda t, j, o: _smooth_fine_resamples(t, k_res, start, chunk, j, o))

    def delete(start, k):
        out = _smooth_jackknife_calls(tables, groups, start, jnp.int32(k), chunk)
        return finish(k, out, lambda t, j, o: _smooth_fine_groups(t, groups, start, chunk, j, o))

    return resample, delete


@functools.partial(jax.jit, static_argnums=(2, 3))
def _smooth_groups(tables, order, G: int, m: int):
    """The group of each layout position (-1: no row, or a row in no group)."""
    n = tables.place.shape[0]
    group_of_row = jnp.full((n,), -1, jnp.int32).at[order[: G * m]].set(jnp.arange(G * m, dtype=jnp.int32) // m)
    return jnp.full(tables.occupied.shape, -1, jnp.int32).at[tables.place].set(group_of_row[tables.order])


# ------------------------------------------------------------------------------------------
# chunks, and the interval


def _traced(*trees) -> bool:
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(trees))


def _bucket(count: int, chunk: int) -> int:
    """Rows of the buffer the interval sees: whole chunks, their number rounded up to a power of
    two, so that the interval's program is shared by nearby numbers of resamples."""
    nc = -(-count // chunk)
    return chunk * (1 << (nc - 1).bit_length())


def _run_chunks(fn, count: int, chunk: int, traced: bool, dtype, per: int = 1):
    """The values of chunks 0, chunk, 2 chunk, ... until ``count`` values, in a buffer of
    :func:`_bucket` rows (the first ``count`` are the values; the rest unused). ``fn(start, k)``
    gives the ``k * chunk`` values of the ``k`` chunks from ``start``.

    Concrete inputs: one call of ``fn`` per ``per`` chunks (the last call takes what is left).
    Traced inputs: ``lax.map`` over the chunks (``k = 1``), inside the caller's program."""
    nc = -(-count // chunk)
    if traced:
        out = lax.map(lambda i: fn(i * chunk, 1), jnp.arange(nc, dtype=dtype))
        return out.reshape((nc * chunk,) + out.shape[2:])
    outs = [fn(to_device(g * chunk, dtype), min(per, nc - g)) for g in range(0, nc, per)]
    host = np.concatenate([np.asarray(o) for o in outs])
    size = _bucket(count, chunk)
    return np.concatenate([host, np.zeros((size - host.shape[0],) + host.shape[1:], host.dtype)])


def _interval_of(xp, special, theta, res, count, jack, n_groups, method: str, level):
    """The interval from the first ``count`` rows of ``res`` (and, for BCa, the first
    ``n_groups`` jackknife values of ``jack``), with the array module ``xp`` (``jax.numpy`` in a
    traced bootstrap, NumPy on the host) and its ``special`` functions (``ndtr``, ``ndtri``)."""
    dt = theta.dtype if xp.issubdtype(theta.dtype, xp.floating) else jnp.result_type(float)  # JAX's default float
    valid = (xp.arange(res.shape[0], dtype=xp.int32) < count).reshape((-1,) + (1,) * theta.ndim)
    res = res.astype(dt)
    srt = xp.sort(xp.where(valid, res, xp.inf), axis=0)  # the unused rows last
    B = count.astype(dt)
    alpha = ((1 - level) / 2).astype(dt)
    if method == "percentile":
        q_lo = xp.broadcast_to(alpha, theta.shape)
        q_hi = xp.broadcast_to(1 - alpha, theta.shape)
    else:
        th = theta.astype(dt)
        prop = (xp.sum(valid & (res < th), axis=0, dtype=dt) + xp.sum(valid & (res <= th), axis=0, dtype=dt)) / (2 * B)
        z0 = special.ndtri(prop)
        jack = jack.astype(dt)
        used = (xp.arange(jack.shape[0], dtype=xp.int32) < n_groups).reshape((-1,) + (1,) * theta.ndim)
        mean = xp.sum(xp.where(used, jack, 0), axis=0) / n_groups.astype(dt)
        d = xp.where(used, mean - jack, 0)
        num = xp.sum(d**3, axis=0)
        den = 6 * xp.sum(d**2, axis=0) ** 1.5
        a = xp.where(den > 0, num / xp.where(den > 0, den, 1), 0)  # a constant statistic: no acceleration

        def adjusted(z):
            return special.ndtr(z0 + (z0 + z) / (1 - a * (z0 + z)))

        q_lo, q_hi = adjusted(special.ndtri(alpha)), adjusted(special.ndtri(1 - alpha))
        # z0 = ±inf (every resample on one side of the estimate): the interval is that extreme
        q_lo = xp.where(xp.isnan(q_lo), xp.where(prop > 0.5, 1, 0), q_lo).astype(dt)
        q_hi = xp.where(xp.isnan(q_hi), xp.where(prop > 0.5, 1, 0), q_hi).astype(dt)
    return _quantile(xp, srt, q_lo, B), _quantile(xp, srt, q_hi, B)


@functools.partial(jax.jit, static_argnums=5)
def _interval(theta, res, count, jack, n_groups, method: str, level):
    """:func:`_interval_of` in the caller's program (a traced bootstrap)."""
    return _interval_of(jnp, jax_special, theta, res, count, jack, n_groups, method, level)


def _quantile(xp, sorted_vals, q, B):
    """Linear-interpolation quantile of the first ``B`` sorted rows at (elementwise) levels ``q``."""
    last = B.astype(xp.int32) - 1
    pos = xp.clip(q, 0, 1) * (B - 1)
    lo = xp.clip(xp.floor(pos).astype(xp.int32), 0, last)
    hi = xp.minimum(lo + 1, last)
    frac = (pos - lo.astype(pos.dtype)).astype(sorted_vals.dtype)
    take = lambda i: xp.take_along_axis(sorted_vals, xp.broadcast_to(i, sorted_vals.shape[1:])[None], axis=0)[0]  # noqa: E731
    return take(lo) * (1 - frac) + take(hi) * frac


def _bootstrap(statistic, arrs, w, key, n_resamples, level, method, chunk):
    n = arrs[0].shape[0]
    traced = _traced(arrs, w, key)
    k_res, k_jack = split_into(key)
    fast = statistic is smooth_ece and len(arrs) == 2 and arrs[0].ndim == 1 and arrs[1].ndim == 1
    theta = _call(statistic, arrs, w) if fast else _statistic(statistic, arrs, w)
    G, m = _groups(n)
    order = _jackknife_order(k_jack, n, G) if method == "bca" else None
    if fast:  # smooth_ece itself validated the inputs (at the boundary, or in the graph)
        ws = full(arrs[0].shape, 1, arrs[0].dtype, arrs[0]) if w is None else w
        tables = _smooth_tables(arrs[0], arrs[1], ws, fine=traced)
        groups = _smooth_groups(tables, order, G, m) if method == "bca" else None
        fine_tables = lambda: _smooth_fine_tables(arrs[0], arrs[1], ws, tables)  # noqa: E731
        draw, delete = _smooth_chunks(tables, k_res, groups, chunk, traced, fine_tables)
        per = _CHUNKS_PER_CALL
    else:
        draw = lambda s, k: _resample_chunk(statistic, arrs, w, k_res, s, chunk)  # noqa: E731
        delete = lambda s, k: _jackknife_chunk(statistic, arrs, w, order, s, chunk, m)  # noqa: E731
        per = 1
    res = _run_chunks(draw, n_resamples, chunk, traced, jnp.uint32, per)
    jack = _run_chunks(delete, G, chunk, traced, jnp.int32, per) if method == "bca" else None
    if traced:
        low, high = _interval(theta, res, jnp.asarray(n_resamples, jnp.int32), jack, jnp.asarray(G, jnp.int32), method,
                              level)
        return BootstrapResult(theta, low, high, res[:n_resamples])
    # on the host: a sort of B values compiles nothing (a program of its own cost 0.1 s on a first call)
    with np.errstate(all="ignore"):  # z0 = ±inf gives NaN levels, replaced as in the traced interval
        low, high = _interval_of(np, scipy.special, np.asarray(theta), res, np.int32(n_resamples), jack, np.int32(G),
                                 method, np.asarray(level))
    return BootstrapResult(theta, *jax.device_put((np.asarray(low), np.asarray(high), res[:n_resamples])))


@declare(statistic=Custom(_callable, "a function of the arrays"),
         arrays=Custom(_check_arrays, "numeric arrays sharing a leading axis of n >= 2 rows"), key=Key(single=True),
         n_resamples=_N_RESAMPLES, level=_LEVEL, method=_METHOD,
         sample_weight=Custom(_check_row_weights, "optional non-negative row weights (n,)"), chunk=_CHUNK)
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
        n_resamples: number of resamples $B$ (not compiled in: another $B$ reuses the
            compiled chunks).
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
    out once for all resamples); :func:`jcalib.metrics.smooth.smooth_ece_coarse` runs the
    bandwidth search on that grid. A resample whose search reaches a bandwidth below $11/1024$
    (smooth ECE below about 0.01: well-calibrated forecasts) needs relplot's finer grids: a
    slot of the layout meets a few cells of each, so a chunk's masses on a grid are one batched
    matrix product per slot with that grid's coefficients
    (:func:`jcalib.metrics.smooth.smooth_ece_fine`; those coefficients and this second program
    are built and compiled only when some resample needs them). Same distribution of resamples and the same value per resample as
    drawing indices (to float round-off), different draws for a given key; memory
    $O(\mathrm{chunk}\cdot n)$.

    **Cost.** The first call compiles: one program for the statistic on the data, one for
    the chunks of resamples (per statistic, array shapes and ``chunk``; ``n_resamples`` is not
    compiled in; the smooth-ECE fast path runs up to eight chunks per call of it) and one for
    the deleted groups of BCa; the interval is computed on the host (inside the caller's
    program when traced). A later call with other data of the same shapes, another key or
    another ``n_resamples`` reuses them (JAX's persistent compilation cache keeps them across
    processes when it is on). Warm, percentile costs $B$ evaluations and BCa
    $B + \min(n, 1000)$ (module docstring).

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
    # checked by the declaration: arrays a tuple of arrays, level a Python float
    level = to_device(level, jnp.result_type(float))
    return _bootstrap(statistic, arrays, sample_weight, key, n_resamples, level, method, chunk)


@dataclasses.dataclass(frozen=True)
class _Difference:
    """``metric(a, y) - metric(b, y)``: one hashable object per metric, so jit caches it."""

    metric: Callable[..., Array]

    def __call__(self, probs_a, probs_b, labels, sample_weight=None):
        if sample_weight is None:
            return self.metric(probs_a, labels) - self.metric(probs_b, labels)
        return self.metric(probs_a, labels, sample_weight=sample_weight) - self.metric(probs_b, labels, sample_weight=sample_weight)


@declare(metric=Custom(_callable, "a metric m(probs, labels[, sample_weight=...])"),
         probs_a=Custom(_forecasts, "binary forecasts (n,) or simplex rows (n, C)"),
         probs_b=Custom(_probs_b, "predictions of the shape of probs_a"),
         labels=Custom(_paired_labels, "0/1 labels, or class labels in [0, C)"), key=Key(single=True),
         n_resamples=_N_RESAMPLES, level=_LEVEL, method=_METHOD, sample_weight=Weights(length_of="probs_a"),
         chunk=_CHUNK)
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
    # checked by the declaration (the metric checks its inputs again under its own names)
    arrays = (probs_a, probs_b, labels)
    level = to_device(level, jnp.result_type(float))
    return _bootstrap(_Difference(metric), arrays, sample_weight, key, n_resamples, level, method, chunk)
