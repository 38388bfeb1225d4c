r"""Adaptive natures: adversaries that see the forecaster's public forecast before choosing $y_t$.

They see ``Forecast.public`` — the value of a deterministic forecaster, the mixed strategy
(:class:`~jcalib.core.Mixture`) of a randomised one — through
:func:`~jcalib.core.as_mixture`, so they treat both alike, and they never see a randomised
forecaster's draw before choosing. All are pure and vmappable.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

from .._grid import GRID_WHY, MAX_GRID, size_field
from .._padded import scale, table_bins
from .._validation import as_float_array, check_hyper, check_positive_int, is_concrete
from ..core.types import AbstractNature, Forecast, as_mixture
from .oblivious import _check_scalar_prob

__all__ = [
    "BiasState",
    "Contrarian",
    "ContrarianState",
    "MaxCalibrationError",
    "RandomMixture",
]


class ContrarianState(NamedTuple):
    """The contrarian has no state."""


class Contrarian(AbstractNature):
    r"""$y_t = 1$ iff the forecast's mean is below $1/2$.

    Against a deterministic forecaster every forecast then misses its outcome by at least
    $1/2$: a constant forecast of $1/2$ gets $y \equiv 0$ and ECE $= T/2$, and a calibrated
    forecaster is driven to alternate around $1/2$. Stateless and keyless.
    """

    outcome_space = "binary"

    def init(self, key: PRNGKeyArray) -> ContrarianState:
        return ContrarianState()

    def outcome(self, state, x, public, key: PRNGKeyArray) -> Int[Array, ""]:
        return (as_mixture(public).mean() < 0.5).astype(jnp.int32)


class BiasState(NamedTuple):
    """Running bias per grid bucket.

    Attributes:
        bias: ``(n_bins + 1,)`` floats, ``bias[k]`` $= \\sum_s \\mathbb 1[\\mathrm{round}(n
            p_s) = k]\\,(p_s - y_s)$ over the realised forecasts seen so far.
    """

    bias: Float[Array, " n+1"]


def _bucket(p, n_bins):
    # n_bins is traced in the padded variant (jcalib._padded): the same product, cast first
    k = scale(n_bins, p.dtype)
    return jnp.clip(jnp.round(p * k), 0, k).astype(jnp.int32)


def _max_error_outcome(state: BiasState, public, n_bins) -> Int[Array, ""]:
    g = _max_error_gains(state, public, n_bins)
    return (g[1] > g[0]).astype(jnp.int32)


def _max_error_gains(state: BiasState, public, n_bins) -> Float[Array, " 2"]:
    mix = as_mixture(public)
    fdt = state.bias.dtype
    s = jnp.asarray(mix.support, fdt)
    w = jnp.asarray(mix.probs, fdt)
    b = state.bias[_bucket(s, n_bins)]
    g0 = jnp.sum(w * (jnp.abs(b + s) - jnp.abs(b)))
    g1 = jnp.sum(w * (jnp.abs(b + s - 1.0) - jnp.abs(b)))
    return jnp.stack([g0, g1])


def _max_error_update(state: BiasState, forecast: Forecast, y, n_bins) -> BiasState:
    fdt = state.bias.dtype
    p = jnp.asarray(forecast.value, fdt)
    return BiasState(bias=state.bias.at[_bucket(p, n_bins)].add(p - jnp.asarray(y, fdt)))


class MaxCalibrationError(AbstractNature):
    r"""Greedy adversary: picks the outcome that maximises the running calibration error.

    It buckets the realised forecasts it has seen to the nearest point of
    $\{0, 1/n, \dots, 1\}$ and keeps the per-bucket bias $b_k = \sum_s \mathbb 1[k_s = k](p_s -
    y_s)$. Seeing the public mixed strategy $\sum_j w_j \delta_{s_j}$, it picks

    $$y_t = \arg\max_{y \in \{0,1\}} \sum_j w_j \big(|b_{k(s_j)} + s_j - y| - |b_{k(s_j)}|\big),$$

    the expected increase of $\sum_k |b_k|$ (ties: $y = 0$). With ``n_bins`` equal to a grid
    forecaster's grid the buckets are its forecast values, so $\sum_k |b_k|$ is its exact ECE
    (Arunachaleswaran et al. 2024, §2).

    Attributes:
        n_bins: bucket grid size $n$ (static: fixes the state's shape).
    """

    outcome_space = "binary"

    n_bins: int = size_field("n_bins", lambda n: 2 * n, what="its bucket counts", hi=MAX_GRID, why=GRID_WHY, default=10)

    def __check_init__(self):
        check_positive_int(self.n_bins, "n_bins")

    def init(self, key: PRNGKeyArray) -> BiasState:
        # sized for max_bins in the padded variant (jcalib._padded); buckets past n stay 0
        return BiasState(bias=jnp.zeros((table_bins(self) + 1,), jnp.result_type(float)))

    def gains(self, state: BiasState, public) -> Float[Array, " 2"]:
        """Expected increase of $\\sum_k |b_k|$ for $y = 0$ and $y = 1$."""
        return _max_error_gains(state, public, self.n_bins)

    def outcome(self, state: BiasState, x, public, key: PRNGKeyArray) -> Int[Array, ""]:
        return _max_error_outcome(state, public, self.n_bins)

    def update(self, state: BiasState, x, forecast: Forecast, y, key: PRNGKeyArray) -> BiasState:
        return _max_error_update(state, forecast, y, self.n_bins)


class RandomMixture(AbstractNature):
    r"""Each round, independently, acts as one of three natures chosen at random:
    :class:`Contrarian` with weight ``contrarian``, :class:`MaxCalibrationError` with weight
    ``max_error``, i.i.d. Bernoulli(``rate``) with weight ``bernoulli`` (weights normalised).

    The max-error bookkeeping runs every round, whichever nature acts.

    Attributes:
        contrarian, max_error, bernoulli: non-negative weights, not all 0.
        rate: the Bernoulli rate, in [0, 1].
        n_bins: bucket grid of the max-error part (static).
    """

    outcome_space = "binary"

    contrarian: float = 1.0
    max_error: float = 1.0
    bernoulli: float = 1.0
    rate: float = 0.5
    n_bins: int = size_field("n_bins", lambda n: 2 * n, what="its bucket counts", hi=MAX_GRID, why=GRID_WHY, default=10)

    def __check_init__(self):
        check_positive_int(self.n_bins, "n_bins")
        _check_scalar_prob(self.rate, "rate")
        for v, n in zip(self._raw_weights(), ("contrarian", "max_error", "bernoulli")):
            check_hyper(v, n, 0.0)
        w = jnp.stack([as_float_array(v, n) for v, n in zip(self._raw_weights(), ("contrarian", "max_error", "bernoulli"))])
        if is_concrete(w) and not (bool(jnp.all(jnp.isfinite(w) & (w >= 0))) and bool(jnp.sum(w) > 0)):
            raise ValueError(
                "weights must be finite, non-negative and not all 0, got "
                f"contrarian={self.contrarian!r}, max_error={self.max_error!r}, bernoulli={self.bernoulli!r}"
            )

    def _raw_weights(self):
        return (self.contrarian, self.max_error, self.bernoulli)

    def init(self, key: PRNGKeyArray) -> BiasState:
        # sized for max_bins in the padded variant (jcalib._padded); buckets past n stay 0
        return BiasState(bias=jnp.zeros((table_bins(self) + 1,), jnp.result_type(float)))

    def outcome(self, state: BiasState, x, public, key: PRNGKeyArray) -> Int[Array, ""]:
        fdt = state.bias.dtype
        w = jnp.stack([jnp.asarray(v, fdt) for v in self._raw_weights()])
        c = jnp.cumsum(w)
        u = jax.random.uniform(key, (), fdt) * c[2]
        mode = jnp.sum((u >= c[:2]).astype(jnp.int32))  # 0, 1 or 2; zero-weight modes never drawn
        y_c = Contrarian().outcome(None, x, public, key)
        y_m = _max_error_outcome(state, public, self.n_bins)
        # one uniform draw serves both choices: given mode 2, (u - c_1)/w_2 is uniform on [0, 1)
        v = (u - c[1]) / jnp.where(w[2] > 0, w[2], 1.0)
        y_b = (v < jnp.asarray(self.rate, fdt)).astype(jnp.int32)
        return jnp.stack([y_c, y_m, y_b])[mode]

    def update(self, state: BiasState, x, forecast: Forecast, y, key: PRNGKeyArray) -> BiasState:
        return _max_error_update(state, forecast, y, self.n_bins)
