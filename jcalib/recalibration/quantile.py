r"""Quantile recalibration of regression forecasts (Kuleshov, Fenner, Ermon 2018): an isotonic
map of the forecasts' CDF values, fitted on held-out PIT values.

Given forecasts with CDFs $F_s$ and outcomes $y_s$, $s = 1, \dots, n$, Kuleshov et al.
(Algorithm 1) fit an isotonic regression $R$ on the pairs $(u_s, \hat P(u_s))$, where
$u_s = F_s(y_s)$ are the PIT values and $\hat P(v) = \frac1n |\{r : u_r \le v\}|$ is their
empirical CDF; the recalibrated forecast is $R \circ F$, whose quantiles are then calibrated.

**No pool-adjacent-violators is needed.** The targets $\hat P(u_s)$ are non-decreasing in
$u_s$ by construction (and equal for tied $u_s$), so the isotonic least-squares fit equals
the targets at the data and — as scikit-learn's ``IsotonicRegression(out_of_bounds="clip")``
predicts — $R$ is their linear interpolation, constant beyond the smallest and largest
$u_s$. Writing $a$ and $b$ for the largest PIT $\le v$ and the smallest $\ge v$:
$$R(v) = \hat P(a) + \big(\hat P(b) - \hat P(a)\big)\frac{v - a}{b - a},\qquad \hat P(a) = \hat P(v),$$
with $R(v) = \hat P(\min_s u_s)$ below the data and $1$ above. Each of these is a count over
the PIT values, computed by masked reductions — no sort and no data-dependent shapes — so the
fit and the map jit and vmap. The online version, refit at every step on the PIT values before
it, is the forecaster `jcalib.forecasters.OnlineIsotonic` (and
`jcalib.forecasters.online_isotonic` for all steps at once).

This is not a classifier recalibrator: it maps CDF values of real-valued forecasts, not class
probabilities, so `QuantileRecalibration` is a plain ``eqx.Module`` rather than a
`jcalib.recalibration.base.AbstractRecalibrator`. The isotonic calibrator of classifier scores
is `jcalib.recalibration.IsotonicCalibration`.

References:
    V. Kuleshov, N. Fenner, S. Ermon (2018), *Accurate uncertainties for deep learning using
    calibrated regression*, ICML, Algorithm 1.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._validation import RealArray, declare

_UNIT = RealArray(ndim=None, lo=0, hi=1, nonempty=False)  # CDF or PIT values

__all__ = ["QuantileRecalibration", "FittedQuantileRecalibration"]


def check_unit_values(x, name):
    """``x`` as a float array of any shape with every value finite and in [0, 1]: a ``ValueError``
    on concrete values, an in-graph check on traced ones (shared with
    `jcalib.forecasters.OnlineIsotonic`)."""
    return _UNIT.check(x, name, {})


def recalibrated_cdf(pits, mask, v):
    """$R(v)$ for queries ``v`` (any shape) from the PIT values where ``mask``; the identity when
    none is (shared with `jcalib.forecasters.OnlineIsotonic`, which masks the past)."""
    dt = jnp.result_type(pits.dtype, v.dtype)
    pits, v = pits.astype(dt), v.astype(dt)
    n = jnp.sum(mask.astype(dt))
    u = pits.reshape((1,) * v.ndim + pits.shape)
    m = mask.reshape((1,) * v.ndim + mask.shape)
    vv = v[..., None]
    le = m & (u <= vv)
    ge = m & (u >= vv)
    inf = jnp.asarray(jnp.inf, dt)
    a = jnp.max(jnp.where(le, u, -inf), axis=-1)
    b = jnp.min(jnp.where(ge, u, inf), axis=-1)
    nn = jnp.maximum(n, 1)
    p_a = jnp.sum(le.astype(dt), axis=-1) / nn  # P̂(a) = P̂(v)
    p_b = jnp.sum((m & (u <= b[..., None])).astype(dt), axis=-1) / nn
    has_a, has_b = jnp.isfinite(a), jnp.isfinite(b)
    gap = jnp.where(has_a & has_b & (b > a), b - a, 1)
    inner = p_a + (p_b - p_a) * jnp.where(has_a & has_b & (b > a), (v - a) / gap, 0)
    # below the data: P̂(min) = P̂(b); above it: 1
    r = jnp.where(has_a, jnp.where(has_b, inner, 1), p_b)
    return jnp.where(n > 0, r, v)


def _check_pit_values(pit_values):
    u = check_unit_values(pit_values, "pit_values")
    if u.ndim != 1 or u.shape[0] < 1:
        raise ValueError(f"pit_values must be a non-empty 1-D array, got shape {tuple(u.shape)}")
    return u


class FittedQuantileRecalibration(eqx.Module):
    """Kuleshov et al.'s fitted map $R$: ``fitted(cdf_values)`` returns $R(v)$ for CDF values
    $v$ in [0, 1] of any shape (the recalibrated CDF values).

    Attributes:
        pit_values: the held-out PIT values $u_s$ it was fitted on, shape ``(n,)``.
    """

    pit_values: Float[Array, " n"]

    def __check_init__(self):
        _check_pit_values(self.pit_values)

    @declare(cdf_values=RealArray(ndim=None, lo=0, hi=1))
    def __call__(self, cdf_values: Float[Array, "..."]) -> Float[Array, "..."]:
        v = cdf_values
        return recalibrated_cdf(self.pit_values, jnp.ones(self.pit_values.shape, bool), v)


class QuantileRecalibration(eqx.Module):
    r"""Quantile recalibration of regression forecasts (Kuleshov, Fenner, Ermon 2018,
    Algorithm 1): ``fit(pit_values)`` on held-out PIT values $u_s = F_s(y_s)$ returns a
    `FittedQuantileRecalibration`, the isotonic map $R$ of the module docstring, which maps a
    forecast's CDF values $F(z)$ to recalibrated ones $R(F(z))$.

    No settings; deterministic (no key); fit and map jit and vmap. It is not a classifier
    recalibrator (it takes PIT values, not class probabilities and labels), so it does not
    subclass `jcalib.recalibration.base.AbstractRecalibrator` and has no
    `jcalib.recalibration.SklearnRecalibrator` adapter.

    Examples:
        >>> import jax.numpy as jnp
        >>> fitted = QuantileRecalibration().fit(jnp.array([0.1, 0.2, 0.9]))
        >>> tuple(round(v, 4) for v in fitted(jnp.array([0.15, 0.5])).tolist())
        (0.5, 0.8095)

    References:
        Kuleshov, Fenner, Ermon (2018), Algorithm 1.
    """

    @declare(pit_values=RealArray(lo=0, hi=1))
    def fit(self, pit_values: Float[Array, " n"]) -> FittedQuantileRecalibration:
        """Fit on held-out PIT values $u_s = F_s(y_s)$ in [0, 1], a non-empty ``(n,)`` array."""
        return FittedQuantileRecalibration(_check_pit_values(pit_values))
