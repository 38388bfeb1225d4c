r"""Isotonic calibration of classifier scores: pool-adjacent-violators (PAV) in JAX, with
scikit-learn's ``IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1, increasing=True)``
semantics.

Fit. Sort the $n$ calibration scores; pool exactly tied scores into one point (weights summed,
labels averaged with the weights, as scikit-learn does before PAV); then PAV finds the
non-decreasing $g$ minimising $\sum_j W_j (\bar y_j - g_j)^2$ over the distinct scores $x_j$
(Ayer et al. 1955; Zadrozny, Elkan 2002). PAV here is one ``lax.scan`` over the sorted points
with a stack of blocks: each point is pushed as a block and merged with the block below while
the block means violate the order (an inner ``lax.while_loop``; $n - 1$ merges in all). Every
array has the fixed length $n$, so the fit jits and vmaps: bootstrap refits with weights (a
weight 0 drops a point) are one call.

Predict. The fitted function is the linear interpolation of the points $(x_j, g_j)$ over the
distinct scores with positive weight, constant beyond the smallest and largest (``np.interp``,
scikit-learn's ``out_of_bounds="clip"``). Values lie in $[0, 1]$ since they are weighted means
of 0/1 labels.

Binary and multi-class: with $C = 2$ the positive column is recalibrated; with $C > 2$ each
class is fitted one-vs-rest and the rows are renormalised (a row of zeros becomes uniform),
as ``CalibratedClassifierCV(method="isotonic")`` does.

References:
    M. Ayer, H. D. Brunk, G. M. Ewing, W. T. Reid, E. Silverman (1955), *An empirical
    distribution function for sampling with incomplete information*, Ann. Math. Statist. (PAV).
    B. Zadrozny, C. Elkan (2002), *Transforming classifier scores into accurate multiclass
    probability estimates*, KDD, §3 (isotonic calibration; one-vs-rest with normalisation).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Float, Int

from .._validation import check_key, check_multiclass_inputs, check_simplex_probs
from ._one_vs_rest import apply_one_vs_rest, fit_one_vs_rest
from .base import Recalibrator

__all__ = ["IsotonicCalibrationParams", "pav", "isotonic_calibration_fit", "isotonic_calibration_apply", "IsotonicCalibrator"]


class IsotonicCalibrationParams(NamedTuple):
    """A fitted isotonic map: ``x`` the distinct calibration scores (ascending) and ``y`` the
    fitted values, the first ``count`` entries in use and the rest repeating the last one (so
    the shapes are fixed at $n$). Leading class axis for one-vs-rest."""

    x: Float[Array, "... n"]
    y: Float[Array, "... n"]
    count: Int[Array, "..."]


def pav(y: Float[Array, " n"], w: Float[Array, " n"]) -> Float[Array, " n"]:
    r"""Weighted isotonic (non-decreasing) least-squares fit of ``y`` in the given order.

    $\hat g = \arg\min_{g_1 \le \dots \le g_n} \sum_i w_i (y_i - g_i)^2$ by pool-adjacent-
    violators: a ``lax.scan`` that pushes each point on a stack of blocks and merges the top two
    while the lower mean is not below the upper (``lax.while_loop``). Points of weight 0 are
    skipped and take the value of the block they fall in (or of the nearest block before
    them; the first block's value before it). Fixed shapes: jit- and vmap-able.

    Args:
        y: values in the order of the constraint, shape ``(n,)``.
        w: non-negative weights, shape ``(n,)``, with a positive sum.

    Returns:
        The fitted values, shape ``(n,)``.
    """
    n = y.shape[0]
    dt = y.dtype
    zeros = jnp.zeros((n,), dt)

    def push(carry, i):
        sw, swy, start, top = carry  # block weight sums, weighted sums, first index; top = count

        def merge(c):
            sw, swy, start, top = c
            sw = sw.at[top - 2].add(sw[top - 1])
            swy = swy.at[top - 2].add(swy[top - 1])
            return sw, swy, start, top - 1

        def violated(c):
            sw, swy, _, top = c
            # mean(top-2) >= mean(top-1), cross-multiplied (weights are positive)
            return (top >= 2) & (swy[top - 2] * sw[top - 1] >= swy[top - 1] * sw[top - 2])

        def add(c):
            sw, swy, start, top = c
            c = (sw.at[top].set(w[i]), swy.at[top].set(w[i] * y[i]), start.at[top].set(i), top + 1)
            return lax.while_loop(violated, merge, c)

        return lax.cond(w[i] > 0, add, lambda c: c, carry), None

    init = (zeros, zeros, jnp.full((n,), n, jnp.int32), jnp.asarray(0, jnp.int32))
    (sw, swy, start, top), _ = lax.scan(push, init, jnp.arange(n, dtype=jnp.int32))
    live = jnp.arange(n, dtype=jnp.int32) < top
    means = jnp.where(live, swy / jnp.where(live, sw, 1), 0)
    starts = jnp.where(live, start, n)
    block = jnp.clip(jnp.searchsorted(starts, jnp.arange(n, dtype=jnp.int32), side="right") - 1, 0, n - 1)
    return means[block]


def _isotonic1(scores, targets, weights):
    n = scores.shape[0]
    order = jnp.argsort(scores)
    xs, ys, ws = scores[order], targets[order], weights[order]
    # pool exact ties: group g = index of the first element of each run of equal scores
    first = jnp.searchsorted(xs, xs, side="left").astype(jnp.int32)
    gw = jax.ops.segment_sum(ws, first, num_segments=n)
    gwy = jax.ops.segment_sum(ws * ys, first, num_segments=n)
    gx = jnp.zeros((n,), xs.dtype).at[first].set(xs)
    gy = jnp.where(gw > 0, gwy / jnp.where(gw > 0, gw, 1), 0)
    fitted = pav(gy, gw)
    # keep the groups with positive weight, in order, at the front; pad with the last one
    keep = gw > 0
    count = jnp.sum(keep, dtype=jnp.int32)
    slot = jnp.where(keep, jnp.cumsum(keep, dtype=jnp.int32) - 1, n)
    x = jnp.zeros((n,), xs.dtype).at[slot].set(gx, mode="drop")
    y = jnp.zeros((n,), xs.dtype).at[slot].set(fitted, mode="drop")
    pad = jnp.arange(n, dtype=jnp.int32) >= count
    x = jnp.where(pad, x[count - 1], x)
    y = jnp.where(pad, y[count - 1], y)
    return IsotonicCalibrationParams(x, y, count)


@jax.jit
def _isotonic_fit(probs, labels, weights):
    return fit_one_vs_rest(_isotonic1, probs, labels, weights)


def _isotonic_apply1(params, scores):
    return jnp.interp(scores, params.x, params.y)  # constant beyond the ends: out_of_bounds="clip"


def isotonic_calibration_fit(
    key,
    probs: Float[Array, "n C"],
    labels: Int[Array, " n"],
    *,
    sample_weight: Float[Array, " n"] | None = None,
) -> IsotonicCalibrationParams:
    r"""Fit isotonic calibration (module docstring): PAV on the sorted, tie-pooled scores.

    Args:
        key: unused (deterministic fit); the common recalibrator signature.
        probs: held-out probabilities ``(n, C)``, rows on the simplex.
        labels: integer labels in ``[0, C)``, shape ``(n,)``.
        sample_weight: optional non-negative weights ``(n,)``; may be traced (bootstrap).

    Returns:
        `IsotonicCalibrationParams` with arrays of length $n$ (leading axis $C$ for $C > 2$).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> s = jnp.array([0.1, 0.3, 0.6, 0.9, 0.95, 0.2])
        >>> p = jnp.stack([1 - s, s], axis=1)
        >>> params = isotonic_calibration_fit(jax.random.key(0), p, jnp.array([0, 0, 1, 1, 0, 1]))
        >>> [round(v, 4) for v in isotonic_calibration_apply(params, p)[:, 1].tolist()]
        [0.0, 0.5, 0.6667, 0.6667, 0.6667, 0.5]

    References:
        Zadrozny, Elkan (2002), §3; Ayer et al. (1955).
    """
    check_key(key, optional=True)  # deterministic: None or a key
    del key
    probs, labels, weights = check_multiclass_inputs(probs, labels, sample_weight)
    return _isotonic_fit(probs, labels, weights)


def isotonic_calibration_apply(params: IsotonicCalibrationParams, probs: Float[Array, "n C"]) -> Float[Array, "n C"]:
    """Recalibrated probabilities: the interpolated isotonic map per class, one-vs-rest rows
    renormalised for $C > 2$."""
    return apply_one_vs_rest(_isotonic_apply1, params, check_simplex_probs(probs))


class IsotonicCalibrator(Recalibrator):
    """Isotonic calibration with ``fit(probs, labels)`` / ``predict_proba(probs)``; see
    `isotonic_calibration_fit`. (`IsotonicRecalibrator` is the regression PIT recalibrator.)

    Examples:
        >>> import jax.numpy as jnp
        >>> s = jnp.array([0.1, 0.3, 0.6, 0.9, 0.95, 0.2])
        >>> p = jnp.stack([1 - s, s], axis=1)
        >>> IsotonicCalibrator().fit(p, jnp.array([0, 0, 1, 1, 0, 1])).predict_proba(p).shape
        (6, 2)
    """

    def _fit(self, key, probs, labels):
        return isotonic_calibration_fit(key, probs, labels)

    def _apply(self, params, probs):
        return isotonic_calibration_apply(params, probs)
