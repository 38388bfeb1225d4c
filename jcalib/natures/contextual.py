r"""Natures that reveal a model's forecast $q_t$ as the context, then draw $y_t$ from the truth.

The setting of online recalibration (Okoroafor et al. 2024; Marx et al. 2024, §5.2): before each
round a model (the "oracle" or "expert") announces $q_t \in [0, 1]$; the recalibrating
forecaster sees it as the context ``x``; then $y_t \sim \mathrm{Bernoulli}(p^*_t)$ with a true
probability $p^*_t$ the model gets wrong in a known way. The latent $p^*_t$ lives in the state:
drawn at ``init`` for the first round and by ``update`` (with the round's update key) for the
next, so ``context`` and ``outcome`` of one round see the same $p^*_t$.

Every model here is miscalibrated on purpose, with a known recalibration map, so a
recalibrator's result can be checked against the truth.
"""

from __future__ import annotations

import abc
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray

from .._dtypes import float_dtype
from .._validation import as_float_array, check_hyper, is_concrete
from ..core.types import AbstractNature, Forecast
from .oblivious import _bernoulli, _check_positive, _check_scalar_prob

__all__ = ["DistortedModel", "DriftingModel", "LatentState", "TwoLevelModel"]


class LatentState(NamedTuple):
    """A model nature's state.

    Attributes:
        t: round index (int32).
        latent: this round's latent draw (a uniform in [0, 1) from which the nature builds
            $p^*_t$ and $q_t$).
    """

    t: Int[Array, ""]
    latent: Float[Array, ""]


class _AbstractLatentModel(AbstractNature):
    """Draws one uniform latent per round; subclasses map (t, latent) to (q_t, p*_t)."""

    outcome_space = "binary"

    def init(self, key: PRNGKeyArray) -> LatentState:
        return LatentState(jnp.zeros((), jnp.int32), jax.random.uniform(key, (), float_dtype()))

    def update(self, state: LatentState, x, forecast: Forecast, y, key: PRNGKeyArray) -> LatentState:
        return LatentState(state.t + 1, jax.random.uniform(key, (), float_dtype()))

    @abc.abstractmethod
    def truth(self, state: LatentState) -> Float[Array, ""]:
        """$p^*_t$, the probability the outcome is drawn with."""

    @abc.abstractmethod
    def model(self, state: LatentState) -> Float[Array, ""]:
        """$q_t$, the model's forecast (the context)."""

    def context(self, state: LatentState, key: PRNGKeyArray) -> Float[Array, ""]:
        return self.model(state)

    def outcome(self, state: LatentState, x, public, key: PRNGKeyArray) -> Int[Array, ""]:
        return _bernoulli(key, self.truth(state))


class TwoLevelModel(_AbstractLatentModel):
    r"""A model that only ever says ``says_low`` or ``says_high``, with other true rates.

    Each round the model is in its "high" state with probability ``p_high``; it then says
    $q_t$ = ``says_high`` and $y_t \sim \mathrm{Bernoulli}$(``truth_high``), else
    ``says_low`` and ``truth_low``. The defaults are the overconfident model "says 0.2 or 0.8,
    truth 0.35 / 0.65": the calibrated recalibration maps 0.2 ↦ 0.35 and 0.8 ↦ 0.65.

    Attributes:
        says_low, says_high: the two forecasts, in [0, 1].
        truth_low, truth_high: the true rates behind them, in [0, 1].
        p_high: probability of the high state, in [0, 1].
    """

    says_low: float = 0.2
    says_high: float = 0.8
    truth_low: float = 0.35
    truth_high: float = 0.65
    p_high: float = 0.5

    def __check_init__(self):
        for name in ("says_low", "says_high", "truth_low", "truth_high", "p_high"):
            _check_scalar_prob(getattr(self, name), name)

    def _high(self, state: LatentState):
        return state.latent < jnp.asarray(self.p_high, state.latent.dtype)

    def model(self, state: LatentState) -> Float[Array, ""]:
        fdt = state.latent.dtype
        return jnp.where(self._high(state), jnp.asarray(self.says_high, fdt), jnp.asarray(self.says_low, fdt))

    def truth(self, state: LatentState) -> Float[Array, ""]:
        fdt = state.latent.dtype
        return jnp.where(self._high(state), jnp.asarray(self.truth_high, fdt), jnp.asarray(self.truth_low, fdt))


def _logit(p):
    return jnp.log(p) - jnp.log1p(-p)


class DistortedModel(_AbstractLatentModel):
    r"""A latent stream $p^*_t \sim \mathrm{Uniform}[\text{low}, \text{high}]$ seen through a
    logit-affine distortion:

    $$q_t = g(p^*_t) = \sigma\big(\text{slope}\cdot\mathrm{logit}(p^*_t) + \text{shift}\big),\qquad
    y_t \sim \mathrm{Bernoulli}(p^*_t).$$

    ``slope > 1`` is an overconfident model (forecasts pushed towards 0 and 1), ``slope < 1``
    an underconfident one, ``shift`` a bias; ``slope = 1, shift = 0`` is calibrated. The
    calibrated recalibration map is $g^{-1}$.

    Attributes:
        slope: positive.
        shift: real.
        low, high: range of $p^*_t$, inside [0, 1] with low < high.
    """

    slope: float = 2.0
    shift: float = 0.0
    low: float = 0.05
    high: float = 0.95

    def __check_init__(self):
        _check_positive(self.slope, "slope")
        _check_scalar_prob(self.low, "low")
        _check_scalar_prob(self.high, "high")
        check_hyper(self.shift, "shift")
        lo, hi = as_float_array(self.low, "low"), as_float_array(self.high, "high")
        if is_concrete(lo) and is_concrete(hi) and not np.asarray(lo) < np.asarray(hi):
            raise ValueError(f"need low < high, got low={self.low!r}, high={self.high!r}")

    def truth(self, state: LatentState) -> Float[Array, ""]:
        fdt = state.latent.dtype
        lo, hi = jnp.asarray(self.low, fdt), jnp.asarray(self.high, fdt)
        return lo + (hi - lo) * state.latent

    def distortion(self, truth: Float[Array, "..."]) -> Float[Array, "..."]:
        """$g(p^*)$: the model's forecast when the true probability is ``truth``."""
        fdt = jnp.result_type(truth)
        truth = jnp.clip(truth, jnp.finfo(fdt).tiny, 1 - jnp.finfo(fdt).eps)
        return jax.nn.sigmoid(jnp.asarray(self.slope, fdt) * _logit(truth) + jnp.asarray(self.shift, fdt))

    def model(self, state: LatentState) -> Float[Array, ""]:
        return self.distortion(self.truth(state))


class DriftingModel(_AbstractLatentModel):
    r"""A model whose bias drifts: $p^*_t \sim \mathrm{Uniform}[\text{low}, \text{high}]$ and

    $$q_t = \sigma\big(\mathrm{logit}(p^*_t) + b_t\big),\qquad
    b_t = \text{start} + (\text{end} - \text{start})\min(t/\text{horizon}, 1),$$

    so the recalibration map a forecaster must learn changes over time (a model that grows
    more optimistic as the data drift away from its training set, for ``end > start``).

    Attributes:
        start, end: logit-scale bias at $t = 0$ and from $t$ = horizon on.
        horizon: rounds the drift takes (positive).
        low, high: range of $p^*_t$.
    """

    start: float = -1.0
    end: float = 1.0
    horizon: float = 1000.0
    low: float = 0.05
    high: float = 0.95

    def __check_init__(self):
        _check_positive(self.horizon, "horizon")
        _check_scalar_prob(self.low, "low")
        _check_scalar_prob(self.high, "high")
        for name in ("start", "end"):
            check_hyper(getattr(self, name), name)

    def bias(self, t: Int[Array, ""]) -> Float[Array, ""]:
        """$b_t$."""
        fdt = float_dtype()
        frac = jnp.minimum(jnp.asarray(t, fdt) / jnp.asarray(self.horizon, fdt), 1.0)
        start = jnp.asarray(self.start, fdt)
        return start + (jnp.asarray(self.end, fdt) - start) * frac

    def truth(self, state: LatentState) -> Float[Array, ""]:
        fdt = state.latent.dtype
        lo, hi = jnp.asarray(self.low, fdt), jnp.asarray(self.high, fdt)
        return lo + (hi - lo) * state.latent

    def model(self, state: LatentState) -> Float[Array, ""]:
        p = self.truth(state)
        return jax.nn.sigmoid(_logit(p) + self.bias(state.t).astype(p.dtype))
