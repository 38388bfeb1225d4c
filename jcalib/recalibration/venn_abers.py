r"""Venn–Abers predictors: inductive (IVAP) and cross (CVAP), binary and multi-class.

**Inductive Venn–Abers** (Vovk, Petej 2014). Given calibration scores
$s_1, \dots, s_n$ with labels $y_i \in \{0, 1\}$ and a test score $s$, fit isotonic regression
twice, once with the test point labelled 0 and once labelled 1:

$$p_0(s) = g_0(s),\quad g_0 = \mathrm{IR}\big(\{(s_i, y_i)\}_{i=1}^n \cup \{(s, 0)\}\big),\qquad
p_1(s) = g_1(s),\quad g_1 = \mathrm{IR}\big(\{(s_i, y_i)\}_{i=1}^n \cup \{(s, 1)\}\big).$$

The pair $(p_0, p_1)$, $p_0 \le p_1$, is a multiprobability prediction: one of them is
perfectly calibrated in the sense of Venn predictors, and $p_1 - p_0$
shrinks as the calibration set grows. The merged probability that minimises the worst-case
log loss over the pair is

$$p = \frac{p_1}{1 - p_0 + p_1}$$

(Vovk, Petej 2014; the Brier-loss minimax merge is $p = p_1 + p_0^2/2 - p_1^2/2$, Vovk, Petej,
Fedorova 2015, §4).

**Computation** (Vovk, Petej, Fedorova 2015, §2, Algorithms 1–4 precompute the same tables by
convex hulls). With the distinct calibration scores $c_1 < \dots < c_k$, $p_0(s)$ and
$p_1(s)$ depend only on where $s$ falls among them, so the fit precomputes both for each of
the $k + 1$ insertion positions: PAV (pooling every adjacent violating pair in rounds, which
batches well) over the pooled
calibration points with the test point inserted, vmapped over positions and chunked
($O(n^2)$ time, $O(\mathrm{chunk}\cdot n)$ memory). A test score equal to some $c_j$ pools with
it; its $p_1$ is then the value of the position just below $c_j$ and its $p_0$ that of the
position just above (a label-1 point just below a block, or a label-0 point just above it,
joins that block), which is how the ``venn-abers`` package looks them up. The calibration
points may carry weights (the test point weighs 1); a weight 0 drops a point, so the folds
of cross Venn–Abers are weight masks over one array and one ``vmap``.

**Multi-class.** With $C = 2$ the positive column is calibrated; with $C > 2$ each class is
calibrated one-vs-rest ($\mathbb 1[y = \ell]$ against column $\ell$, one ``vmap`` over
classes), the merged probabilities renormalised per row — the ``venn-abers`` package's
pre-fitted one-vs-rest variant (its ``predict_proba_prefitted_va(..., va_tpe="one_vs_rest")``).
Pre-fitted means the recalibrator is fitted on a held-out set's predictions of a classifier
already trained, which is what ``fit`` takes.

**Cross Venn–Abers** (Vovk, Petej, Fedorova 2015, §4): split the training data into $K$
folds, train the classifier $K$ times on all folds but one, fit an IVAP on the held-out fold's
scores. For a test object, fold $k$ gives $(p_0^k, p_1^k)$ and the merged probability is

$$p = \frac{G(p_1)}{G(1 - p_0) + G(p_1)}\quad\text{(log loss)},\qquad
p = \frac1K\sum_k \Big(p_1^k + \tfrac12 (p_0^k)^2 - \tfrac12 (p_1^k)^2\Big)\quad\text{(Brier)},$$

$G$ the geometric mean over folds. :func:`cross_venn_abers` merges fitted IVAPs stacked over
folds (``jax.vmap`` of ``fit`` over the folds' weight masks).

References:
    V. Vovk, I. Petej (2014), *Venn–Abers predictors*, UAI.
    V. Vovk, I. Petej, V. Fedorova (2015), *Large-scale probabilistic predictors with and
    without guarantees of validity*, NeurIPS.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Float, Int

from .._isotonic import pav_by_rounds
from .._validation import Choice, Custom, check_fields, check_multiclass_inputs, check_simplex_probs, declare
from ._one_vs_rest import fit_one_vs_rest
from .base import AbstractFittedRecalibrator, AbstractRecalibrator

__all__ = ["FittedVennAbers", "VennAbers", "VennAbersInterval", "cross_venn_abers"]

_LOSSES = ("log", "brier")
_CHUNK = 128  # insertion positions vmapped at once in the fit


class VennAbersInterval(NamedTuple):
    """A Venn–Abers multiprobability prediction and its merged probabilities.

    Attributes:
        p0: the lower probability $p_0$ of the positive class (of each class, one-vs-rest):
            shape ``(n,)`` for $C = 2$, ``(n, C)`` for $C > 2$; a leading fold axis ``K`` for
            cross Venn–Abers.
        p1: the upper probability $p_1 \\ge p_0$, likewise.
        probs: the merged probabilities ``(n, C)`` (rows sum to 1).
    """

    p0: Array
    p1: Array
    probs: Array


def _merge(p0, p1, loss, axis=None):
    """Minimax merge of ``(p0, p1)``: over one pair (``axis=None``) or over folds on ``axis``."""
    if axis is None:
        if loss == "log":
            return p1 / (1 - p0 + p1)
        return p1 + p0**2 / 2 - p1**2 / 2
    if loss == "log":
        # geometric means over folds, in logs (a p1 of 0 gives log 0 = -inf and a mean of 0)
        g1 = jnp.exp(jnp.mean(jnp.log(p1), axis=axis))
        g0 = jnp.exp(jnp.mean(jnp.log(1 - p0), axis=axis))
        return g1 / (g0 + g1)
    return jnp.mean(p1 + p0**2 / 2 - p1**2 / 2, axis=axis)


def _tables(scores, targets, weights, loss="log"):
    """One binary IVAP: the distinct calibration scores (padded with +inf) and $p_0$, $p_1$ at
    each of the $k + 1$ insertion positions (padded by repeating the last)."""
    n = scores.shape[0]
    dt = scores.dtype
    order = jnp.argsort(scores)
    xs, ts, ws = scores[order], targets[order], weights[order]
    new = jnp.concatenate([jnp.ones((1,), bool), xs[1:] != xs[:-1]])
    gid = jnp.cumsum(new, dtype=jnp.int32) - 1
    gw = jax.ops.segment_sum(ws, gid, num_segments=n)
    gwy = jax.ops.segment_sum(ws * ts, gid, num_segments=n)
    gx = jax.ops.segment_max(xs, gid, num_segments=n)
    # keep the groups with positive weight, in order, at the front (weight 0 drops a point)
    keep = gw > 0
    count = jnp.sum(keep, dtype=jnp.int32)
    slot = jnp.where(keep, jnp.cumsum(keep, dtype=jnp.int32) - 1, n)
    c = jnp.full((n,), jnp.inf, dt).at[slot].set(gx, mode="drop")
    w = jnp.zeros((n + 1,), dt).at[slot].set(gw, mode="drop")  # one slot more: the inserted point
    y = jnp.zeros((n + 1,), dt).at[slot].set(jnp.where(keep, gwy / jnp.where(keep, gw, 1), 0), mode="drop")
    ks = jnp.arange(n + 1, dtype=jnp.int32)

    def at_position(j, label):
        src = jnp.clip(jnp.where(ks < j, ks, ks - 1), 0, n)
        ya = jnp.where(ks == j, label, y[src])
        wa = jnp.where(ks == j, jnp.asarray(1, dt), w[src])
        return pav_by_rounds(ya, wa)[j]

    def both(j):
        return at_position(j, jnp.asarray(0, dt)), at_position(j, jnp.asarray(1, dt))

    p0, p1 = lax.map(both, ks, batch_size=_CHUNK)
    last = ks > count  # positions beyond the last group repeat the last position's values
    p0 = jnp.where(last, p0[count], p0)
    p1 = jnp.where(last, p1[count], p1)
    return FittedVennAbers(c, p0, p1, count, loss)


def _lookup(fitted, s):
    """$(p_0, p_1)$ of test scores ``s`` from one binary IVAP's tables."""
    return fitted.p0[jnp.searchsorted(fitted.scores, s, side="right")], fitted.p1[
        jnp.searchsorted(fitted.scores, s, side="left")]


def _pairs(fitted, probs):
    """$(p_0, p_1)$ of the positive column (C = 2) or of each class (C > 2)."""
    if fitted.count.ndim == 0:
        return _lookup(fitted, probs[:, 1])
    return jax.vmap(_lookup, in_axes=(0, 1), out_axes=1)(fitted, probs)


def _as_probs(q):
    """Merged per-class probabilities as rows on the simplex."""
    if q.ndim == 1:
        return jnp.stack([1 - q, q], axis=1)
    total = jnp.sum(q, axis=1, keepdims=True)
    return jnp.where(total > 0, q / jnp.where(total > 0, total, 1), jnp.asarray(1 / q.shape[1], q.dtype))


def _check_columns(probs, fitted, fold_axis: bool):
    probs = check_simplex_probs(probs, "probs") if probs.ndim == 2 else probs
    if probs.shape[-2] == 0:
        raise ValueError(f"probs is empty; at least one prediction is needed, got shape {tuple(probs.shape)}")
    base = 1 if fold_axis else 0
    n_classes = 2 if fitted.count.ndim == base else fitted.count.shape[-1]
    if probs.shape[-1] != n_classes:
        raise ValueError(f"probs must have {n_classes} columns (the classes of the fit), got {probs.shape[-1]}")
    return probs


class FittedVennAbers(AbstractFittedRecalibrator):
    r"""A fitted inductive Venn–Abers predictor: ``fitted(probs)`` gives the merged
    probabilities ``(n, C)``, :meth:`interval` the pair $(p_0, p_1)$ with them.

    Attributes:
        scores: the distinct calibration scores ascending, shape ``(n,)``, padded with $+\infty$.
        p0: $p_0$ at each insertion position among them, shape ``(n + 1,)``.
        p1: $p_1$ at each insertion position, shape ``(n + 1,)``.
        count: the number of distinct scores in use (int32).
        loss: the merge, ``"log"`` or ``"brier"``.

    Leading class axis on every array field for one-vs-rest ($C > 2$).
    """

    scores: Float[Array, "... n"]
    p0: Float[Array, "... n1"]
    p1: Float[Array, "... n1"]
    count: Int[Array, "..."]
    loss: str = eqx.field(static=True, default="log")

    def interval(self, probs: Float[Array, "n C"]) -> VennAbersInterval:
        """The multiprobability prediction ``(p0, p1)`` and the merged probabilities of ``probs``
        ``(n, C)``."""
        probs = _check_columns(check_simplex_probs(probs), self, False)
        p0, p1 = _pairs(self, probs)
        return VennAbersInterval(p0, p1, _as_probs(_merge(p0, p1, self.loss)))

    def __call__(self, probs: Float[Array, "n C"]) -> Float[Array, "n C"]:
        return self.interval(probs).probs


class VennAbers(AbstractRecalibrator):
    r"""Inductive Venn–Abers calibration (module docstring): isotonic regression with the test
    point labelled 0 and 1 gives $(p_0, p_1)$, merged into one probability. Binary ($C = 2$)
    or one-vs-rest ($C > 2$); deterministic (no key). The fit keeps arrays of length $n$ (a
    leading class axis for $C > 2$), so it jits and vmaps (over folds' weight masks, for
    :func:`cross_venn_abers`).

    Args:
        loss: the merge of $(p_0, p_1)$: ``"log"`` ($p_1 / (1 - p_0 + p_1)$, the default) or
            ``"brier"``.

    Examples:
        >>> import jax.numpy as jnp
        >>> s = jnp.array([0.1, 0.3, 0.6, 0.9, 0.95, 0.2])
        >>> p = jnp.stack([1 - s, s], axis=1)
        >>> fitted = VennAbers().fit(p, jnp.array([0, 0, 1, 1, 0, 1]))
        >>> iv = fitted.interval(jnp.array([[0.5, 0.5]]))
        >>> [round(float(v), 4) for v in (iv.p0[0], iv.p1[0], iv.probs[0, 1])]
        [0.3333, 0.75, 0.5294]

    References:
        Vovk, Petej (2014); Vovk, Petej, Fedorova (2015), §2 and §4.
    """

    loss: str = eqx.field(static=True, default="log")

    def __check_init__(self):
        check_fields(self, loss=Choice(*_LOSSES))

    def fit(
        self, probs: Float[Array, "n C"], labels: Int[Array, " n"], *, sample_weight: Float[Array, " n"] | None = None
    ) -> FittedVennAbers:
        """Fit on held-out probabilities ``(n, C)`` (rows on the simplex) and integer labels in
        ``[0, C)``, with optional non-negative ``sample_weight`` ``(n,)`` (a weight 0 drops a
        point; may be traced)."""
        probs, labels, weights = check_multiclass_inputs(probs, labels, sample_weight)
        return _fit(probs, labels, weights, self.loss)


@functools.partial(jax.jit, static_argnames="loss")
def _fit(probs, labels, weights, loss):
    return fit_one_vs_rest(functools.partial(_tables, loss=loss), probs, labels, weights)


def _fold_probs(value, name, bound):
    if not hasattr(value, "ndim"):
        value = jnp.asarray(value)
    if value.ndim == 2:
        return check_simplex_probs(value, name)
    if value.ndim != 3:
        raise ValueError(f"{name} must be (n, C) or (K, n, C) (per-fold predictions), got shape {tuple(value.shape)}")
    flat = check_simplex_probs(jnp.reshape(value, (-1, value.shape[-1])), name)
    return jnp.reshape(flat, value.shape)


def _stacked(value, name, bound):
    if not isinstance(value, FittedVennAbers):
        raise TypeError(f"{name} must be a FittedVennAbers stacked over folds, got {type(value).__name__}")
    if value.scores.ndim < 2:
        raise ValueError(f"{name} must carry a leading fold axis (jax.vmap of VennAbers().fit over folds), "
                         f"got scores of shape {tuple(value.scores.shape)}")
    return value


@declare(fitted=Custom(_stacked, "a FittedVennAbers stacked over folds"),
         probs=Custom(_fold_probs, "(n, C) or (K, n, C) predictions"),
         loss=Choice(None, *_LOSSES))
def cross_venn_abers(fitted: FittedVennAbers, probs: Float[Array, "K n C"], *, loss: str | None = None) -> VennAbersInterval:
    r"""Cross Venn–Abers (CVAP): merge $K$ inductive Venn–Abers predictors, one per fold
    (module docstring; Vovk, Petej, Fedorova 2015, §4).

    Args:
        fitted: a :class:`FittedVennAbers` stacked over $K$ folds, e.g.
            ``jax.vmap(lambda w: VennAbers().fit(p_oof, y, sample_weight=w))(fold_masks)``, where
            ``p_oof`` are out-of-fold predictions and ``fold_masks`` ``(K, n)`` marks each fold.
        probs: the test predictions of each fold's classifier ``(K, n, C)``, or ``(n, C)`` when
            one classifier serves every fold.
        loss: ``"log"`` (geometric means) or ``"brier"``; ``None``: the fit's ``loss``.

    Returns:
        :class:`VennAbersInterval` with ``p0``, ``p1`` per fold (leading axis $K$) and the merged
        ``probs`` ``(n, C)``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> s = jnp.array([0.1, 0.3, 0.6, 0.9, 0.95, 0.2, 0.4, 0.7])
        >>> p, y = jnp.stack([1 - s, s], axis=1), jnp.array([0, 0, 1, 1, 0, 1, 0, 1])
        >>> masks = jnp.array([[1.0] * 4 + [0.0] * 4, [0.0] * 4 + [1.0] * 4])
        >>> fits = jax.vmap(lambda w: VennAbers().fit(p, y, sample_weight=w))(masks)
        >>> cross_venn_abers(fits, jnp.array([[0.5, 0.5]])).p0.shape
        (2, 1)

    References:
        Vovk, Petej, Fedorova (2015), §4 (CVAP and its merges).
    """
    loss = fitted.loss if loss is None else loss
    k = fitted.scores.shape[0]
    probs = _check_columns(probs, fitted, True)
    if probs.ndim == 3 and probs.shape[0] != k:
        raise ValueError(f"probs must have one slice per fold ({k}), got {probs.shape[0]}")
    p0, p1 = jax.vmap(_pairs, in_axes=(0, 0 if probs.ndim == 3 else None))(fitted, probs)
    return VennAbersInterval(p0, p1, _as_probs(_merge(p0, p1, loss, axis=0)))
