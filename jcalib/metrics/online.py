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

from ..core.keys import MAX_ROUNDS
from .._dtypes import float_dtype
from .._grid import grid_index, off_grid
from .._validation import (
    BINS,
    BinaryLabels,
    BinaryProbs,
    Choice,
    Custom,
    Optional,
    Real,
    RealArray,
    check_static_int,
    declare,
    in_graph,
    is_concrete,
    offending,
)
from ..scoring import AbstractScoringRule, Brier

__all__ = [
    "average_regret",
    "calibration_from_buckets",
    "eps_calibration",
]

_FORMS = ("mean", "norm")
_ORDER = Real(1, static=True)  # an Lp exponent >= 1 (static: it picks the formula)


def _ones_within_counts(ones, name, bound):
    """Bucket sums of outcomes: ``0 <= ones[b] <= counts[b]`` (in NumPy, or in the graph)."""
    o = RealArray(shape_of="counts").check(ones, name, bound)
    n = bound["counts"]
    if is_concrete(o) and is_concrete(n):
        ov, nv = np.asarray(o), np.asarray(n)
        if np.any(ov < 0) or np.any(ov > nv):
            raise ValueError(f"need 0 <= {name}[b] <= counts[b] for every bucket ({offending(ov, (ov < 0) | (ov > nv))})")
        return o
    return in_graph(o, ~jnp.all((o >= 0) & (o <= n)), f"need 0 <= {name}[b] <= counts[b] for every bucket")


def _rounds(T, name, bound):
    """The number of rounds: a positive int, or a traced value (a sweep's round count)."""
    if isinstance(T, jax.core.Tracer):
        return T
    return check_static_int(T, name, 1, MAX_ROUNDS, what="rounds within play's horizon")


def grid_to_midpoint(j, n_bins: int, n_buckets: int) -> Int[Array, "..."]:
    r"""Midpoint bucket $\lfloor jK/m \rfloor$ (clipped to $K - 1$) of grid point $j/m$
    ($m$ = ``n_bins``), in integers (used by the bucket recorders)."""
    j = jnp.asarray(j, jnp.int32)
    return jnp.minimum((j * n_buckets) // n_bins, n_buckets - 1).astype(jnp.int32)


@declare(counts=RealArray(lo=0), ones=Custom(_ones_within_counts, "0 <= ones <= counts, the shape of counts"),
         values=BinaryProbs(length_of="counts"), T=Custom(_rounds, "a positive int (or traced)"), order=_ORDER,
         form=Choice(*_FORMS))
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
    p = order
    fdt = float_dtype()
    n, o, v = counts.astype(fdt), ones.astype(fdt), values.astype(fdt)
    T = jnp.asarray(float(T) if isinstance(T, int) else T).astype(fdt)  # a Python int may exceed int32
    bias = (o - n * v) / T  # (n_b/T)(rho_b - v_b)
    if form == "norm":
        return jnp.sum(jnp.abs(bias) ** p) ** (1.0 / p)
    gap = jnp.abs(o - n * v) / jnp.where(n > 0, n, 1.0)  # |rho_b - v_b|
    return jnp.sum((n / T) * gap**p) ** (1.0 / p)


def _support_probs(forecasts, probs):
    """Checked forecasts as ``(T, k)`` support points with their probabilities."""
    if probs is None:
        return forecasts[:, None], jnp.ones(forecasts.shape + (1,), forecasts.dtype)
    return forecasts, probs.astype(forecasts.dtype)


def _support_weights(probs, name, bound):
    """Mixed strategies ``(T, k)`` over the support points in ``forecasts``: the shape of a 2-D
    ``forecasts`` (which must then be 2-D), entries in [0, 1]."""
    f = bound["forecasts"]
    if probs is None:
        if f.ndim != 1:
            raise ValueError(f"forecasts must be 1-D (T,) without probs, got shape {tuple(f.shape)}")
        return None
    if f.ndim != 2:
        raise ValueError(f"with {name}, forecasts must have shape (T, k), got {tuple(f.shape)}")
    return RealArray(ndim=2, lo=0, hi=1, shape_of="forecasts").check(probs, name, bound)


# forecasts (T,) or support points (T, k) with their probabilities; outcomes of length T
_STREAM = dict(forecasts=BinaryProbs(ndim=(1, 2)), probs=Custom(_support_weights, "mixed strategies (T, k) or None"),
               y=BinaryLabels(length_of="forecasts"))


@declare(**_STREAM, n_bins=Optional(BINS), n_buckets=Optional(BINS), order=_ORDER, form=Choice(*_FORMS))
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
    m = n_bins
    f, w = _support_probs(forecasts, probs)
    yv = y
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
            K = n_buckets
            idx = grid_to_midpoint(j, m, K)
            values = (jnp.arange(K).astype(fdt) + 0.5) / K
    else:
        K = n_buckets
        idx = jnp.clip(jnp.floor(f * K), 0, K - 1).astype(jnp.int32)  # forecasts off any grid
        values = (jnp.arange(K).astype(fdt) + 0.5) / K
    counts = jnp.zeros((K,), fdt).at[idx.ravel()].add(w.ravel())
    ones = jnp.zeros((K,), fdt).at[idx.ravel()].add((w * yy).ravel())
    return calibration_from_buckets(counts, ones, values, T, order=order, form=form)


def _scoring_rule(rule, name, bound):
    if not isinstance(rule, AbstractScoringRule):
        raise TypeError(f"{name} must be a jcalib.scoring.AbstractScoringRule (e.g. Brier()), got {type(rule).__name__}")
    return rule


@declare(**_STREAM, q=BinaryProbs(length_of="forecasts"), scoring=Custom(_scoring_rule, "a binary scoring rule"))
def average_regret(forecasts, q, y, *, scoring: AbstractScoringRule = Brier(), probs=None) -> Float[Array, ""]:
    r"""$\frac1T\sum_t [s(p_t, y_t) - s(q_t, y_t)]$ against the model's forecasts $q_t$ (Okoroafor et al. 2024, §1.2).

    With ``probs`` the forecaster's score is the expectation under each round's mixture.
    Not divided by $L$. Negative when the forecaster beats the model.

    Example:
        >>> float(average_regret(jnp.array([0.5]), jnp.array([1.0]), jnp.array([1])))
        0.25
    """
    f, w = _support_probs(forecasts, probs)
    qv, yv = q, y
    ours = jnp.sum(w * scoring(f, yv[:, None]).astype(f.dtype), axis=1)
    return jnp.mean(ours - scoring(qv.astype(f.dtype), yv).astype(f.dtype))
