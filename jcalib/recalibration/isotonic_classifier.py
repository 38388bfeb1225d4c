r"""Isotonic calibration of classifier scores: pool-adjacent-violators (PAV) in JAX, with
scikit-learn's ``IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1, increasing=True)``
semantics.

Fit. Sort the $n$ calibration scores; pool near-tied scores into one point (weights summed,
labels averaged with the weights), then PAV finds the non-decreasing $g$ minimising
$\sum_j W_j (\bar y_j - g_j)^2$ over the pooled points $x_j$ (Ayer et al. 1955; Zadrozny,
Elkan 2002). PAV here is one ``lax.scan`` over the sorted points with a stack of blocks: each
point is pushed as a block and merged with the block below while the block means violate the
order (an inner ``lax.while_loop``; $n - 1$ merges in all). Every array has the fixed length
$n$, so the fit jits and vmaps: bootstrap refits with weights (a weight 0 drops a point) are
one call.

Ties. The pooling rule is scikit-learn's (``IsotonicRegression``'s ``_make_unique``), so the
two agree in both precisions (tested): scanning the ascending scores of positive weight, a
score joins the current point unless it lies at least $\epsilon$ above the point's *first*
score, where it starts a new point; the point sits at its first score. $\epsilon$ is the
resolution of the input dtype, ``np.finfo(dtype).resolution``: $10^{-15}$ in float64,
$10^{-6}$ in float32. Scores closer than that are not distinguished, which matters for
over-confident models: Gaussian naive Bayes's one-vs-rest scores on digits pile up within
$10^{-15}$ of 0, where pooling only exact ties fits a step function on round-off and puts
held-out points at probability 0 on their true class. Because $\epsilon$ follows the dtype,
float32 scores are pooled more coarsely than the same scores in float64, and the two fits
differ as scikit-learn's do (on those digits scores, held-out NLL 0.502 in float32 against
0.456 in float64, both equal to scikit-learn's on the same input).

Predict. The fitted function is the linear interpolation of the points $(x_j, g_j)$ over the
pooled scores with positive weight, constant beyond the smallest and largest (``np.interp``,
scikit-learn's ``out_of_bounds="clip"``). Values lie in $[0, 1]$ since they are weighted means
of 0/1 labels.

Probabilities 0 and 1. A block whose calibration labels are all 0 (or all 1) is fitted to
exactly 0 (or 1), and a held-out score in its range is mapped there. jcalib returns these values
unchanged, as ``CalibratedClassifierCV`` does (it only snaps values in $(1, 1 + 10^{-5}]$
from its row renormalisation to 1; jcalib clips each column to $[0, 1]$ before
renormalising, which covers the same round-off). It does not move them away from 0 and 1: the
fit is the least-squares (and maximum-likelihood) isotonic estimate, any floor would be a prior
that the method does not have, and it would break the parity with scikit-learn. A held-out
point with probability 0 on its true class has an infinite log-loss; `jcalib.metrics.nll` and
`jcalib.metrics.log_loss` clip at ``eps``, by default the dtype's machine epsilon (a cost of
15.9 in float32 and 36.0 in float64), so pass the same ``eps`` to compare NLLs across
precisions. The parametric maps (Platt, beta, temperature scaling) stay inside $(0, 1)$ up to
round-off, where that is needed.

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

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, Float, Int

from .._validation import RealArray, SimplexProbs, Weights, checked_at_the_boundary, declare, multiclass_inputs
from ._one_vs_rest import apply_one_vs_rest, check_one_vs_rest_probs, fit_one_vs_rest
from .base import AbstractFittedRecalibrator, AbstractRecalibrator

__all__ = ["IsotonicCalibration", "FittedIsotonicCalibration", "pav"]


class FittedIsotonicCalibration(AbstractFittedRecalibrator):
    """A fitted isotonic map: ``fitted(probs)`` interpolates it per class (constant beyond the
    ends), one-vs-rest rows renormalised for $C > 2$.

    Attributes:
        x: the pooled calibration scores (ascending), shape ``(n,)``; the first ``count``
            entries are in use and the rest repeat the last one (so the shapes are fixed at $n$).
        y: the fitted values at ``x``, shape ``(n,)``.
        count: the number of pooled points in use (int32).

    Leading class axis on every field for one-vs-rest ($C > 2$).
    """

    x: Float[Array, "... n"]
    y: Float[Array, "... n"]
    count: Int[Array, "..."]

    @declare(probs=SimplexProbs())
    def __call__(self, probs: Float[Array, "n C"]) -> Float[Array, "n C"]:
        probs = check_one_vs_rest_probs(probs, self.count, 0)
        return apply_one_vs_rest(_isotonic_apply1, self, probs)


@declare(y=RealArray(), w=Weights(length_of="y", fill=True))
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
    w = w.astype(dt)
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


def _tie_groups(x: Float[Array, " n"], w: Float[Array, " n"]) -> Int[Array, " n"]:
    r"""Groups of near-tied sorted scores, by scikit-learn's rule: for each score, the index of
    the first score of its group.

    Scanning the ascending scores with positive weight, a score starts a new group when it is
    at least $\epsilon$ above the group's **first** score, $\epsilon$ = ``np.finfo(x.dtype)
    .resolution`` ($10^{-15}$ in float64, $10^{-6}$ in float32); otherwise it joins the group
    (scikit-learn's ``_make_unique``, which ``IsotonicRegression`` applies after dropping
    weight-0 points). A group thus spans less than $\epsilon$, and a chain of scores each
    less than $\epsilon$ above the previous one is cut every $\epsilon$. Weight-0 scores never
    start a group; they join the current one (before the first positive weight: group 0, whose
    weight is then 0 and which the fit drops). One ``lax.scan``: fixed shapes, jit- and
    vmap-able.

    Args:
        x: scores sorted ascending, shape ``(n,)``.
        w: their non-negative weights, shape ``(n,)``.

    Returns:
        ``(n,)`` int32: the index in ``x`` of the first score of each score's group.

    Examples:
        >>> import jax.numpy as jnp
        >>> with jax.enable_x64(True):
        ...     _tie_groups(jnp.array([0.0, 1e-17, 2e-17, 0.5, 0.9]), jnp.ones(5)).tolist()
        [0, 0, 0, 3, 4]
    """
    eps = jnp.asarray(np.finfo(x.dtype).resolution, x.dtype)

    def step(carry, point):
        first_x, first = carry
        xi, wi, i = point
        # -inf before the first positive weight: that score starts the first group
        start = (wi > 0) & ~(xi - first_x < eps)
        first_x, first = jnp.where(start, xi, first_x), jnp.where(start, i, first)
        return (first_x, first), first

    n = x.shape[0]
    init = (jnp.asarray(-jnp.inf, x.dtype), jnp.asarray(0, jnp.int32))
    _, groups = lax.scan(step, init, (x, w, jnp.arange(n, dtype=jnp.int32)))
    return groups


def _isotonic1(scores, targets, weights):
    n = scores.shape[0]
    order = jnp.argsort(scores)
    xs, ys, ws = scores[order], targets[order], weights[order]
    # pool near-ties as scikit-learn does (_tie_groups); a group sits at its first score
    first = _tie_groups(xs, ws)
    gw = jax.ops.segment_sum(ws, first, num_segments=n)
    gwy = jax.ops.segment_sum(ws * ys, first, num_segments=n)
    gx = jnp.zeros((n,), xs.dtype).at[first].set(xs[first])
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
    return FittedIsotonicCalibration(x, y, count)


@jax.jit
@checked_at_the_boundary
def _isotonic_fit(probs, labels, weights):
    return fit_one_vs_rest(_isotonic1, probs, labels, weights)


def _isotonic_apply1(params, scores):
    return jnp.interp(scores, params.x, params.y)  # constant beyond the ends: out_of_bounds="clip"


class IsotonicCalibration(AbstractRecalibrator):
    r"""Isotonic calibration (module docstring): PAV on the sorted scores, near-ties pooled by
    scikit-learn's rule (within the dtype's resolution of a pooled point's first score). No
    settings; deterministic (no key). The fit keeps arrays of length $n$ (leading axis $C$ for
    $C > 2$), so it jits and vmaps over bootstrap ``sample_weight``.

    Examples:
        >>> import jax.numpy as jnp
        >>> s = jnp.array([0.1, 0.3, 0.6, 0.9, 0.95, 0.2])
        >>> p = jnp.stack([1 - s, s], axis=1)
        >>> fitted = IsotonicCalibration().fit(p, jnp.array([0, 0, 1, 1, 0, 1]))
        >>> [round(v, 4) for v in fitted(p)[:, 1].tolist()]
        [0.0, 0.5, 0.6667, 0.6667, 0.6667, 0.5]

    References:
        Zadrozny, Elkan (2002), §3; Ayer et al. (1955).
    """

    @declare(**multiclass_inputs())
    def fit(
        self, probs: Float[Array, "n C"], labels: Int[Array, " n"], *, sample_weight: Float[Array, " n"] | None = None
    ) -> FittedIsotonicCalibration:
        """Fit on held-out probabilities ``(n, C)`` (rows on the simplex) and integer labels in
        ``[0, C)``, with optional non-negative ``sample_weight`` ``(n,)`` (may be traced)."""
        weights = sample_weight
        return _isotonic_fit(probs, labels, weights)
