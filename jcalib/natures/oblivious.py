r"""Oblivious natures: outcome streams that ignore the forecasts.

Every nature here keeps the round index $t$ (0-based, int32) in its state, draws the outcome
with the round's key, and returns int32 0/1 outcomes. Scalar settings are plain fields, so a
``jcalib.sweep`` over a list of natures of one class stacks and vmaps them.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray, UInt

from .._validation import as_float_array, check_binary_labels, check_binary_probs, is_concrete
from ..core.types import AbstractNature, Forecast

__all__ = [
    "Bernoulli",
    "Drifting",
    "Markov",
    "MarkovState",
    "Periodic",
    "RegimeState",
    "RegimeSwitch",
    "Replay",
    "RoundState",
]


def _fdt():
    return jnp.result_type(float)


def _bernoulli(key, p) -> Int[Array, ""]:
    return jax.random.bernoulli(key, jnp.asarray(p, _fdt())).astype(jnp.int32)


def _check_scalar_prob(value, name):
    arr = as_float_array(value, name)
    if arr.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got shape {tuple(arr.shape)}")
    check_binary_probs(arr[None], name)  # as 1-D: check_binary_probs reports bad entries by index


def _check_positive(value, name):
    arr = as_float_array(value, name)
    if is_concrete(arr) and not bool(jnp.all(jnp.isfinite(arr) & (arr > 0))):
        raise ValueError(f"{name} must be positive and finite, got {value!r}")


class RoundState(NamedTuple):
    """The round index ``t`` (int32, 0 at the first round)."""

    t: Int[Array, ""]


class _Clocked(AbstractNature):
    """A nature whose state is only the round index."""

    def init(self, key: PRNGKeyArray) -> RoundState:
        return RoundState(t=jnp.zeros((), jnp.int32))

    def update(self, state: RoundState, x, forecast: Forecast, y) -> RoundState:
        return RoundState(t=state.t + 1)


class Bernoulli(_Clocked):
    """I.i.d. outcomes: $y_t \\sim \\mathrm{Bernoulli}(p)$.

    Attributes:
        p: the rate, in [0, 1].

    Example:
        >>> import jax
        >>> Bernoulli(1.0).outcome(None, None, None, jax.random.key(0)).item()
        1
    """

    p: float = 0.5

    def __check_init__(self):
        _check_scalar_prob(self.p, "p")

    def outcome(self, state, x, public, key: PRNGKeyArray) -> Int[Array, ""]:
        return _bernoulli(key, self.p)


class Drifting(_Clocked):
    r"""A Bernoulli rate drifting linearly from ``start`` to ``end`` over ``horizon`` rounds:

    $$q_t = \text{start} + (\text{end} - \text{start})\,\min(t/\text{horizon}, 1),\quad
    y_t \sim \mathrm{Bernoulli}(q_t)\ \ (t = 0, 1, \dots).$$

    Attributes:
        start, end: rates in [0, 1].
        horizon: rounds the drift takes (positive); the rate stays at ``end`` afterwards.
    """

    start: float = 0.2
    end: float = 0.8
    horizon: float = 1000.0

    def __check_init__(self):
        _check_scalar_prob(self.start, "start")
        _check_scalar_prob(self.end, "end")
        _check_positive(self.horizon, "horizon")

    def rate(self, t: Int[Array, ""]) -> Float[Array, ""]:
        """$q_t$."""
        fdt = _fdt()
        frac = jnp.minimum(jnp.asarray(t, fdt) / jnp.asarray(self.horizon, fdt), 1.0)
        start = jnp.asarray(self.start, fdt)
        return start + (jnp.asarray(self.end, fdt) - start) * frac

    def outcome(self, state: RoundState, x, public, key: PRNGKeyArray) -> Int[Array, ""]:
        return _bernoulli(key, self.rate(state.t))


class Periodic(_Clocked):
    r"""A sinusoidal Bernoulli rate:

    $$q_t = \text{base} + \text{amplitude}\,\sin(2\pi t/\text{period}),\quad
    y_t \sim \mathrm{Bernoulli}(q_t).$$

    Attributes:
        base: mean rate in [0, 1].
        amplitude: with ``base ± amplitude`` inside [0, 1].
        period: rounds per cycle (positive).
    """

    base: float = 0.5
    amplitude: float = 0.3
    period: float = 100.0

    def __check_init__(self):
        _check_scalar_prob(self.base, "base")
        _check_positive(self.period, "period")
        b = as_float_array(self.base, "base")
        a = as_float_array(self.amplitude, "amplitude")
        if is_concrete(a) and is_concrete(b):
            if not bool(jnp.isfinite(a)) or bool(b - jnp.abs(a) < 0) or bool(b + jnp.abs(a) > 1):
                raise ValueError(
                    f"base ± amplitude must lie in [0, 1], got base={self.base!r}, amplitude={self.amplitude!r}"
                )

    def rate(self, t: Int[Array, ""]) -> Float[Array, ""]:
        """$q_t$."""
        fdt = _fdt()
        phase = 2 * jnp.pi * jnp.asarray(t, fdt) / jnp.asarray(self.period, fdt)
        q = jnp.asarray(self.base, fdt) + jnp.asarray(self.amplitude, fdt) * jnp.sin(phase)
        return jnp.clip(q, 0.0, 1.0)  # only guards round-off at the extremes

    def outcome(self, state: RoundState, x, public, key: PRNGKeyArray) -> Int[Array, ""]:
        return _bernoulli(key, self.rate(state.t))


class MarkovState(NamedTuple):
    """The previous outcome (int32; drawn from the stationary law at ``init``)."""

    prev: Int[Array, ""]


class Markov(AbstractNature):
    r"""A stationary two-state Markov chain of outcomes:

    $$P(y_t = 1 \mid y_{t-1} = 0) = p_{01},\qquad P(y_t = 0 \mid y_{t-1} = 1) = p_{10},$$

    started from its stationary law $P(y_0 = 1) = p_{01}/(p_{01} + p_{10})$ (1/2 when both are
    0). Small $p_{01}, p_{10}$ give long runs.

    Attributes:
        p01, p10: transition probabilities in [0, 1].
    """

    p01: float = 0.1
    p10: float = 0.1

    def __check_init__(self):
        _check_scalar_prob(self.p01, "p01")
        _check_scalar_prob(self.p10, "p10")

    def init(self, key: PRNGKeyArray) -> MarkovState:
        fdt = _fdt()
        a, b = jnp.asarray(self.p01, fdt), jnp.asarray(self.p10, fdt)
        s = a + b
        pi1 = jnp.where(s > 0, a / jnp.where(s > 0, s, 1.0), 0.5)
        return MarkovState(prev=_bernoulli(key, pi1))

    def outcome(self, state: MarkovState, x, public, key: PRNGKeyArray) -> Int[Array, ""]:
        fdt = _fdt()
        q = jnp.where(state.prev == 1, 1.0 - jnp.asarray(self.p10, fdt), jnp.asarray(self.p01, fdt))
        return _bernoulli(key, q)

    def update(self, state: MarkovState, x, forecast: Forecast, y) -> MarkovState:
        return MarkovState(prev=jnp.asarray(y, jnp.int32))


class RegimeState(NamedTuple):
    """Hidden regime of :class:`RegimeSwitch`.

    Attributes:
        t: round index (int32).
        regime: current regime (int32 index into ``rates``).
        seed: uint32 seed of the regime chain, drawn at ``init`` (``update`` receives no key).
    """

    t: Int[Array, ""]
    regime: Int[Array, ""]
    seed: UInt[Array, ""]


class RegimeSwitch(AbstractNature):
    r"""A hidden-regime (Markov-switching) Bernoulli stream.

    Regime $k_t \in \{0..K-1\}$ starts uniform; after each round, with probability
    ``switch_prob`` it jumps to a uniformly chosen *other* regime. $y_t \sim
    \mathrm{Bernoulli}(\text{rates}[k_t])$.

    Attributes:
        rates: shape ``(K,)``, each in [0, 1] (``K`` fixes no array shape in the state, but
            natures swept together must share ``K``).
        switch_prob: in [0, 1].
    """

    rates: Float[Array, " K"]
    switch_prob: float = 0.01

    def __init__(self, rates=(0.2, 0.8), switch_prob: float = 0.01):
        arr = check_binary_probs(rates, "rates")
        if arr.ndim != 1 or arr.shape[0] < 1:
            raise ValueError(f"rates must be a non-empty 1-D array, got shape {tuple(arr.shape)}")
        self.rates = arr
        self.switch_prob = switch_prob

    def __check_init__(self):
        _check_scalar_prob(self.switch_prob, "switch_prob")

    def init(self, key: PRNGKeyArray) -> RegimeState:
        bits = jax.random.bits(key, (2,), jnp.uint32)  # one draw: start regime and seed
        regime = (bits[0] % self.rates.shape[0]).astype(jnp.int32)  # modulo bias < K / 2^32
        return RegimeState(jnp.zeros((), jnp.int32), regime, bits[1])

    def outcome(self, state: RegimeState, x, public, key: PRNGKeyArray) -> Int[Array, ""]:
        return _bernoulli(key, self.rates[state.regime])

    def update(self, state: RegimeState, x, forecast: Forecast, y) -> RegimeState:
        K = self.rates.shape[0]
        u = jax.random.uniform(jax.random.fold_in(jax.random.key(state.seed), state.t), (), _fdt())
        sp = jnp.asarray(self.switch_prob, _fdt())
        switch = (u < sp) & (K > 1)
        # given a switch, u/sp is uniform on [0, 1): shift by 1..K-1 to a uniform *other* regime
        frac = u / jnp.where(sp > 0, sp, 1.0)
        shift = 1 + jnp.minimum(jnp.floor(frac * (K - 1)), K - 2).astype(jnp.int32)
        regime = jnp.where(switch, (state.regime + shift) % K, state.regime)
        return RegimeState(state.t + 1, regime, state.seed)


class Replay(_Clocked):
    r"""Replays a given 0/1 sequence: $y_t = y[t \bmod n]$.

    ``play`` cannot know the sequence's length, so rounds past the end **wrap around**
    (cyclic replay); ask for ``T <= len(y)`` rounds to replay it once. Replays swept together
    must have equal lengths (they are stacked); pad or cut sequences to a common length.

    Attributes:
        y: 0/1 outcomes, shape ``(n,)``, ``n >= 1`` (validated; stored as int32).

    Example:
        >>> import jax, jcalib
        >>> traj = jcalib.play(jcalib.forecasters.Constant(0.5), Replay([1, 0, 0]), 5, jax.random.key(0))
        >>> traj.y.tolist()
        [1, 0, 0, 1, 0]
    """

    y: Int[Array, " n"]

    def __init__(self, y):
        arr = check_binary_labels(y, "y")
        if arr.ndim != 1 or arr.shape[0] < 1:
            raise ValueError(f"y must be a non-empty 1-D sequence, got shape {tuple(arr.shape)}")
        self.y = arr

    def outcome(self, state: RoundState, x, public, key: PRNGKeyArray) -> Int[Array, ""]:
        return self.y[state.t % self.y.shape[0]]
