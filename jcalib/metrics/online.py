r"""Online recalibration metrics (Okoroafor et al. 2024): (ε, ℓp)-calibration and average regret.

Okoroafor, Kleinberg, Sun (2024), *Faster Recalibration of an Online Predictor via
Approachability*, AISTATS.

**(ε, ℓp)-calibration.** Forecasts are put in buckets $b$; with $n_b$ the rounds in bucket $b$,
$\rho_b$ the frequency of $y = 1$ among them and $v_b$ the bucket's value, two forms (equal at
$p = 1$; $p$ is the argument ``order``), both **normalised** by $T$:

- ``form="mean"``: the weighted power mean $\big(\sum_b (n_b/T)\,|\rho_b - v_b|^p\big)^{1/p}$
  (Okoroafor et al., Definition 1);
- ``form="norm"``: the ℓp norm of the bucket vector $\big((n_b/T)(\rho_b - v_b)\big)_b$, what the
  approachability bound controls for $p > 1$ (Okoroafor et al., Lemma 6, eq. 7).

Two bucketings: ``n_bins`` $= m$ alone — the algorithm's grid $B_m$ ($m + 1$ buckets, $v_b = b/m$),
forecasts bucketed by their **integer grid index**; ``n_buckets`` $= K$ — Definition 1's
buckets of width $\varepsilon = 1/K$ with midpoints $v_k = (k + 1/2)/K$. With both, grid
forecasts go to midpoint buckets by integer arithmetic, $k = \lfloor jK/m \rfloor$ (never
``floor(p * K)`` in float, which misplaces grid points on bucket edges).

**Average regret** against the model: $R_T = \frac1T \sum_t [s(p_t, y_t) - s(q_t, y_t)]$.

Both are also available **in expectation** over published mixtures (``probs=``: a
``(T, k)`` support with its ``(T, k)`` weights), without the sampling noise of the draws. The
recorders of :mod:`jcalib.recorders.buckets` keep exactly the bucket sums these functions need,
in memory O(m), and :func:`calibration_from_buckets` evaluates them.

Input checks: concrete inputs at the Python boundary (``ValueError`` naming the argument);
under ``jit``/``vmap``/``grad``, forecasts and the model's forecasts in [0, 1] (no NaN) and outcomes in {0, 1} are checked in the graph
with ``eqx.error_if`` unless ``jcalib.config.checks(False)`` was in force at trace time.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .._dtypes import float_dtype
from .._grid import grid_index, off_grid
from .._validation import (
    shown,
    as_float_array,
    check_binary_labels,
    check_binary_probs,
    check_finite,
    check_positive_int,
    is_concrete,
)
from ..scoring import AbstractScoringRule, Brier

__all__ = [
    "average_regret",
    "calibration_from_buckets",
    "eps_calibration",
]

_FORMS = ("mean", "norm")


def grid_to_midpoint(j, n_bins: int, n_buckets: int) -> Int[Array, "..."]:
    r"""Midpoint bucket $\lfloor jK/m \rfloor$ (clipped to $K - 1$) of grid point $j/m$
    ($m$ = ``n_bins``), in integers (used by the bucket recorders)."""
    j = jnp.asarray(j, jnp.int32)
    return jnp.minimum((j * n_buckets) // n_bins, n_buckets - 1).astype(jnp.int32)


def calibration_from_buckets(counts, ones, values, T, *, order: float = 1, form: str = "mean") -> Float[Array, ""]:
    r"""(ε, ℓp)-calibration from bucket sums (normalised by ``T``).

    Args:
        counts: $n_b$ per bucket (ints, or floats for expected counts).
        ones: $\sum_{t \in b} y_t$ per bucket.
        values: each bucket's value $v_b$ (grid point or midpoint).
        T: number of rounds.
        order: the exponent $p \ge 1$.
        form: ``"mean"`` (weighted power mean) or ``"norm"`` (ℓp norm of the bucket vector).

    Returns:
        A float scalar.
    """
    if form not in _FORMS:
        raise ValueError(f"form must be one of {_FORMS}, got {shown(form)}")
    if isinstance(order, bool) or not isinstance(order, (int, float)) or not order >= 1:
        raise ValueError(f"order must be a number >= 1, got {shown(order)}")
    p = order
    fdt = float_dtype()
    n = check_finite(as_float_array(counts, "counts"), "counts").astype(fdt)
    o = check_finite(as_float_array(ones, "ones"), "ones").astype(fdt)
    v = check_binary_probs(values, "values").astype(fdt)
    if n.ndim != 1 or o.shape != n.shape or v.shape != n.shape:
        raise ValueError(
            f"counts, ones and values must be 1-D of one length, got {tuple(n.shape)}, {tuple(o.shape)}, {tuple(v.shape)}"
        )
    if is_concrete(n) and is_concrete(o) and (np.any(np.asarray(o) < 0) or np.any(np.asarray(o) > np.asarray(n))):
        raise ValueError("need 0 <= ones[b] <= counts[b] for every bucket")
    T = jnp.asarray(T if isinstance(T, jax.core.Tracer) else check_positive_int(T, "T")).astype(fdt)
    bias = (o - n * v) / T  # (n_b/T)(rho_b - v_b)
    if form == "norm":
        return jnp.sum(jnp.abs(bias) ** p) ** (1.0 / p)
    gap = jnp.abs(o - n * v) / jnp.where(n > 0, n, 1.0)  # |rho_b - v_b|
    return jnp.sum((n / T) * gap**p) ** (1.0 / p)


def _support_probs(forecasts, probs):
    f = check_binary_probs(forecasts, "forecasts")
    if f.ndim >= 1 and f.shape[0] == 0:
        raise ValueError("forecasts are empty; an online metric needs at least one round")
    if probs is None:
        f = check_binary_probs(forecasts, "forecasts")
        if f.ndim != 1:
            raise ValueError(f"forecasts must be 1-D (T,) without probs, got shape {tuple(f.shape)}")
        return f[:, None], jnp.ones(f.shape + (1,), f.dtype)
    f = check_binary_probs(forecasts, "forecasts")
    w = jnp.asarray(probs).astype(f.dtype)
    if f.ndim != 2 or w.shape != f.shape:
        raise ValueError(f"with probs, forecasts and probs must both have shape (T, k), got {tuple(f.shape)} and {tuple(w.shape)}")
    return f, w


def eps_calibration(
    forecasts,
    y,
    *,
    n_bins: int | None = None,
    n_buckets: int | None = None,
    order: float = 1,
    form: str = "mean",
    probs=None,
) -> Float[Array, ""]:
    r"""(ε, ℓp)-calibration of binary forecasts (normalised), realised or in expectation.

    Args:
        forecasts: realised forecasts ``(T,)``, or mixture supports ``(T, k)`` with ``probs``.
        y: 0/1 outcomes ``(T,)``.
        n_bins: grid size $m$ of grid forecasts on $\{0, 1/m, \dots, 1\}$ (grid bucketing by
            integer index; with ``n_buckets``, the exact integer map to midpoint buckets).
        n_buckets: $K = 1/\varepsilon$ midpoint buckets of width $1/K$.
        order: exponent $p \ge 1$.
        form: ``"mean"`` or ``"norm"`` (see the module docstring).
        probs: mixture weights ``(T, k)``: the metric in expectation over the published mixtures.

    Returns:
        A float scalar.

    Example:
        >>> float(eps_calibration(jnp.array([0.5, 0.5]), jnp.array([1, 0]), n_bins=2))
        0.0
    """
    if n_bins is None and n_buckets is None:
        raise ValueError("pass n_bins (grid bucketing), n_buckets (midpoint bucketing), or both")
    m = None if n_bins is None else check_positive_int(n_bins, "n_bins")
    f, w = _support_probs(forecasts, probs)
    yv = check_binary_labels(y, "y")
    if yv.shape != f.shape[:1]:
        raise ValueError(f"y must have shape ({f.shape[0]},), got {tuple(yv.shape)}")
    fdt = f.dtype
    T = f.shape[0]
    yy = jnp.broadcast_to(yv[:, None].astype(fdt), f.shape)
    if m is not None:
        if not isinstance(f, jax.core.Tracer) and bool(jnp.any(off_grid(f, m))):
            raise ValueError(f"forecasts are not on the grid {{0, 1/{m}, ..., 1}}; pass n_buckets alone to bucket them by value")
        j = grid_index(f, m)
        if n_buckets is None:
            idx, K = j, m + 1
            values = jnp.arange(m + 1).astype(fdt) / m
        else:
            K = check_positive_int(n_buckets, "n_buckets")
            idx = grid_to_midpoint(j, m, K)
            values = (jnp.arange(K).astype(fdt) + 0.5) / K
    else:
        K = check_positive_int(n_buckets, "n_buckets")
        idx = jnp.clip(jnp.floor(f * K), 0, K - 1).astype(jnp.int32)  # forecasts off any grid
        values = (jnp.arange(K).astype(fdt) + 0.5) / K
    counts = jnp.zeros((K,), fdt).at[idx.ravel()].add(w.ravel())
    ones = jnp.zeros((K,), fdt).at[idx.ravel()].add((w * yy).ravel())
    return calibration_from_buckets(counts, ones, values, T, order=order, form=form)


def average_regret(forecasts, q, y, *, scoring: AbstractScoringRule = Brier(), probs=None) -> Float[Array, ""]:
    r"""$\frac1T\sum_t [s(p_t, y_t) - s(q_t, y_t)]$ against the model's forecasts $q_t$ (paper 001 §1.2).

    With ``probs`` the forecaster's score is the expectation under each round's mixture.
    Not divided by $L$. Negative when the forecaster beats the model.

    Example:
        >>> float(average_regret(jnp.array([0.5]), jnp.array([1.0]), jnp.array([1])))
        0.25
    """
    f, w = _support_probs(forecasts, probs)
    qv = check_binary_probs(q, "q")
    yv = check_binary_labels(y, "y")
    if qv.shape != f.shape[:1] or yv.shape != f.shape[:1]:
        raise ValueError(f"q and y must have shape ({f.shape[0]},), got {tuple(qv.shape)} and {tuple(yv.shape)}")
    ours = jnp.sum(w * scoring(f, yv[:, None]).astype(f.dtype), axis=1)
    return jnp.mean(ours - scoring(qv.astype(f.dtype), yv).astype(f.dtype))
