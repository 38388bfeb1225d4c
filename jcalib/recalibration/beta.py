r"""Beta calibration (Kull, Silva Filho, Flach 2017): a logistic regression on
$(\log s, -\log(1 - s))$.

For a binary score $s$, the beta calibration map is
$$q(s) = \sigma\big(a \log s - b \log(1 - s) + c\big), \qquad a, b \ge 0,$$
(Kull et al. 2017, Eq. 5 with $c = b\log(1-m) - a\log m$), the posterior of class-conditional
beta densities; it contains the identity ($a = b = 1, c = 0$), Platt scaling on the logit
($a = b$) and maps that are not sigmoids of the logit (inverse-S shapes, which a Naive Bayes or
an AdaBoost needs). Four forms, as in the authors' ``betacal`` package:

| ``parameters`` | free | map | betacal |
| --- | --- | --- | --- |
| ``"abm"`` (default) | $a, b, c$ | the full map, with $a, b \ge 0$ | ``BetaCalibration("abm")`` |
| ``"am"`` | $a = b$, $c$ | $\sigma(a\,\mathrm{logit}(s) + c)$: Platt on the logit | ``"am"`` |
| ``"ab"`` | $a, b$; $m = 1/2$ | $\sigma(a \log 2s - b \log 2(1 - s))$ | ``"ab"`` |
| ``"a"`` | $a = b$; $m = 1/2$ | $\sigma(a\,\mathrm{logit}(s))$: no intercept | ``"a"`` |

``"a"`` is betacal's one-parameter form (``_BetaACal``: a logistic regression on
$\mathrm{logit}(s)$ without intercept): $q(1 - s) = 1 - q(s)$, so $s = 1/2$ stays fixed, and
it is binary temperature scaling of the score's logit with temperature $1/a$.

Fitting minimises the weighted mean cross-entropy (maximum likelihood), convex in the
parameters, by Newton's method with a backtracking line search in a fixed-length ``lax.scan``
(:func:`jcalib.core.optim.newton_minimise`). The constraint $a, b \ge 0$ of ``"abm"`` is
handled as betacal handles it: the unconstrained fit is kept when both slopes are
non-negative; if $a < 0$ the model refitted with $a = 0$ is used, else if $b < 0$ the one with
$b = 0$. All three fits run every time (fixed shapes, so the fit jits and vmaps) and the
choice is a ``jnp.where``.
betacal's logistic regression has an L2 penalty of $1/(2C)$ with $C = 10^{11}$, negligible;
jcalib's is unpenalised. Scores are clipped to $[10^{-12}, 1 - 10^{-12}]$ before the logs
(betacal clips at the float's machine epsilon).

Binary and multi-class: with $C = 2$ the positive column is recalibrated; with $C > 2$ each
class is fitted one-vs-rest and the rows are renormalised (as Kull et al. suggest for
multi-class use).

References:
    M. Kull, T. Silva Filho, P. Flach (2017), *Beta calibration: a well-founded and easily
    implemented improvement on logistic calibration for binary classifiers*, AISTATS, §3
    (Eqs. 3-5, the three parametrisations and the fit by logistic regression).
"""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .._validation import STEPS, Choice, SimplexProbs, as_int, check_fields, declare, multiclass_inputs
from ._one_vs_rest import apply_one_vs_rest, check_one_vs_rest_probs, fit_logistic, fit_one_vs_rest, log_features
from .base import AbstractFittedRecalibrator, AbstractRecalibrator

__all__ = ["BetaCalibration", "FittedBetaCalibration"]

_FORMS = ("abm", "am", "ab", "a")
_LOG2 = math.log(2.0)


class FittedBetaCalibration(AbstractFittedRecalibrator):
    r"""Fitted beta calibration: ``fitted(probs)`` is $\sigma(a\log s - b\log(1-s) + c)$ per
    class, one-vs-rest rows renormalised for $C > 2$. The midpoint $m$ of Kull et al. solves
    $b\log(1-m) - a\log m = c$.

    Attributes:
        a: shape ``()`` for $C = 2$, or ``(C,)`` (one-vs-rest).
        b: the same shape.
        c: the same shape.
    """

    a: Float[Array, "..."]
    b: Float[Array, "..."]
    c: Float[Array, "..."]

    @declare(probs=SimplexProbs())
    def __call__(self, probs: Float[Array, "n C"]) -> Float[Array, "n C"]:
        probs = check_one_vs_rest_probs(probs, self.a, 0)
        return apply_one_vs_rest(_beta_apply1, self, probs)


# theta -> (slopes (a, b), intercept c) for each restricted model
_COEFFICIENTS = {
    "abm": lambda t: (t[:2], t[2]),
    "am": lambda t: (jnp.stack([t[0], t[0]]), t[2]),
    "ab": lambda t: (t[:2], (t[0] - t[1]) * _LOG2),  # a log 2s - b log 2(1-s)
    "a": lambda t: (jnp.stack([t[0], t[0]]), jnp.zeros_like(t[0])),  # a logit(s): a = b, m = 1/2, c = 0
    "a0": lambda t: (jnp.stack([jnp.zeros_like(t[1]), t[1]]), t[2]),  # betacal's refit with a = 0
    "b0": lambda t: (jnp.stack([t[0], jnp.zeros_like(t[0])]), t[2]),  # ... and with b = 0
}


def _beta1(scores, targets, weights, parameters, n_steps):
    x = log_features(scores)
    init = jnp.array([1.0, 1.0, 0.0], scores.dtype)  # the identity map

    def fit(form):
        theta = fit_logistic(x, targets, weights, _COEFFICIENTS[form], n_steps, init)
        slope, intercept = _COEFFICIENTS[form](theta)
        return FittedBetaCalibration(slope[0], slope[1], intercept)

    full = fit(parameters)
    if parameters != "abm":
        return full
    no_a, no_b = fit("a0"), fit("b0")
    pick = lambda use_a0, use_b0: jax.tree.map(  # noqa: E731
        lambda f, a0, b0: jnp.where(use_a0, a0, jnp.where(use_b0, b0, f)), full, no_a, no_b
    )
    return pick(full.a < 0, full.b < 0)


@jax.jit(static_argnames=("parameters", "n_steps"))
def _beta_fit(probs, labels, weights, parameters, n_steps):
    return fit_one_vs_rest(lambda s, t, w: _beta1(s, t, w, parameters, n_steps), probs, labels, weights)


def _beta_apply1(params, scores):
    x = log_features(scores)
    return jax.nn.sigmoid(params.a * x[:, 0] + params.b * x[:, 1] + params.c)


class BetaCalibration(AbstractRecalibrator):
    r"""Beta calibration (module docstring), fitted by maximum likelihood; deterministic (no key).

    Attributes:
        parameters: ``"abm"`` (three parameters, $a, b \ge 0$), ``"am"`` ($a = b$),
            ``"ab"`` ($m = 1/2$) or ``"a"`` ($a = b$ and $m = 1/2$: $\sigma(a\,\mathrm{logit}(s))$)
            (static).
        n_steps: Newton iterations per fit, at most (static; fixed scan length, idle after
            convergence).

    Examples:
        >>> import jax.numpy as jnp
        >>> s = jnp.array([0.1, 0.3, 0.6, 0.9, 0.95, 0.2])
        >>> p = jnp.stack([1 - s, s], axis=1)
        >>> fitted = BetaCalibration().fit(p, jnp.array([0, 0, 1, 1, 0, 1]))
        >>> fitted(p).shape
        (6, 2)
        >>> BetaCalibration("am").fit(p, jnp.array([0, 0, 1, 1, 0, 1]))(p).shape
        (6, 2)

    References:
        Kull, Silva Filho, Flach (2017), §3.
    """

    parameters: str = eqx.field(static=True, default="abm")
    n_steps: int = eqx.field(static=True, default=100, converter=as_int)

    def __check_init__(self):
        check_fields(self, parameters=Choice(*_FORMS), n_steps=STEPS)

    @declare(**multiclass_inputs())
    def fit(
        self, probs: Float[Array, "n C"], labels: Int[Array, " n"], *, sample_weight: Float[Array, " n"] | None = None
    ) -> FittedBetaCalibration:
        """Fit on held-out probabilities ``(n, C)`` (rows on the simplex) and integer labels in
        ``[0, C)``, with optional non-negative ``sample_weight`` ``(n,)`` (may be traced: vmap
        over bootstrap weights); returns scalars for $C = 2$ or ``(C,)`` arrays (one-vs-rest)."""
        weights = sample_weight
        return _beta_fit(probs, labels, weights, self.parameters, self.n_steps)
