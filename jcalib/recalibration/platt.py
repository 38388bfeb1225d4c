r"""Platt scaling: a logistic regression on the logit of the classifier's score.

For a binary score $s = \hat p(y = 1 \mid x)$ with logit $f = \log s - \log(1 - s)$ (both logs
clipped at $10^{-12}$), Platt scaling fits
$$q(s) = \sigma(a f + b), \qquad \sigma(z) = 1/(1 + e^{-z}),$$
by minimising the weighted mean cross-entropy against targets $t_i$:
$$(\hat a, \hat b) = \arg\min_{a, b} -\frac{1}{\sum_i w_i}\sum_i w_i\,[t_i \log q(s_i) +
  (1 - t_i)\log(1 - q(s_i))].$$
With ``smooth_targets=True`` (the default, Platt 1999, §2.2) the targets are
$t_+ = (N_+ + 1)/(N_+ + 2)$ for positives and $t_- = 1/(N_- + 2)$ for negatives, $N_\pm$ the
(weighted) numbers of positives and negatives, a prior that keeps the fit finite on separable
data; with ``False`` they are the labels themselves (plain maximum likelihood, as
Guo et al. 2017's binary Platt scaling).

Platt fits the decision value $f$ of an SVM; scikit-learn's ``CalibratedClassifierCV(method=
"sigmoid")`` fits the classifier's ``decision_function`` where it has one and its probability
otherwise. jcalib always starts from probabilities and fits on their logit, which is the
decision function of a logistic model; for a classifier whose ``decision_function`` is the logit
of its ``predict_proba`` (logistic regression) the two coincide (tested).

Binary and multi-class: with $C = 2$ the positive column is recalibrated; with $C > 2$ each
class is fitted one-vs-rest and the rows are renormalised (``_one_vs_rest``).

References:
    J. Platt (1999), *Probabilistic outputs for support vector machines and comparisons to
    regularized likelihood methods*, Advances in Large Margin Classifiers, §2 (Eq. 1 and the
    targets of §2.2).
    A. Niculescu-Mizil, R. Caruana (2005), *Predicting good probabilities with supervised
    learning*, ICML (Platt scaling and isotonic regression compared).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .._validation import STEPS, Bool, SimplexProbs, as_int, check_fields, declare, multiclass_inputs
from ._one_vs_rest import apply_one_vs_rest, check_one_vs_rest_probs, fit_logistic, fit_one_vs_rest, log_features
from .base import AbstractFittedRecalibrator, AbstractRecalibrator

__all__ = ["PlattScaling", "FittedPlattScaling"]


def _platt_targets(targets, weights):
    """Platt's smoothed targets: (N+ + 1)/(N+ + 2) for positives, 1/(N- + 2) for negatives."""
    n_pos = jnp.sum(weights * targets)
    n_neg = jnp.sum(weights * (1 - targets))
    return jnp.where(targets > 0, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))


class FittedPlattScaling(AbstractFittedRecalibrator):
    r"""Fitted Platt scaling: ``fitted(probs)`` is $\sigma(a\,\mathrm{logit}(s) + b)$ per class,
    one-vs-rest rows renormalised for $C > 2$.

    Attributes:
        slope: $a$, shape ``()`` for $C = 2$ or ``(C,)`` (one-vs-rest).
        intercept: $b$, the same shape.
    """

    slope: Float[Array, "..."]
    intercept: Float[Array, "..."]

    @declare(probs=SimplexProbs())
    def __call__(self, probs: Float[Array, "n C"]) -> Float[Array, "n C"]:
        probs = check_one_vs_rest_probs(probs, self.slope, 0)
        return apply_one_vs_rest(_platt_apply1, self, probs)


def _platt1(scores, targets, weights, smooth_targets, n_steps):
    f = log_features(scores)
    t = _platt_targets(targets, weights) if smooth_targets else targets

    def coefficients(theta):  # slope a on both log features (= on the logit), intercept b
        return jnp.stack([theta[0], theta[0]]), theta[1]

    init = jnp.array([1.0, 0.0], scores.dtype)  # the identity map
    theta = fit_logistic(f, t, weights, coefficients, n_steps, init)
    return FittedPlattScaling(theta[0], theta[1])


@jax.jit(static_argnames=("smooth_targets", "n_steps"))
def _platt_fit(probs, labels, weights, smooth_targets, n_steps):
    return fit_one_vs_rest(lambda s, t, w: _platt1(s, t, w, smooth_targets, n_steps), probs, labels, weights)


def _platt_apply1(params, scores):
    return jax.nn.sigmoid(params.slope * jnp.sum(log_features(scores), axis=1) + params.intercept)


class PlattScaling(AbstractRecalibrator):
    r"""Platt scaling $q = \sigma(a\,\mathrm{logit}(s) + b)$ (module docstring).

    A two-parameter convex problem, solved by at most ``n_steps`` steps of Newton's method
    with a backtracking line search (:func:`jcalib.core.optim.newton_minimise`; Platt's own
    fit is a Newton method too) from $a = 1, b = 0$ (the identity) in a fixed-length
    ``lax.scan``: deterministic (no key), jit- and vmap-able,
    so bootstrap refits (``jax.vmap`` over ``sample_weight``) are one call.

    Attributes:
        smooth_targets: Platt's targets $t_\pm$ (True, scikit-learn's choice) or the labels
            (static).
        n_steps: Newton iterations, at most (static; steps after convergence idle).

    Examples:
        >>> import jax.numpy as jnp
        >>> s = jnp.array([0.1, 0.3, 0.6, 0.9, 0.95, 0.2])
        >>> p = jnp.stack([1 - s, s], axis=1)
        >>> fitted = PlattScaling().fit(p, jnp.array([0, 0, 1, 1, 0, 1]))
        >>> fitted(p).shape
        (6, 2)

    References:
        Platt (1999), §2.
    """

    smooth_targets: bool = eqx.field(static=True, default=True)
    n_steps: int = eqx.field(static=True, default=50, converter=as_int)

    def __check_init__(self):
        check_fields(self, smooth_targets=Bool(), n_steps=STEPS)

    @declare(**multiclass_inputs())
    def fit(
        self, probs: Float[Array, "n C"], labels: Int[Array, " n"], *, sample_weight: Float[Array, " n"] | None = None
    ) -> FittedPlattScaling:
        """Fit on held-out probabilities ``(n, C)`` (rows on the simplex) and integer labels in
        ``[0, C)``, with optional non-negative ``sample_weight`` ``(n,)``; returns scalars for
        $C = 2$ or ``(C,)`` arrays (one-vs-rest)."""
        weights = sample_weight
        return _platt_fit(probs, labels, weights, self.smooth_targets, self.n_steps)
