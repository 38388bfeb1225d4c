"""The shapes every online algorithm in jcalib shares (DESIGN.md, "Core shapes").

A forecaster and a nature are frozen equinox modules whose fields are hyperparameters; the
state that changes from round to round lives in a separate pytree (a NamedTuple), so
``jax.vmap`` can batch over seeds, natures and hyperparameters alike. One round of play, for
every outcome space (binary events, interval outcomes, …):

```
x        = nature.context(nstate, key_x)              # a model's forecast q_t, an expert's
                                                      # distribution, features, or None
forecast = forecaster.predict(fstate, x, key_p)       # Forecast(value, public, certificate, carry)
y        = nature.outcome(nstate, x, forecast.public, key_y)
info     = forecaster.info(fstate, x, forecast, y)    # optional, after the outcome
fstate   = forecaster.update(fstate, x, forecast, y)
nstate   = nature.update(nstate, x, forecast, y, key_u)
```

``forecast.value`` is any pytree (a probability, a vector, a distribution module);
``forecast.public`` is what an adaptive nature may see (a :class:`Mixture` for a randomised
forecaster); ``forecast.certificate`` is a value computed in ``predict``, before the outcome
(ORCA's minimax value, Algorithm 1's $\\max_y \\langle\\bar\\pi, \\pi\\rangle$), which the
drivers record and never recompute; ``forecast.carry`` is what ``predict`` hands to ``update``
beyond the forecast (ORCA's warm start), which recorders do not keep unless asked
(``History(carry=True)``).
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, PRNGKeyArray

from .._validation import (Custom, as_float_array, check_finite, check_key, declare, in_graph, is_concrete, offending,
                           once_per_signature)

__all__ = [
    "Forecast",
    "Mixture",
    "as_mixture",
    "Trajectory",
    "AbstractForecaster",
    "AbstractNature",
]


class Mixture(NamedTuple):
    """A finitely supported mixed strategy: forecast ``support[k]`` with probability ``probs[k]``.

    ``support`` is any pytree whose leaves share a leading axis of length k: grid points
    (shape ``(k,)``, or a list of k numbers), vectors ``(k, d)``, or a stacked distribution
    module (e.g. k piecewise-constant densities).

    Attributes:
        support: pytree with leading axis k.
        probs: ``(k,)`` non-negative weights summing to 1.
    """

    support: Any
    probs: Float[Array, " k"]

    def mean(self) -> Any:
        """The probability-weighted average of the support, leaf by leaf.

        For scalars and vectors this is the mixture's mean forecast; for a support of
        distributions parametrised linearly (bin masses of piecewise-constant densities) it is
        the mixture distribution itself. For non-linear parametrisations (a Gaussian's
        location and scale) it is only the average of the parameters.

        Raises:
            ValueError: ``probs`` is not a 1-D, finite, non-negative vector summing to 1, or a
                leaf of ``support`` is not a finite real array with a leading axis of
                ``len(probs)`` (checked in the graph, behind ``jcalib.config.checks``, when traced).
        """
        support, probs = self._checked()

        def avg(s):
            w = probs.astype(jnp.result_type(s.dtype, probs.dtype))
            return jnp.tensordot(w, s.astype(w.dtype), axes=1)

        return jax.tree_util.tree_map(avg, support)

    def sample(self, *, key: PRNGKeyArray) -> Any:
        """One element of the support, drawn with ``probs`` (``key``: a JAX PRNG key,
        keyword-only). Raises as :meth:`mean` does for a malformed mixture."""
        key = check_key(key)
        support, probs = self._checked()
        k = jax.random.categorical(key, jnp.log(probs))
        return jax.tree_util.tree_map(lambda s: s[k], support)

    def _checked(self):
        """``(support, probs)`` as arrays, after the checks :meth:`mean` documents."""
        probs = as_float_array(self.probs, "probs")
        if probs.ndim != 1 or probs.shape[0] == 0:
            raise ValueError(f"probs must be a non-empty 1-D vector of weights, got shape {tuple(probs.shape)}")
        k = probs.shape[0]
        probs = in_graph(probs, ~(jnp.all(probs >= -_MIXTURE_ATOL) & (jnp.abs(jnp.sum(probs) - 1) <= _MIXTURE_ATOL)),
                         "probs must be finite, non-negative and sum to 1")
        if is_concrete(probs):
            v = np.asarray(probs, np.float64)
            check_finite(v, "probs")
            if np.any(v < -_MIXTURE_ATOL):
                raise ValueError(f"probs must be non-negative ({offending(v, v < -_MIXTURE_ATOL)})")
            if abs(v.sum() - 1) > _MIXTURE_ATOL:
                raise ValueError(f"probs must sum to 1, got {v.sum():.6g} (shape {v.shape})")

        def leaf(s):
            f = as_float_array(s, "support")  # refuses strings and complex numbers
            if f.ndim == 0 or f.shape[0] != k:
                raise ValueError(f"support must have a leading axis of len(probs) = {k}, got a leaf of shape {tuple(f.shape)}")
            s = s if isinstance(s, jax.Array) else jnp.asarray(s)
            # integer and boolean atoms keep their dtype (and are finite); float atoms are checked
            return check_finite(s, "support") if jnp.issubdtype(s.dtype, jnp.floating) else s

        support = self.support
        if isinstance(support, list) and support and all(isinstance(a, (int, float, np.number)) for a in support):
            support = np.asarray(support)  # a list of numbers is a support of k numbers, not a pytree of k leaves
        return jax.tree_util.tree_map(leaf, support), probs


_MIXTURE_ATOL = 1e-3  # a mixture's weights may miss the simplex by float32 round-off of a solver


def _public(public, name, bound):
    """A forecast's public part, checked: a :class:`Mixture` (its weights and support), else a
    pytree of non-empty finite real arrays (NaN and ±inf in the graph, behind
    ``jcalib.config.checks``)."""
    if isinstance(public, Mixture):
        return Mixture(*public._checked())

    def atom(v):
        v = as_float_array(v, name)
        if v.size == 0:
            raise ValueError(f"{name} must not be empty, got a leaf of shape {tuple(v.shape)}")
        return check_finite(v, name)

    return jax.tree_util.tree_map(atom, public)


@declare(public=Custom(_public, "a Mixture, or a pytree of finite real arrays"))
def as_mixture(public) -> Mixture:
    """View a forecast's public part as a :class:`Mixture`.

    Deterministic forecasters publish their value itself (a point mass: every leaf gains a
    leading axis of length 1); randomised ones publish a ``Mixture``. Adaptive natures call
    this so they handle both alike. The branch is on the pytree's Python type, never on traced
    values.

    Raises:
        ValueError: a leaf of ``public`` is not a non-empty real array, or holds NaN or ±inf.
    """
    if isinstance(public, Mixture):
        return public
    support = jax.tree_util.tree_map(lambda v: v[None], public)
    leaves = jax.tree_util.tree_leaves(support)
    dtype = jnp.result_type(float)
    if leaves and jnp.issubdtype(leaves[0].dtype, jnp.floating):
        dtype = leaves[0].dtype
    return Mixture(support=support, probs=jnp.ones((1,), dtype))


class Forecast(NamedTuple):
    """What a forecaster says in one round.

    Attributes:
        value: the realised forecast, the one that is scored (any pytree).
        public: what an adaptive adversary may see before choosing the outcome: the mixed
            strategy (a :class:`Mixture`) of a randomised forecaster, ``value`` itself for a
            deterministic one.
        certificate: an optional value computed in ``predict`` before the outcome (e.g.
            ORCA's minimax value $\\ell_t$); recorded in :attr:`Trajectory.certificate`.
        carry: an optional value ``predict`` hands to ``update`` of the same round and that is
            neither scored nor a certificate (e.g. ORCA's warm start: the round's parameters
            and optimiser state). The drivers pass it through; recorders drop it unless asked
            (``History(carry=True)`` keeps it in :attr:`Trajectory.carry`).
    """

    value: Any
    public: Any
    certificate: Any = None
    carry: Any = None


class Trajectory(NamedTuple):
    """One play's history (leading axis: rounds; a sweep adds batch axes in front).

    Attributes:
        x: contexts (``None`` when the nature reveals none).
        forecast: realised forecast values (``Forecast.value`` per round).
        y: outcomes.
        info: the forecaster's per-round value computed after the outcome, ``None`` for most
            forecasters. For Almost-One-Step-Ahead it is the One-Step-Ahead look-ahead forecast
            p̃_t (Arunachaleswaran et al. 2024), which groups the rounds into a sequence within
            the 2√T+1 bound.
        certificate: ``Forecast.certificate`` per round (computed before the outcome).
        public: the published mixed strategies per round, when the recorder keeps them
            (``History(mixtures=True)``), else ``None``.
        carry: ``Forecast.carry`` per round, when the recorder keeps it
            (``History(carry=True)``), else ``None``.
    """

    x: Any
    forecast: Any
    y: Any
    info: Any = None
    certificate: Any = None
    public: Any = None
    carry: Any = None


class AbstractForecaster(eqx.Module):
    """A pure online forecaster. Fields are hyperparameters; state is returned by :meth:`init`.

    Only fields that fix array shapes are static (``eqx.field(static=True)``); Python numbers
    in the other fields become arrays when played, so a new value does not recompile and a
    sweep can vmap over them.

    Class attributes checked by ``play`` and ``sweep`` before tracing
    (:func:`check_outcome_spaces`): ``outcome_space`` (``"binary"``, ``"real"``, or ``None``
    for any) and ``needs_context`` (``True`` for recalibrators, which read a model's or an
    expert's forecast from the context).
    """

    outcome_space: ClassVar[str | None] = None
    needs_context: ClassVar[bool] = False

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

    @property
    def value_grid(self) -> int | None:
        """The grid size $m$ when every forecast value lies on $\\{0, 1/m, \\dots, 1\\}$, else
        ``None`` (the default). Grid forecasters override it; ``record="summary"`` reads it
        for its default grid."""
        return None

    def info(self, state: Any, x: Any, forecast: Forecast, y: Any) -> Any:
        """Per-round value recorded in :attr:`Trajectory.info` (default: none).

        Called with the state *before* :meth:`update`. Values that must be fixed before the
        outcome belong in ``Forecast.certificate`` instead.
        """
        return None


class AbstractNature(eqx.Module):
    """The adversary or data stream: oblivious, adaptive (sees ``public``), or a replay.

    ``outcome_space`` (``"binary"`` for 0/1 outcomes, ``"real"`` for outcomes in an interval,
    ``None`` when unknown) is checked against the forecaster's by ``play`` and ``sweep``.
    """

    outcome_space: ClassVar[str | None] = None

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

    def update(self, state: Any, x: Any, forecast: Forecast, y: Any, key: PRNGKeyArray) -> Any:
        """The nature's state after the round (default: unchanged).

        ``key`` is the round's update key: natures with a latent process (a model's hidden
        true probability, a regime) draw its next value here.
        """
        return state


def _context_of(nature, key):
    return nature.context(nature.init(key), key)


_CONTEXTS: dict = {}  # the context's shapes, traced once per nature signature, not at every play or sweep


def check_outcome_spaces(forecaster: AbstractForecaster, nature: AbstractNature) -> None:
    """Refuse a forecaster/nature pair that cannot play together, before anything is traced.

    ``ValueError`` when the forecaster's declared ``outcome_space`` differs from the nature's
    (a binary forecaster given real-valued outcomes, say), or when the forecaster
    ``needs_context`` and the nature's context is ``None`` (found by ``jax.eval_shape`` of the
    nature's ``init`` and ``context``: nothing is computed).
    """
    fs, ns = forecaster.outcome_space, nature.outcome_space
    if fs is not None and ns is not None and fs != ns:
        raise ValueError(
            f"{type(forecaster).__name__} forecasts {fs} outcomes but {type(nature).__name__} "
            f"produces {ns} outcomes; pair it with a {fs} nature"
        )
    if forecaster.needs_context:
        # Python numbers as arrays, as play traces them: one trace serves every hyperparameter value
        from .batching import as_traced_module

        nature = as_traced_module(nature)
        context = once_per_signature(_CONTEXTS, lambda: eqx.filter_eval_shape(_context_of, nature, jax.random.key(0)),
                                     nature, jax.config.jax_default_prng_impl)
        if context is None:
            raise ValueError(
                f"{type(forecaster).__name__} recalibrates the forecast it reads from the context, "
                f"but {type(nature).__name__} has no context (None); play it against a nature that "
                "reveals a model's or an expert's forecast (e.g. DistortedModel, Replay(y, x))"
            )
