r"""Histogram binning (Zadrozny, Elkan 2001): the calibrated probability of a score is the
frequency of positives among the calibration scores in its bin.

With bins $B_1, \dots, B_K$ of $[0, 1]$,
$$q(s) = \frac{\sum_{i : s_i \in B_k} w_i y_i}{\sum_{i : s_i \in B_k} w_i}\quad\text{for } s \in B_k,$$
and, for a bin without calibration data, the bin's midpoint (netcal's convention).

Bins (``strategy``):

* ``"uniform"`` (netcal's ``HistogramBinning(bins=K)``): $[k/K, (k+1)/K)$, the last one
  closed, decided exactly by :func:`jcalib.metrics.bin_index` at fit and at prediction alike.
  (netcal bins its fit with ``np.linspace`` edges, left-closed, and its predictions with
  ``np.digitize(..., right=True)``, right-closed, so the two can disagree on a score lying
  exactly on an edge; off the edges they coincide, which the tests check.)
* ``"quantile"`` (equal mass): the calibration scores are split by weighted rank as in
  :func:`jcalib.metrics.binned_ece` (a score $v$ goes to bin $\lfloor K\,W(<v)/W\rfloor$, ties
  together); bin $k$ covers $[e_k, e_{k+1})$ with $e_k$ its smallest calibration score
  ($e_0 = 0$, the last non-empty bin reaching 1). A bin left empty by ties gets no scores at
  prediction.

Binary and multi-class: with $C = 2$ the positive column is recalibrated; with $C > 2$ each
class is binned one-vs-rest and the rows are renormalised (netcal's default,
``independent_probabilities=False``).

References:
    B. Zadrozny, C. Elkan (2001), *Obtaining calibrated probability estimates from decision
    trees and naive Bayesian classifiers*, ICML, §3 (histogram binning).
    F. Küppers, J. Kronenberger, A. Shantia, A. Haselhoff (2020), *Multivariate confidence
    calibration for object detection*, CVPR Workshops (netcal's implementation).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .._validation import (
    BINS,
    Choice,
    SimplexProbs,
    as_int,
    check_fields,
    checked_at_the_boundary,
    declare,
    multiclass_inputs,
)
from ..metrics.binary import bin_index, quantile_bin_index
from ._one_vs_rest import apply_one_vs_rest, check_one_vs_rest_probs, fit_one_vs_rest
from .base import AbstractFittedRecalibrator, AbstractRecalibrator

__all__ = ["HistogramBinning", "FittedHistogramBinning"]

_STRATEGIES = ("uniform", "quantile")


class FittedHistogramBinning(AbstractFittedRecalibrator):
    r"""Fitted histogram binning: ``fitted(probs)`` gives each score its bin's value, one-vs-rest
    rows renormalised for $C > 2$.

    Attributes:
        values: per-bin calibrated probabilities, shape $(K,)$ (leading class axis for
            one-vs-rest).
        edges: for equal-mass bins, the lower edges $(K,)$ ($e_0 = 0$); ``None`` for uniform
            bins (decided by :func:`jcalib.metrics.bin_index`).
    """

    values: Float[Array, "... K"]
    edges: Float[Array, "... K"] | None

    @declare(probs=SimplexProbs())
    def __call__(self, probs: Float[Array, "n C"]) -> Float[Array, "n C"]:
        probs = check_one_vs_rest_probs(probs, self.values, 1)
        return apply_one_vs_rest(_histogram_apply1, self, probs)


def _bin_of(edges, scores, n_bins):
    if edges is None:
        return bin_index(scores, n_bins)
    return jnp.clip(jnp.searchsorted(edges, scores, side="right") - 1, 0, n_bins - 1).astype(jnp.int32)


def _histogram1(scores, targets, weights, n_bins, strategy):
    dt = scores.dtype
    if strategy == "uniform":
        idx = bin_index(scores, n_bins)
        edges = None
        k = jnp.arange(n_bins, dtype=dt)
        fill = (k + 0.5) / n_bins  # an empty bin predicts its midpoint (netcal)
    else:
        idx = quantile_bin_index(scores, n_bins, sample_weight=weights)
        # the smallest score with positive weight in each bin; an empty bin takes the next
        # bin's edge (+inf after the last non-empty bin), so no score reaches it
        low = jax.ops.segment_min(jnp.where(weights > 0, scores, jnp.inf), idx, num_segments=n_bins)
        edges = jax.lax.cummin(low.at[0].set(0), reverse=True)
        fill = jnp.full((n_bins,), 0.5, dt)  # never used: no score reaches an empty bin
    wb = jax.ops.segment_sum(weights, idx, num_segments=n_bins)
    ones = jax.ops.segment_sum(weights * targets, idx, num_segments=n_bins)
    values = jnp.where(wb > 0, ones / jnp.where(wb > 0, wb, 1), fill)
    return FittedHistogramBinning(values, edges)


@jax.jit(static_argnames=("n_bins", "strategy"))
@checked_at_the_boundary
def _histogram_fit(probs, labels, weights, n_bins, strategy):
    return fit_one_vs_rest(lambda s, t, w: _histogram1(s, t, w, n_bins, strategy), probs, labels, weights)


def _histogram_apply1(params, scores):
    n_bins = params.values.shape[-1]
    return params.values[_bin_of(params.edges, scores, n_bins)]


class HistogramBinning(AbstractRecalibrator):
    r"""Histogram binning (module docstring); deterministic (no key).

    Attributes:
        n_bins: number of bins $K$ (static; netcal's default is 10).
        strategy: ``"uniform"`` or ``"quantile"`` (equal mass) (static).

    Examples:
        >>> import jax.numpy as jnp
        >>> s = jnp.array([0.1, 0.3, 0.6, 0.9, 0.95, 0.2])
        >>> p = jnp.stack([1 - s, s], axis=1)
        >>> fitted = HistogramBinning(n_bins=2).fit(p, jnp.array([0, 0, 1, 1, 0, 1]))
        >>> [round(v, 4) for v in fitted.values.tolist()]
        [0.3333, 0.6667]
        >>> [round(v, 4) for v in fitted(p)[:2, 1].tolist()]
        [0.3333, 0.3333]

    References:
        Zadrozny, Elkan (2001), §3.
    """

    n_bins: int = eqx.field(static=True, default=10, converter=as_int)
    strategy: str = eqx.field(static=True, default="uniform")

    def __check_init__(self):
        check_fields(self, n_bins=BINS, strategy=Choice(*_STRATEGIES))

    @declare(**multiclass_inputs())
    def fit(
        self, probs: Float[Array, "n C"], labels: Int[Array, " n"], *, sample_weight: Float[Array, " n"] | None = None
    ) -> FittedHistogramBinning:
        """Fit on held-out probabilities ``(n, C)`` (rows on the simplex) and integer labels in
        ``[0, C)``, with optional non-negative ``sample_weight`` ``(n,)`` (may be traced:
        bootstrap); leading axis $C$ on the fitted arrays for $C > 2$."""
        weights = sample_weight
        return _histogram_fit(probs, labels, weights, self.n_bins, self.strategy)
