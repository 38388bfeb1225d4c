r"""Natures for online recalibration (Okoroafor et al. 2024): an adaptive adversary that sees the published mixture.

The miscalibrated models of :mod:`jcalib.natures.contextual` (``TwoLevelModel``,
``DistortedModel``, ``DriftingModel``) are the oblivious natures of this setting, and
``Replay(y, x=q)`` replays a real model's forecasts (see
:func:`jcalib.datasets.logistic_stream`). :class:`RecalibrationAdversary` is the adaptive one:
it announces a model forecast $q_t$ and, **after seeing the published mixture** $w_t$ (never
the draw), picks the outcome that hurts calibration, regret against the model, or a blend.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

from .._grid import GRID_WHY, MAX_GRID, size_field
from .._validation import check_positive_int
from ..core.types import AbstractNature, Forecast, as_mixture
from ..scoring import AbstractScoringRule, Brier
from .oblivious import _check_scalar_prob

__all__ = ["RecalibrationAdversary", "RecalibrationAdversaryState"]


class RecalibrationAdversaryState(NamedTuple):
    """The adversary's state.

    Attributes:
        bias: ``(n + 1,)`` floats: $b_k = \\sum_s \\sum_j w_s(j)\\,\\mathbb 1[k(s_j) = k]\\,(s_j - y_s)$,
            the expected bias of the published mixtures per grid bucket (negated calibration
            vector).
        t: round index (int32).
    """

    bias: Float[Array, " n+1"]
    t: Int[Array, ""]


class RecalibrationAdversary(AbstractNature):
    r"""Announces $q_t \sim \mathrm{Uniform}[\text{low}, \text{high}]$, then picks the worst $y_t$ for the
    published mixture $w_t = \sum_j w_j \delta_{s_j}$:

    $$y_t = \arg\max_{y\in\{0,1\}}\ \alpha\,\Delta_{\mathrm{cal}}(y) + (1-\alpha)\,\Delta_{\mathrm{reg}}(y),$$

    $\Delta_{\mathrm{cal}}(y) = \sum_j w_j(|b_{k_j} + s_j - y| - |b_{k_j}|)$, the expected growth of
    the ℓ1 calibration error with support points bucketed to the nearest point of
    $\{0, 1/n, \dots, 1\}$, and $\Delta_{\mathrm{reg}}(y) = \sum_j w_j s(s_j, y) - s(q_t, y)$ the
    expected regret against the model (ties: $y = 0$). Both lie in $[-1, 1]$ for the Brier score.
    With ``n_bins`` equal to the forecaster's grid the buckets are its forecast values.

    Attributes:
        n_bins: bucket grid size $n$ (static).
        alpha: weight of calibration against regret, in $[0, 1]$ (traced).
        low, high: range of the model's forecasts.
        scoring: rule of the regret term (default Brier).

    Example:
        >>> import jax, jcalib
        >>> f = jcalib.forecasters.ApproachabilityRecalibrator.for_horizon(500)
        >>> traj = jcalib.core.play(f, RecalibrationAdversary(f.n_bins), 500, key=jax.random.key(0))
        >>> traj.y.dtype
        dtype('int32')
    """

    outcome_space = "binary"

    n_bins: int = size_field("n_bins", lambda n: 2 * n, what="its bucket counts", hi=MAX_GRID, why=GRID_WHY)
    alpha: float = 0.5
    low: float = 0.0
    high: float = 1.0
    scoring: AbstractScoringRule = eqx.field(default_factory=Brier)

    def __check_init__(self):
        check_positive_int(self.n_bins, "n_bins")
        for name in ("alpha", "low", "high"):
            _check_scalar_prob(getattr(self, name), name)
        if isinstance(self.low, (int, float)) and isinstance(self.high, (int, float)) and not self.low <= self.high:
            raise ValueError(f"need low <= high, got low={self.low!r}, high={self.high!r}")

    def init(self, key: PRNGKeyArray) -> RecalibrationAdversaryState:
        return RecalibrationAdversaryState(jnp.zeros((self.n_bins + 1,), jnp.result_type(float)), jnp.zeros((), jnp.int32))

    def context(self, state: RecalibrationAdversaryState, key: PRNGKeyArray) -> Float[Array, ""]:
        fdt = state.bias.dtype
        lo, hi = jnp.asarray(self.low).astype(fdt), jnp.asarray(self.high).astype(fdt)
        return lo + (hi - lo) * jax.random.uniform(key, (), fdt)

    def _buckets(self, public):
        mix = as_mixture(public)
        fdt = jnp.result_type(float)
        s = jnp.asarray(mix.support).astype(fdt)
        k = jnp.clip(jnp.round(s * self.n_bins), 0, self.n_bins).astype(jnp.int32)
        return s, mix.probs.astype(fdt), k

    def outcome(self, state: RecalibrationAdversaryState, x, public, key: PRNGKeyArray) -> Int[Array, ""]:
        fdt = state.bias.dtype
        s, w, k = self._buckets(public)
        s, w = s.astype(fdt), w.astype(fdt)
        b = state.bias[k]
        q = jnp.asarray(x).astype(fdt)
        a = jnp.asarray(self.alpha).astype(fdt)

        def score(y):
            yi = jnp.int32(y)
            d_cal = jnp.sum(w * (jnp.abs(b + s - y) - jnp.abs(b)))
            d_reg = jnp.sum(w * self.scoring(s, yi).astype(fdt)) - self.scoring(q, yi).astype(fdt)
            return a * d_cal + (1 - a) * d_reg

        return (score(1) > score(0)).astype(jnp.int32)

    def update(self, state: RecalibrationAdversaryState, x, forecast: Forecast, y, key: PRNGKeyArray) -> RecalibrationAdversaryState:
        s, w, k = self._buckets(forecast.public)
        fdt = state.bias.dtype
        yf = jnp.asarray(y).astype(fdt)
        return RecalibrationAdversaryState(state.bias.at[k].add(w.astype(fdt) * (s.astype(fdt) - yf)), state.t + 1)
