r"""Spiegelhalter's z-test of calibration for binary forecasts (closed form)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import ndtr
from jaxtyping import Array, Float, Int

from .._validation import binary_inputs, declare
from ._result import CalibrationTestResult

__all__ = ["spiegelhalter_test"]


@declare(**binary_inputs())
def spiegelhalter_test(
    probs: Float[Array, " n"],
    labels: Int[Array, " n"],
    *,
    sample_weight: Float[Array, " n"] | None = None,
) -> CalibrationTestResult:
    r"""Spiegelhalter's (1986) z-test: is the Brier score what calibrated forecasts would give?

    **Null:** $y_i \sim \mathrm{Bernoulli}(p_i)$ independently. Under it the Brier score
    $\frac1W\sum_i w_i (y_i - p_i)^2$ has mean $\frac1W\sum_i w_i p_i(1 - p_i)$, and the
    standardised difference
    $$Z = \frac{\sum_i w_i (y_i - p_i)(1 - 2p_i)}{\sqrt{\sum_i w_i^2 (1 - 2p_i)^2\, p_i(1 - p_i)}}$$
    is asymptotically standard normal (the numerator is $W$ times the Brier score minus its
    null mean). Two-sided p-value $2\Phi(-|Z|)$. The test is blind to miscalibration that
    leaves the Brier score unchanged, e.g. forecasts all at $1/2$; when the denominator is 0
    (every forecast in $\{0, \tfrac12, 1\}$) $Z$ is reported as 0.

    Args:
        probs: forecasts in $[0, 1]$, shape ``(n,)``.
        labels: outcomes in $\{0, 1\}$, shape ``(n,)``.
        sample_weight: optional non-negative weights (integer weights act as multiplicities
            in the numerator; the variance uses $w_i^2$, as for independent weighted terms).

    Returns:
        :class:`CalibrationTestResult` with ``statistic`` $Z$ and the two-sided p-value.

    Examples:
        >>> import jax.numpy as jnp
        >>> r = spiegelhalter_test(jnp.array([0.9, 0.9, 0.9, 0.9]), jnp.array([0, 0, 0, 0]))
        >>> round(float(r.statistic), 2), bool(r.p_value < 0.001)
        (6.0, True)

    References:
        Spiegelhalter (1986), *Probabilistic prediction in patient management and clinical
        trials*, Statistics in Medicine 5(5), Eq. (7).
    """
    return _spiegelhalter(probs, labels, sample_weight)


@jax.jit
def _spiegelhalter(p, y, w):
    c = 1 - 2 * p
    num = jnp.sum(w * (y - p) * c)
    var = jnp.sum(w**2 * c**2 * p * (1 - p))
    z = jnp.where(var > 0, num / jnp.sqrt(jnp.where(var > 0, var, 1)), 0)
    return CalibrationTestResult(z, 2 * ndtr(-jnp.abs(z)))
