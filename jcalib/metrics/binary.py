"""Calibration metrics of binary forecasts: ECE of a sequence, binned ECE, ℓp calibration rate,
Brier score and log loss.

Normalisation (concepts page, "Normalisation of metrics"): sums over rounds are **unnormalised**
unless the name or the docstring says normalised. Here :func:`ece` and :func:`ece_from_counts` are
unnormalised sums (Arunachaleswaran, Collina, Roth, Shi 2024, *An Elementary Predictor Obtaining
2√T+1 Distance to Calibration*, §2); :func:`binned_ece`, :func:`lp_calibration_error`,
:func:`brier` and :func:`log_loss` are normalised averages (divided by the total weight).

Every function here is pure ``jax.numpy``: jit- and vmap-able (the number of bins, ``order`` and
``epsilon`` are Python numbers and fix shapes, so they are static). Input checks: concrete
inputs at the Python boundary (``ValueError`` naming the argument); inside a user's ``jit``,
probabilities in [0, 1] (no NaN), labels in {0, 1} and non-negative finite weights in the
graph with ``eqx.error_if``, unless ``jcalib.config.checks(False)`` was in force at trace time.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .._grid import grid_index, off_grid
from .._validation import (
    BINS,
    BinaryProbs,
    Choice,
    Custom,
    Optional,
    Real,
    Weights,
    binary_inputs,
    binary_or_multiclass_inputs,
    check_grid_counts,
    declare,
    is_concrete,
    shown,
)
from ._groups import group_sums

__all__ = [
    "PrecisionWarning",
    "ace",
    "bin_index",
    "ece",
    "binned_ece",
    "mce",
    "quantile_bin_index",
    "lp_calibration_error",
    "brier",
    "log_loss",
    "ece_from_counts",
]


class PrecisionWarning(UserWarning):
    """A float64 input was computed in float32 (``jax_enable_x64`` is off) and that changed a
    result a user would compare with a float64 library (concepts page, "Precision")."""


_PRECISION_WARNED: set[str] = set()  # kinds already warned about in this process


def _x64_enabled() -> bool:
    return jax.dtypes.canonicalize_dtype(np.float64) == np.float64


def _host_float64(x):
    """``x`` as a NumPy float64 array when it is a concrete float64 input that jcalib will round
    to float32 (``jax_enable_x64`` off); otherwise None."""
    if _x64_enabled() or isinstance(x, (jax.Array, jax.core.Tracer)):
        return None
    try:
        v = np.asarray(x)
    except (TypeError, ValueError):
        return None
    return v if v.dtype == np.float64 else None


def _warn_precision(kind: str, message: str) -> None:
    if kind in _PRECISION_WARNED:
        return
    _PRECISION_WARNED.add(kind)
    # point the warning at the first caller outside the package
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    warnings.warn(message + " Enable float64 with jax.config.update('jax_enable_x64', True) "
                  "to match float64 libraries (warned once per process).", PrecisionWarning, stacklevel=level)


def warn_if_float32_moves_bins(probs, n_bins: int, *, top: bool = False) -> None:
    """Warn (:class:`PrecisionWarning`, once per process) when rounding concrete float64
    forecasts to float32 moves any of them into another uniform bin of :func:`bin_index`
    (``top=True``: the rows' largest probabilities, for the confidence ECEs)."""
    v = _host_float64(probs)
    if v is None or v.size == 0 or not np.all(np.isfinite(v)):
        return
    if top and v.ndim == 2:
        v = v.max(axis=1)
    moved = int(np.sum(_bins_by_table(np, v, n_bins) != _bins_by_table(np, v.astype(np.float32), n_bins)))
    if moved:
        _warn_precision(
            "bins",
            f"{moved} float64 forecast(s) land in a different one of {n_bins} bins after rounding to "
            "float32, so binned metrics differ from a float64 computation (e.g. netcal, relplot).",
        )


def warn_if_float32_changes_log_clip(probs, labels, sample_weight) -> None:
    """Warn once when float32's clip at its epsilon changes a log loss of float64 forecasts: the
    probability given to the outcome is below float32's epsilon (1.19e-7). ``probs`` are binary
    forecasts ``(n,)`` with 0/1 labels, or rows ``(n, C)`` with class labels (the NLL)."""
    v = _host_float64(probs)
    if v is None or any(isinstance(a, jax.core.Tracer) for a in (labels, sample_weight)):
        return  # traced outcomes (a user's jit over them): no host-side check
    y = np.asarray(labels).astype(np.int64)
    q = v[np.arange(len(y)), y] if v.ndim == 2 else np.where(y == 1, v, 1 - v)
    w = np.ones_like(q) if sample_weight is None else np.asarray(sample_weight)
    if np.any((q < np.finfo(np.float32).eps) & (w > 0)):
        _warn_precision(
            "log_loss",
            "float64 forecasts computed in float32 are clipped at float32's epsilon (1.19e-7), not "
            "float64's (2.2e-16): a forecast of exactly 0 or 1 that is wrong costs 15.9 instead of "
            "36.0 (scikit-learn's value).",
        )



@declare(**binary_inputs())
def ece(
    probs: Float[Array, " T"],
    labels: Int[Array, " T"],
    *,
    sample_weight: Float[Array, " T"] | None = None,
) -> Float[Array, ""]:
    r"""Expected calibration error of a sequence, **unnormalised**, with exact grouping.

    $$\mathrm{ECE}(p, y) = \sum_{v} \Big|\sum_t w_t\,\mathbb 1[p_t = v]\,(p_t - y_t)\Big|,$$
    the sum running over the distinct forecast values $v$ (no binning: rounds are grouped by
    exactly equal forecasts). With ``sample_weight=None`` every $w_t = 1$, which is the
    definition of Arunachaleswaran et al. (2024); integer weights are multiplicities (weight $k$
    equals $k$ repeated rounds). Divide by $T$ (or the total weight) for the normalised value.

    Args:
        probs: forecasts $p_t \in [0, 1]$, shape ``(T,)``.
        labels: outcomes $y_t \in \{0, 1\}$, shape ``(T,)``.
        sample_weight: optional non-negative weights, shape ``(T,)``.

    Returns:
        Scalar, unnormalised (a sum over rounds).

    Examples:
        >>> import jax.numpy as jnp
        >>> float(ece(jnp.array([0.5, 0.5, 1.0]), jnp.array([1, 1, 0])))
        2.0

    References:
        Arunachaleswaran, Collina, Roth, Shi (2024), *An Elementary Predictor Obtaining
        $2\sqrt{T}+1$ Distance to Calibration*, §2 (definition of ECE).
    """
    return _ece_of(probs, labels, sample_weight)


@jax.jit
def _ece_of(probs, labels, w):
    """:func:`ece` of checked inputs, one compiled program per shape (operation by operation,
    each of its operations would compile a program of its own on a first call: 1 s)."""
    _, _, (bias,) = group_sums(probs, w * (probs - labels))
    return jnp.sum(jnp.abs(bias))


@functools.lru_cache(maxsize=64)
def _edge_table(n_bins: int, dtype_name: str) -> np.ndarray:
    """For k = 0..K, the smallest float of ``dtype`` that is >= k/K (as real numbers).

    Computed once per (K, dtype) on the host in exact integer arithmetic: a float e is >= k/K
    iff e·K >= k, and ``e.as_integer_ratio()`` gives e as a fraction exactly.
    """
    dt = np.dtype(dtype_name)
    edges = (np.arange(n_bins + 1, dtype=np.float64) / n_bins).astype(dt)  # nearest (or next) float
    up, down = dt.type(np.inf), dt.type(-np.inf)

    def at_least(e, k):  # e >= k/K exactly
        num, den = float(e).as_integer_ratio()
        return num * n_bins >= k * den

    for k in range(n_bins + 1):
        e = edges[k]
        while not at_least(e, k):
            e = np.nextafter(e, up)
        while at_least(np.nextafter(e, down), k):
            e = np.nextafter(e, down)
        edges[k] = e
    return edges


@declare(probs=BinaryProbs(ndim=None, nonempty=False), n_bins=BINS)
def bin_index(probs: Float[Array, "..."], n_bins: int) -> Int[Array, "..."]:
    r"""Index of the uniform bin $[k/K, (k+1)/K)$ holding each forecast, decided exactly.

    A float $p$ is in bin $k$ iff $k/K \le p < (k+1)/K$ **as real numbers** (the last bin is
    closed, so $p = 1$ is in bin $K-1$). ``floor(p * K)`` in float arithmetic is within one of
    that $k$ and is corrected by comparing $p$ with $e_k$ and $e_{k+1}$, where $e_k$ is the
    smallest float of $p$'s dtype that is $\ge k/K$: for floats, $p \ge k/K \iff p \ge e_k$, so
    the comparisons are exact in float32 and float64 alike. The table $e_0, \dots, e_K$ is
    computed once per $(K, \text{dtype})$ on the host with integer arithmetic. float16 and
    bfloat16 inputs are compared in float32 (which holds them exactly).

    Args:
        probs: forecasts in $[0, 1]$, any shape, a float dtype.
        n_bins: the number of bins $K$ (a Python int).

    Returns:
        int32 bin indices in $[0, K)$, the shape of ``probs``.

    Examples:
        >>> import jax.numpy as jnp
        >>> bin_index(jnp.array([0.2, 0.7, 1.0]), 10).tolist()  # the float 0.7 lies below 7/10
        [2, 6, 9]
    """
    return _bin_index(probs, n_bins)


def _bin_index(p, n_bins: int):
    """:func:`bin_index` of checked forecasts (the package's binned functions check theirs once)."""
    p = jnp.asarray(p)
    if not jnp.issubdtype(p.dtype, jnp.floating):
        p = p.astype(jnp.result_type(float))
    if jnp.finfo(p.dtype).bits < 32:
        p = p.astype(jnp.float32)  # exact: float32 holds every float16/bfloat16 value
    return _bins_by_table(jnp, p, n_bins)


def _bins_by_table(xp, p, n_bins):
    """:func:`bin_index`'s rule in ``xp`` (``jnp``, or ``np`` for the host-side precision check)."""
    edges = xp.asarray(_edge_table(n_bins, np.dtype(p.dtype).name))
    k0 = xp.clip(xp.floor(p * n_bins), 0, n_bins - 1).astype(xp.int32)
    k = k0 - (p < edges[k0]).astype(xp.int32) + (p >= edges[k0 + 1]).astype(xp.int32)
    return xp.clip(k, 0, n_bins - 1)


_bin_index_uniform = _bin_index  # the one bin-edge rule, under the name the package's binned functions use


def _bucket_of_grid_point(p, k, m):
    # Forecasts j/m: integer index j, then bucket floor(j·k/m) from an exact integer table
    # (NumPy int64: no overflow, no float rounding), the last bucket closed.
    if is_concrete(p) and p.size and bool(jnp.any(off_grid(p, m))):
        raise ValueError(f"probs must lie on the grid {{j/{m}}} (within 1e-3/{m}) when n_bins={m} is given")
    table = np.minimum(np.arange(m + 1, dtype=np.int64) * k // m, k - 1).astype(np.int32)
    return jnp.asarray(table)[grid_index(p, m)]


@declare(probs=BinaryProbs(), n_bins=BINS, sample_weight=Weights(length_of="probs", fill=True))
def quantile_bin_index(
    probs: Float[Array, " n"],
    n_bins: int,
    *,
    sample_weight: Float[Array, " n"] | None = None,
) -> Int[Array, " n"]:
    r"""Equal-mass bin of each forecast, by weighted rank: $\lfloor K\,W(<p_i)/W\rfloor$.

    $W(<v)$ is the total weight of forecasts strictly below $v$ and $W$ the total weight, so
    equal values always share a bin, integer weights act as repetitions, and $n$ distinct
    unit-weight forecasts fill each bin with $n/K$ of them when $K$ divides $n$ (a heavy tie may
    leave bins empty). The ``strategy="quantile"`` bins of :func:`binned_ece`, :func:`mce`,
    :func:`ace` and ``HistogramBinning``.

    Args:
        probs: forecasts, shape ``(n,)``.
        n_bins: the number of bins $K$ (a Python int).
        sample_weight: optional non-negative weights with a positive sum, shape ``(n,)``
            (default: all ones).

    Returns:
        int32 bin indices in $[0, K)$, shape ``(n,)``.
    """
    return _quantile_bin_index(probs, sample_weight, n_bins)


def _quantile_bin_index(p, w, n_bins: int):
    """:func:`quantile_bin_index` of checked forecasts and weights."""
    order = jnp.argsort(p)
    ps, ws = p[order], w[order]
    cum_before = jnp.cumsum(ws) - ws
    # weight strictly below each sorted value = cum_before at the first element of its group
    first = jnp.searchsorted(ps, ps, side="left")
    below = cum_before[first]
    frac = below / jnp.sum(w)
    idx_sorted = jnp.clip(jnp.floor(frac * n_bins).astype(jnp.int32), 0, n_bins - 1)
    return jnp.zeros_like(idx_sorted).at[order].set(idx_sorted)


def _bin_sums(pr, y, w, n_bins, strategy):
    r"""Per-bin weight $W_b$ and signed bias $\sum_{i \in B_b} w_i (p_i - y_i)$, shape ``(n_bins,)``."""
    idx = _bin_index_uniform(pr, n_bins) if strategy == "uniform" else _quantile_bin_index(pr, w, n_bins)
    wb = jax.ops.segment_sum(w, idx, num_segments=n_bins)
    bias = jax.ops.segment_sum(w * (pr - y), idx, num_segments=n_bins)
    return wb, bias


def _binned(pr, y, w, n_bins, strategy):
    """Weights and per-bin (weight, bias) of checked binary forecasts."""
    return (w, *_bin_sums(pr, y, w, n_bins, strategy))


ORDER = Real(1, static=True)  # an Lp exponent: a real number >= 1 (static: it picks the formula)
STRATEGY = Choice("uniform", "quantile")


def _warn_uniform_bins(raw, checked):
    """Precision warning of the uniformly binned metrics (needs the user's float64 values)."""
    if checked.get("strategy", "uniform") == "uniform":
        warn_if_float32_moves_bins(raw["probs"], checked["n_bins"])


@declare(_warn_uniform_bins, **binary_inputs(), n_bins=BINS, strategy=STRATEGY, order=ORDER)
def binned_ece(
    probs: Float[Array, " n"],
    labels: Int[Array, " n"],
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    order: float = 1,
    sample_weight: Float[Array, " n"] | None = None,
) -> Float[Array, ""]:
    r"""Binned expected calibration error, **normalised** (the batch ECE most libraries report).

    With bins $B_1, \dots, B_K$ ($K$ = ``n_bins``), bin weight $W_b = \sum_{i \in B_b} w_i$,
    total weight $W$, mean confidence $\bar p_b$ and frequency of ones $\bar y_b$ in bin $b$:
    $$\mathrm{ECE}_p = \Big(\sum_{b : W_b > 0} \frac{W_b}{W}\,|\bar p_b - \bar y_b|^p\Big)^{1/p},$$
    $p$ = ``order``. ``order=1`` is the usual ECE (Naeini et al. 2015; Guo et al. 2017),
    ``order=2`` the root-mean-square calibration error. For ``order=1`` this equals $\frac1W\sum_b |\sum_{i\in B_b} w_i(p_i - y_i)|$,
    i.e. the unnormalised ECE (:func:`ece`; Arunachaleswaran et al. 2024) computed on binned
    forecasts, divided by $W$.

    Bins:
        * ``"uniform"``: $[0, 1/K), [1/K, 2/K), \dots, [(K-1)/K, 1]$ (1 falls in the last bin).
        * ``"quantile"`` (equal mass): a forecast value $v$ falls in bin
          $\lfloor K\, W(<v)/W \rfloor$, $W(<v)$ being the weight of forecasts strictly below
          $v$. Equal forecasts always share a bin (so a heavy tie may leave bins empty), integer
          weights act as repetitions, and $n$ distinct unit-weight forecasts fill each bin with
          $n/K$ of them when $K$ divides $n$. Empty bins contribute nothing.

    Args:
        probs: forecasts in $[0, 1]$, shape ``(n,)``.
        labels: outcomes in $\{0, 1\}$, shape ``(n,)``.
        n_bins: number of bins $K$ (static).
        strategy: ``"uniform"`` or ``"quantile"``.
        order: the exponent $p \ge 1$ (static).
        sample_weight: optional non-negative weights, shape ``(n,)``.

    Returns:
        Scalar in $[0, 1]$, normalised by the total weight.

    Examples:
        >>> import jax.numpy as jnp
        >>> round(float(binned_ece(jnp.array([0.1, 0.2, 0.9]), jnp.array([0, 1, 1]), n_bins=2)), 4)
        0.2667

    References:
        Naeini, Cooper, Hauskrecht (2015), *Obtaining well calibrated probabilities using
        Bayesian binning*; Guo, Pleiss, Sun, Weinberger (2017), *On calibration of modern
        neural networks*; Arunachaleswaran et al. (2024), §2, for the unnormalised sequence form.
    """
    return binned_ece_kernel(probs, labels, sample_weight, n_bins, strategy, order)


@functools.partial(jax.jit, static_argnums=(3, 4, 5))
def binned_ece_kernel(probs, labels, w, n_bins, strategy, p):
    """:func:`binned_ece` of checked inputs (the per-class loops of the multi-class ECEs call it
    with weights that may be zero for a class never predicted). One compiled program per shape
    and setting: run operation by operation, each of its two dozen operations would compile a
    program of its own on a first call (0.7 s)."""
    w, wb, bias = _binned(probs, labels.astype(probs.dtype), w.astype(probs.dtype), n_bins, strategy)
    total = jnp.sum(w)
    if p == 1:
        return jnp.sum(jnp.abs(bias)) / total
    safe = jnp.where(wb > 0, wb, 1)
    terms = jnp.where(wb > 0, wb / total * jnp.abs(bias / safe) ** p, 0)
    return jnp.sum(terms) ** (1.0 / p)


@declare(_warn_uniform_bins, **binary_inputs(), n_bins=BINS, strategy=STRATEGY)
def mce(
    probs: Float[Array, " n"],
    labels: Int[Array, " n"],
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    sample_weight: Float[Array, " n"] | None = None,
) -> Float[Array, ""]:
    r"""Maximum calibration error, **normalised** (a gap between frequencies, in $[0, 1]$).

    $$\mathrm{MCE} = \max_{b : W_b > 0} |\bar p_b - \bar y_b|,$$
    the largest gap between mean forecast and frequency of ones over the non-empty bins
    (Naeini, Cooper, Hauskrecht 2015; Guo et al. 2017, §2), with the bins of
    :func:`binned_ece` (uniform by default, bin edges by :func:`bin_index`). This is netcal's
    ``MCE(bins=n_bins)`` on binary forecasts and torchmetrics' ``CalibrationError(norm="max")``,
    up to their edge rules (netcal's bins come from ``np.linspace``; jcalib decides edges
    exactly). For the multi-class confidence MCE pass the top probability and whether the
    arg-max was right: ``mce(probs.max(1), probs.argmax(1) == labels)``.

    Args:
        probs: forecasts in $[0, 1]$, shape ``(n,)``.
        labels: outcomes in $\{0, 1\}$, shape ``(n,)``.
        n_bins: number of bins $K$ (static).
        strategy: ``"uniform"`` or ``"quantile"`` (equal mass, as in :func:`binned_ece`).
        sample_weight: optional non-negative weights, shape ``(n,)``.

    Returns:
        Scalar in $[0, 1]$; not a weighted average, so one sparsely populated bin can decide it.

    Examples:
        >>> import jax.numpy as jnp
        >>> round(float(mce(jnp.array([0.1, 0.2, 0.9]), jnp.array([0, 1, 1]), n_bins=2)), 4)
        0.35

    References:
        Naeini, Cooper, Hauskrecht (2015), *Obtaining well calibrated probabilities using
        Bayesian binning*, AAAI; Guo, Pleiss, Sun, Weinberger (2017), §2.
    """
    return _mce_of(probs, labels, sample_weight, n_bins, strategy)


@functools.partial(jax.jit, static_argnums=(3, 4))
def _mce_of(probs, labels, w, n_bins, strategy):
    """:func:`mce` of checked inputs, one compiled program per shape and setting."""
    _, wb, bias = _binned(probs, labels, w, n_bins, strategy)
    return jnp.max(jnp.where(wb > 0, jnp.abs(bias) / jnp.where(wb > 0, wb, 1), 0))


@declare(**binary_or_multiclass_inputs(), n_bins=BINS)
def ace(
    probs: Float[Array, "n ..."],
    labels: Int[Array, " n"],
    *,
    n_bins: int = 15,
    sample_weight: Float[Array, " n"] | None = None,
) -> Float[Array, ""]:
    r"""Adaptive calibration error (Nixon et al. 2019), **normalised**: equal-mass bins, every
    non-empty bin counting equally, averaged over classes.

    $$\mathrm{ACE} = \frac1C\sum_{\ell=1}^{C} \frac{1}{|R_\ell|}\sum_{r \in R_\ell}
      |\bar v_{\ell r} - \bar y_{\ell r}|,$$
    where, for class $\ell$, the samples are split into ``n_bins`` equal-mass ranges of
    $v_\ell$ (the quantile bins of :func:`binned_ece`: a value goes to bin
    $\lfloor K\,W(<v)/W\rfloor$, ties share a bin), $R_\ell$ are the non-empty ranges,
    $\bar v_{\ell r}$ the mean probability of class $\ell$ and $\bar y_{\ell r}$ the frequency
    of class $\ell$ in range $r$. Unlike :func:`binned_ece`, bins are not weighted by their
    mass. This is the definition of Nixon, Dusenberry, Zhang, Jerfel, Tran (2019), §4
    ("adaptive calibration error"), with every class's probability used (not only the
    predicted one). netcal's ``ACE`` is a different quantity with the same name (uniform bins,
    the unweighted mean over non-empty bins of the confidence gap).

    Args:
        probs: shape ``(n, C)`` rows on the simplex with integer ``labels`` in $[0, C)$; or
            binary forecasts of shape ``(n,)`` with 0/1 ``labels``, treated as the one class
            "label 1" ($C = 1$).
        labels: shape ``(n,)``.
        n_bins: number of equal-mass ranges per class (static; Nixon et al. use 15).
        sample_weight: optional non-negative weights, shape ``(n,)`` (integer weights act as
            repetitions in the ranks).

    Returns:
        Scalar in $[0, 1]$.

    Examples:
        >>> import jax.numpy as jnp
        >>> round(float(ace(jnp.array([0.1, 0.2, 0.8, 0.9]), jnp.array([0, 1, 1, 1]), n_bins=2)), 4)
        0.25

    References:
        Nixon, Dusenberry, Zhang, Jerfel, Tran (2019), *Measuring calibration in deep
        learning*, CVPR Workshops, §4.
    """
    if probs.ndim == 1:
        v, hits = probs[:, None], labels[:, None]
    else:
        hits = jax.nn.one_hot(labels, probs.shape[1], dtype=probs.dtype)
        v = probs
    return _ace(v, hits, sample_weight.astype(v.dtype), n_bins)


@functools.partial(jax.jit, static_argnames=("n_bins",))
def _ace(v, hits, w, n_bins):
    def per_class(vy):
        wb, bias = _bin_sums(vy[0], vy[1], w, n_bins, "quantile")
        filled = wb > 0
        gaps = jnp.where(filled, jnp.abs(bias) / jnp.where(filled, wb, 1), 0)
        return jnp.sum(gaps) / jnp.sum(filled.astype(v.dtype))

    return jnp.mean(jax.lax.map(per_class, (v.T, hits.T)))


def _check_epsilon(epsilon, name, bound):
    """A bucket width in (0, 1] whose inverse is an integer (buckets tile [0, 1])."""
    epsilon = Real(0, 1, open_lo=True, static=True).check(epsilon, name, bound)
    k = round(1.0 / epsilon)
    if not math.isclose(k * epsilon, 1.0, rel_tol=1e-9):
        raise ValueError(f"1/{name} must be an integer (buckets of width {name} tile [0, 1]); got {name}={shown(epsilon)}")
    BINS.check(k, f"1/{name}", bound)
    return epsilon


def _warn_lp_buckets(raw, checked):
    if checked["n_bins"] is None:
        warn_if_float32_moves_bins(raw["probs"], round(1.0 / checked["epsilon"]))


@declare(_warn_lp_buckets, **binary_inputs(), epsilon=Custom(_check_epsilon, "a bucket width 1/k, k a positive integer"),
         order=ORDER, n_bins=Optional(BINS))
def lp_calibration_error(
    probs: Float[Array, " T"],
    labels: Int[Array, " T"],
    epsilon: float,
    *,
    order: float = 1,
    sample_weight: Float[Array, " T"] | None = None,
    n_bins: int | None = None,
) -> Float[Array, ""]:
    r"""The $(\varepsilon, \ell_p)$-calibration rate, Definition 1 of Okoroafor et al. (2024), **normalised**.

    Buckets of width $\varepsilon$: $I_k = [k\varepsilon, (k+1)\varepsilon)$ for
    $k = 0, \dots, 1/\varepsilon - 1$ (the last one closed, so it contains 1), with midpoints
    $b_k = (k + \tfrac12)\varepsilon$. With $n_k = \sum_t w_t \mathbb 1[p_t \in I_k]$ and
    $\rho_k = \sum_t w_t y_t \mathbb 1[p_t \in I_k] / n_k$ the frequency of ones in bucket $k$,
    $$\mathrm{CalErr}_p = \Big(\sum_{k : n_k > 0} \frac{n_k}{T}\,|\rho_k - b_k|^p\Big)^{1/p},$$
    where $T = \sum_t w_t$ and $p$ = ``order``. Definition 1 takes the points to be "the set of midpoints of the
    intervals" and $\rho$ the empirical frequency of ones "on only those rounds where the
    forecaster's prediction was roughly equal to" the midpoint; the weighting by $n_k/T$ and the
    power-mean form are jcalib's reading of its eq. (1). Frequencies are compared with the bucket
    **midpoint** $b_k$, not the mean forecast in the bucket (which :func:`binned_ece` uses), so a
    perfectly calibrated forecaster still scores up to $\varepsilon/2$.
    Multiply by $T$ (for ``order=1``) for an unnormalised sum.

    Buckets follow jcalib's one bin-edge rule (:func:`bin_index`, concepts page "Bins"): a
    float forecast is in bucket $k$ iff $k\varepsilon \le p < (k+1)\varepsilon$ as real
    numbers, with $\varepsilon = 1/K$. A float that is not exactly a grid point $j/m$ is binned
    by its own value: float32's nearest value to $27/49$ lies below $27/49$, so it falls in
    bucket 26 when $\varepsilon = 1/49$. With ``n_bins=m`` the forecasts are declared to be grid
    points $j/m$ (checked where concrete: within $10^{-3}/m$, the recorders' tolerance) and are
    bucketed by their integer index, $k = \lfloor jK/m\rfloor$, which puts $j/m$ where the real
    number $j/m$ belongs, whatever the float width.

    Args:
        probs: forecasts in $[0, 1]$, shape ``(T,)``.
        labels: outcomes in $\{0, 1\}$, shape ``(T,)``.
        epsilon: bucket width; $1/\varepsilon$ must be an integer (static).
        order: exponent $p \ge 1$ (static).
        sample_weight: optional non-negative weights (multiplicities), shape ``(T,)``.
        n_bins: optional forecast grid size $m$: the forecasts are on the grid $\{j/m\}$
            (e.g. AOSA's forecasts) and are bucketed by the integer $j = \mathrm{round}(p\,m)$
            (static).

    Returns:
        Scalar, normalised (a weighted average over rounds, then the $1/p$-th power).

    Raises:
        ValueError: bad ``epsilon``, ``order`` or ``n_bins``, invalid forecasts or labels, or
            (with ``n_bins``) concrete forecasts off the grid.

    References:
        Okoroafor, Kleinberg, Sun (2024), *Faster Recalibration of an Online Predictor via
        Approachability*, Definition 1 (Eq. 1).
    """
    k, p = round(1.0 / epsilon), order
    pr, y, w = probs, labels, sample_weight
    if n_bins is None:
        idx = _bin_index_uniform(pr, k)
    else:
        idx = _bucket_of_grid_point(pr, k, n_bins)
    nk = jax.ops.segment_sum(w, idx, num_segments=k)
    ones = jax.ops.segment_sum(w * y, idx, num_segments=k)
    mid = (jnp.arange(k, dtype=pr.dtype) + 0.5) / k
    safe = jnp.where(nk > 0, nk, 1)
    terms = jnp.where(nk > 0, nk / jnp.sum(w) * jnp.abs(ones / safe - mid) ** p, 0)
    return jnp.sum(terms) ** (1.0 / p)


@declare(**binary_inputs())
def brier(
    probs: Float[Array, " n"],
    labels: Int[Array, " n"],
    *,
    sample_weight: Float[Array, " n"] | None = None,
) -> Float[Array, ""]:
    r"""Brier score $\frac1W\sum_i w_i (p_i - y_i)^2$, **normalised** (weighted mean).

    References:
        Brier (1950), *Verification of forecasts expressed in terms of probability*.
    """
    return jnp.sum(sample_weight * (probs - labels) ** 2) / jnp.sum(sample_weight)


def _warn_log_clip(raw, checked):
    if checked.get("eps") is None:
        warn_if_float32_changes_log_clip(raw["probs"], checked["labels"], checked["sample_weight"])


@declare(_warn_log_clip, **binary_inputs(), eps=Optional(Real(0, 0.5, open_lo=True)))
def log_loss(
    probs: Float[Array, " n"],
    labels: Int[Array, " n"],
    *,
    sample_weight: Float[Array, " n"] | None = None,
    eps: float | None = None,
) -> Float[Array, ""]:
    r"""Log loss $-\frac1W\sum_i w_i[y_i\log p_i + (1-y_i)\log(1-p_i)]$, **normalised**.

    Forecasts are clipped to $[\epsilon, 1-\epsilon]$ before taking logs, with $\epsilon$ =
    ``eps`` or, by default, the machine epsilon of the float dtype (as scikit-learn's
    ``log_loss`` does), so a confident wrong forecast costs about $-\log\epsilon$ (36.0 in
    float64, 15.9 in float32) instead of infinity. Without ``jax_enable_x64`` a float64 input is
    computed in float32 and clipped at float32's epsilon: when that changes the value (a
    forecast within $1.2\cdot10^{-7}$ of the wrong end), a :class:`PrecisionWarning` says so
    once per process (concepts page, "Precision"). The log loss is a proper but unbounded,
    non-Lipschitz scoring rule, outside the Lipschitz-score setting of Okoroafor, Kleinberg,
    Sun (2024, §2.2).

    References:
        Good (1952), *Rational decisions*; Gneiting, Raftery (2007), *Strictly proper scoring
        rules, prediction, and estimation*.
    """
    p, y, w = probs, labels, sample_weight
    e = jnp.finfo(p.dtype).eps if eps is None else eps
    # departs from the unclipped definition: clip so the loss stays finite (see docstring)
    pc = jnp.clip(p, e, 1 - e)
    ll = y * jnp.log(pc) + (1 - y) * jnp.log1p(-pc)
    return -jnp.sum(w * ll) / jnp.sum(w)


def grid_counts_arg(value, name, bound):
    """Per-grid-point counts (``counts`` then ``ones``) checked together once both are bound."""
    if name == "counts":
        return value
    _, counts, ones = check_grid_counts(bound["counts"], value, bound["n_bins"])
    bound["counts"] = counts
    return ones


@declare(n_bins=BINS, counts=Custom(grid_counts_arg, "rounds per grid point, shape (n_bins + 1,)"),
         ones=Custom(grid_counts_arg, "rounds with y = 1 per grid point, 0 <= ones <= counts"))
def ece_from_counts(
    counts: Int[Array, " n_bins+1"],
    ones: Int[Array, " n_bins+1"],
    n_bins: int,
) -> Float[Array, ""]:
    r"""Unnormalised ECE of a grid forecaster from its per-grid-point summary.

    ``counts[i]`` rounds forecast $i/m$ and ``ones[i]`` of them had $y = 1$, so
    $$\mathrm{ECE} = \sum_{i=0}^{m} \big|\,\mathrm{counts}_i \cdot i/m - \mathrm{ones}_i\,\big|,$$
    the ECE of Arunachaleswaran et al. (2024, §2) of the summarised sequence; equal to :func:`ece`
    on the expanded sequence. **Unnormalised**; divide by ``counts.sum()`` for the normalised
    value.

    Integer counts are split as $\mathrm{counts}_i = q m + r$ so the bias
    $(q\,i - \mathrm{ones}_i) + r\,i/m$ is computed from exact integers and one fraction:
    summaries of $10^7$ rounds keep full precision in float32.

    Args:
        counts: rounds per grid point, shape ``(m + 1,)`` (integers or floats).
        ones: rounds with $y=1$ per grid point, shape ``(m + 1,)``.
        n_bins: grid resolution $m$ (grid $\{0, 1/m, \dots, 1\}$).

    Returns:
        Scalar, unnormalised.

    References:
        Arunachaleswaran, Collina, Roth, Shi (2024), §2 (ECE) and §3 (the grid $B_m$).
    """
    m = n_bins
    fdt = jnp.result_type(float)
    i = jnp.arange(m + 1)
    if jnp.issubdtype(counts.dtype, jnp.integer) and jnp.issubdtype(ones.dtype, jnp.integer):
        c = counts.astype(i.dtype)
        q, r = c // m, c % m
        bias = (q * i - ones.astype(i.dtype)).astype(fdt) + (r * i).astype(fdt) / m
    else:
        bias = counts.astype(fdt) * (i.astype(fdt) / m) - ones.astype(fdt)
    return jnp.sum(jnp.abs(bias))
