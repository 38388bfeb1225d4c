r"""Oblivious natures: outcome streams that ignore the forecasts.

Every nature here keeps the round index $t$ (0-based, int32) in its state, draws the outcome
with the round's key, and returns int32 0/1 outcomes. Scalar settings are plain fields, so a
``jcalib.core.sweep`` over a list of natures of one class stacks and vmaps them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import equinox as eqx

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PRNGKeyArray

from .._dtypes import float_dtype
from .._validation import as_float_array, check_binary_labels, check_binary_probs, check_finite, check_hyper, is_concrete
from ..core.types import AbstractNature, Forecast

__all__ = [
    "Bernoulli",
    "Drifting",
    "Markov",
    "MarkovState",
    "Periodic",
    "PeriodicState",
    "RegimeState",
    "RegimeSwitch",
    "Replay",
    "RoundState",
]



def _bernoulli(key, p) -> Int[Array, ""]:
    return jax.random.bernoulli(key, jnp.asarray(p, float_dtype())).astype(jnp.int32)


def _check_scalar_prob(value, name):
    check_hyper(value, name, 0.0, 1.0)


def _check_positive(value, name):
    check_hyper(value, name, 0.0, open_lo=True)


class RoundState(NamedTuple):
    """The round index ``t`` (int32, 0 at the first round)."""

    t: Int[Array, ""]


class _Clocked(AbstractNature):
    """A nature whose state is only the round index."""

    outcome_space = "binary"

    def init(self, key: PRNGKeyArray) -> RoundState:
        return RoundState(t=jnp.zeros((), jnp.int32))

    def update(self, state: RoundState, x, forecast: Forecast, y, key: PRNGKeyArray) -> RoundState:
        return RoundState(t=state.t + 1)


class Bernoulli(_Clocked):
    """I.i.d. outcomes: $y_t \\sim \\mathrm{Bernoulli}(p)$, $p$ = ``prob``.

    Attributes:
        prob: the rate $p$, in [0, 1].

    Example:
        >>> import jax
        >>> Bernoulli(1.0).outcome(None, None, None, jax.random.key(0)).item()
        1
    """

    prob: float = 0.5

    def __check_init__(self):
        _check_scalar_prob(self.prob, "prob")

    def outcome(self, state, x, public, key: PRNGKeyArray) -> Int[Array, ""]:
        return _bernoulli(key, self.prob)


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
        fdt = float_dtype()
        frac = jnp.minimum(jnp.asarray(t, fdt) / jnp.asarray(self.horizon, fdt), 1.0)
        start = jnp.asarray(self.start, fdt)
        return start + (jnp.asarray(self.end, fdt) - start) * frac

    def outcome(self, state: RoundState, x, public, key: PRNGKeyArray) -> Int[Array, ""]:
        return _bernoulli(key, self.rate(state.t))


class PeriodicState(NamedTuple):
    """Round index and phase of :class:`Periodic`.

    Attributes:
        t: round index (int32).
        r: $t \bmod$ period, kept incrementally (float), so the phase stays exact for any $t$.
    """

    t: Int[Array, ""]
    r: Float[Array, ""]


class Periodic(AbstractNature):
    r"""A sinusoidal Bernoulli rate:

    $$q_t = \text{base} + \text{amplitude}\,\sin(2\pi (t \bmod \text{period})/\text{period}),\quad
    y_t \sim \mathrm{Bernoulli}(q_t).$$

    The residue $t \bmod$ period is carried in the state and advanced by one each round (the
    subtraction of the period is exact), instead of computing $2\pi t/\text{period}$ from a
    float $t$, which loses the phase in float32 for large $t$ (5·10⁻³ at $t = 10^7$).

    Attributes:
        base: mean rate in [0, 1].
        amplitude: with ``base ± amplitude`` inside [0, 1].
        period: rounds per cycle (positive).
    """

    outcome_space = "binary"

    base: float = 0.5
    amplitude: float = 0.3
    period: float = 100.0

    def __check_init__(self):
        _check_scalar_prob(self.base, "base")
        _check_positive(self.period, "period")
        check_hyper(self.amplitude, "amplitude")
        b = as_float_array(self.base, "base")
        a = as_float_array(self.amplitude, "amplitude")
        if is_concrete(a) and is_concrete(b):
            if not bool(jnp.isfinite(a)) or bool(b - jnp.abs(a) < 0) or bool(b + jnp.abs(a) > 1):
                raise ValueError(
                    f"base ± amplitude must lie in [0, 1], got base={self.base!r}, amplitude={self.amplitude!r}"
                )

    def init(self, key: PRNGKeyArray) -> PeriodicState:
        return PeriodicState(t=jnp.zeros((), jnp.int32), r=jnp.zeros((), float_dtype()))

    def rate_at(self, r: Float[Array, ""]) -> Float[Array, ""]:
        """$q$ at residue $r = t \bmod$ period."""
        fdt = float_dtype()
        phase = 2 * jnp.pi * (jnp.asarray(r, fdt) / jnp.asarray(self.period, fdt))
        q = jnp.asarray(self.base, fdt) + jnp.asarray(self.amplitude, fdt) * jnp.sin(phase)
        return jnp.clip(q, 0.0, 1.0)  # only guards round-off at the extremes

    def rate(self, t: Int[Array, ""]) -> Float[Array, ""]:
        """$q_t$ for a round index $t$ (reduced modulo the period in float64 on the host when
        concrete; use :meth:`rate_at` with the state's residue inside a run)."""
        if is_concrete(t) and is_concrete(jnp.asarray(self.period)):
            import numpy as np

            return self.rate_at(np.fmod(np.float64(t), np.float64(self.period)))
        return self.rate_at(jnp.fmod(jnp.asarray(t, float_dtype()), jnp.asarray(self.period, float_dtype())))

    def outcome(self, state: PeriodicState, x, public, key: PRNGKeyArray) -> Int[Array, ""]:
        return _bernoulli(key, self.rate_at(state.r))

    def update(self, state: PeriodicState, x, forecast: Forecast, y, key: PRNGKeyArray) -> PeriodicState:
        P = jnp.asarray(self.period, state.r.dtype)
        r = state.r + 1
        return PeriodicState(state.t + 1, jnp.where(r >= P, r - P, r))


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

    outcome_space = "binary"

    p01: float = 0.1
    p10: float = 0.1

    def __check_init__(self):
        _check_scalar_prob(self.p01, "p01")
        _check_scalar_prob(self.p10, "p10")

    def init(self, key: PRNGKeyArray) -> MarkovState:
        fdt = float_dtype()
        a, b = jnp.asarray(self.p01, fdt), jnp.asarray(self.p10, fdt)
        s = a + b
        pi1 = jnp.where(s > 0, a / jnp.where(s > 0, s, 1.0), 0.5)
        return MarkovState(prev=_bernoulli(key, pi1))

    def outcome(self, state: MarkovState, x, public, key: PRNGKeyArray) -> Int[Array, ""]:
        fdt = float_dtype()
        q = jnp.where(state.prev == 1, 1.0 - jnp.asarray(self.p10, fdt), jnp.asarray(self.p01, fdt))
        return _bernoulli(key, q)

    def update(self, state: MarkovState, x, forecast: Forecast, y, key: PRNGKeyArray) -> MarkovState:
        return MarkovState(prev=jnp.asarray(y, jnp.int32))


class RegimeState(NamedTuple):
    """Hidden regime of :class:`RegimeSwitch`.

    Attributes:
        t: round index (int32).
        regime: current regime (int32 index into ``rates``).
    """

    t: Int[Array, ""]
    regime: Int[Array, ""]


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

    outcome_space = "binary"

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
        regime = jax.random.randint(key, (), 0, self.rates.shape[0], jnp.int32)
        return RegimeState(jnp.zeros((), jnp.int32), regime)

    def outcome(self, state: RegimeState, x, public, key: PRNGKeyArray) -> Int[Array, ""]:
        return _bernoulli(key, self.rates[state.regime])

    def update(self, state: RegimeState, x, forecast: Forecast, y, key: PRNGKeyArray) -> RegimeState:
        K = self.rates.shape[0]
        u = jax.random.uniform(key, (), float_dtype())
        sp = jnp.asarray(self.switch_prob, float_dtype())
        switch = (u < sp) & (K > 1)
        # given a switch, u/sp is uniform on [0, 1): shift by 1..K-1 to a uniform *other* regime
        frac = u / jnp.where(sp > 0, sp, 1.0)
        shift = 1 + jnp.minimum(jnp.floor(frac * (K - 1)), K - 2).astype(jnp.int32)
        regime = jnp.where(switch, (state.regime + shift) % K, state.regime)
        return RegimeState(state.t + 1, regime)


class Replay(_Clocked):
    r"""Replays recorded outcomes and, optionally, contexts: $y_t = y[t \bmod n]$, $x_t = x[t \bmod n]$.

    ``play`` cannot know the sequence's length, so rounds past the end **wrap around**
    (cyclic replay); ask for ``T <= len(y)`` rounds to replay it once. Replays swept together
    must have equal lengths (they are stacked); pad or cut sequences to a common length.

    Args:
        y: outcomes, shape ``(n,)``, ``n >= 1``: 0/1 values (stored as int32) when
            ``outcomes="binary"``, finite reals (stored as floats) when ``outcomes="real"``.
        x: optional side information revealed as each round's context *before* the forecast:
            any pytree whose leaves have leading axis ``n`` (a model's forecasts ``q_t``, an
            expert's forecast distributions, feature vectors). ``None``: no context.
        outcomes: ``"binary"`` or ``"real"``.

    Example:
        >>> import jax, jcalib
        >>> traj = jcalib.core.play(jcalib.forecasters.Constant(0.5), Replay([1, 0, 0]), 5, key=jax.random.key(0))
        >>> traj.y.tolist()
        [1, 0, 0, 1, 0]
    """

    y: Array
    x: Any
    outcomes: str = eqx.field(static=True)

    @property
    def outcome_space(self) -> str:
        return self.outcomes

    def __init__(self, y, x=None, *, outcomes: str = "binary"):
        if outcomes not in ("binary", "real"):
            raise ValueError(f"outcomes must be 'binary' or 'real', got {outcomes!r}")
        if outcomes == "binary":
            arr = check_binary_labels(y, "y")
        else:
            arr = check_finite(as_float_array(y, "y"), "y")  # in the graph when traced
        if arr.ndim != 1 or arr.shape[0] < 1:
            raise ValueError(f"y must be a non-empty 1-D sequence, got shape {tuple(arr.shape)}")
        if x is not None:
            def context_leaf(leaf):
                leaf = jnp.asarray(leaf) if isinstance(leaf, jax.Array) or not hasattr(leaf, "dtype") else leaf
                if not (jnp.issubdtype(leaf.dtype, jnp.integer) or jnp.issubdtype(leaf.dtype, jnp.bool_)):
                    leaf = as_float_array(leaf, "x")  # real numbers only: strings and complex refused
                if leaf.ndim < 1 or leaf.shape[0] != arr.shape[0]:
                    raise ValueError(
                        f"every leaf of x needs the leading axis of y (length {arr.shape[0]}), got shape {tuple(leaf.shape)}"
                    )
                return check_finite(leaf, "x") if jnp.issubdtype(leaf.dtype, jnp.floating) else jnp.asarray(leaf)

            if isinstance(x, (list, tuple)) and all(isinstance(v, (int, float, np.number)) for v in x):
                x = np.asarray(x)  # a list of numbers is one context per round, not a pytree of scalars
            x = jax.tree_util.tree_map(context_leaf, x)
        self.y = arr
        self.x = x
        self.outcomes = outcomes

    def context(self, state: RoundState, key: PRNGKeyArray):
        if self.x is None:
            return None
        i = state.t % self.y.shape[0]
        return jax.tree_util.tree_map(lambda a: a[i], self.x)

    def outcome(self, state: RoundState, x, public, key: PRNGKeyArray) -> Array:
        return self.y[state.t % self.y.shape[0]]
