"""The shapes every online algorithm in jcalib shares (DESIGN.md, "Core shapes").

A forecaster and a nature are frozen equinox modules whose fields are hyperparameters; the
state that changes from round to round lives in a separate pytree (a NamedTuple), so
``jax.vmap`` can batch over seeds, natures and hyperparameters alike. One round of play:

```
x        = nature.context(nstate, key_x)              # expert forecast, features, or None
forecast = forecaster.predict(fstate, x, key_p)       # Forecast(value, public)
y        = nature.outcome(nstate, x, forecast.public, key_y)
info     = forecaster.info(fstate, x, forecast, y)    # optional per-round certificate
fstate   = forecaster.update(fstate, x, forecast, y)
nstate   = nature.update(nstate, x, forecast, y)
```
"""

from __future__ import annotations

import abc
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

__all__ = [
    "Forecast",
    "Mixture",
    "as_mixture",
    "Trajectory",
    "AbstractForecaster",
    "AbstractNature",
]


class Mixture(NamedTuple):
    """A finitely supported mixed strategy: forecast ``support[k]`` with probability ``probs[k]``."""

    support: Float[Array, " k"]
    probs: Float[Array, " k"]

    def mean(self) -> Float[Array, ""]:
        return jnp.sum(self.support * self.probs)


def as_mixture(public) -> Mixture:
    """View a forecast's public part as a :class:`Mixture`.

    Deterministic forecasters publish their value itself (a point mass); randomised ones publish
    a ``Mixture``. Adaptive natures call this so they handle both alike. The branch is on the
    pytree's Python type, never on traced values.
    """
    if isinstance(public, Mixture):
        return public
    v = jnp.asarray(public)
    return Mixture(support=v[None], probs=jnp.ones((1,), v.dtype))


class Forecast(NamedTuple):
    """What a forecaster says in one round.

    Attributes:
        value: the realised forecast, the one that is scored.
        public: what an adaptive adversary may see before choosing the outcome: the mixed
            strategy (a :class:`Mixture`) of a randomised forecaster, ``value`` itself for a
            deterministic one.
    """

    value: Any
    public: Any


class Trajectory(NamedTuple):
    """One play's history (leading axis: rounds; a sweep adds batch axes in front).

    Attributes:
        x: contexts (``None`` when the nature reveals none).
        forecast: realised forecast values (``Forecast.value`` per round).
        y: outcomes.
        info: the forecaster's per-round certificate, ``None`` for most forecasters. For
            Almost-One-Step-Ahead it is the One-Step-Ahead look-ahead forecast p̃_t (paper 000),
            which groups the rounds into a sequence within the 2√T+1 bound.
    """

    x: Any
    forecast: Any
    y: Any
    info: Any = None


class AbstractForecaster(eqx.Module):
    """A pure online forecaster. Fields are hyperparameters; state is returned by :meth:`init`."""

    @abc.abstractmethod
    def init(self, key: PRNGKeyArray) -> Any:
        raise NotImplementedError  # abstract

    @abc.abstractmethod
    def predict(self, state: Any, x: Any, key: PRNGKeyArray) -> Forecast:
        """The forecast for this round; randomised forecasters draw with ``key``."""
        raise NotImplementedError  # abstract

    @abc.abstractmethod
    def update(self, state: Any, x: Any, forecast: Forecast, y: Any) -> Any:
        """The state after the outcome ``y`` of this round is revealed."""
        raise NotImplementedError  # abstract

    def info(self, state: Any, x: Any, forecast: Forecast, y: Any) -> Any:
        """Per-round certificate recorded in :attr:`Trajectory.info` (default: none).

        Called with the state *before* :meth:`update`.
        """
        return None


class AbstractNature(eqx.Module):
    """The adversary or data stream: oblivious, adaptive (sees ``public``), or a replay."""

    @abc.abstractmethod
    def init(self, key: PRNGKeyArray) -> Any:
        raise NotImplementedError  # abstract

    def context(self, state: Any, key: PRNGKeyArray) -> Any:
        """The context revealed before the forecast (default: none)."""
        return None

    @abc.abstractmethod
    def outcome(self, state: Any, x: Any, public: Any, key: PRNGKeyArray) -> Any:
        """This round's outcome, possibly chosen after seeing the public forecast."""
        raise NotImplementedError  # abstract

    def update(self, state: Any, x: Any, forecast: Forecast, y: Any) -> Any:
        """The nature's state after the round (default: unchanged)."""
        return state


def outcome_dtype() -> jnp.dtype:
    """Binary outcomes are int32 everywhere (exact counts; DESIGN.md "Numbers")."""
    return jnp.dtype(jnp.int32)


def _split_round(key: PRNGKeyArray):
    kx, kp, ky = jax.random.split(key, 3)
    return kx, kp, ky
