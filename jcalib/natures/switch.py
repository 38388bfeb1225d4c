r"""A nature that is one of several, picked by an integer index: many nature classes in one sweep.

``jcalib.core.sweep`` stacks natures of one class. To play a forecaster against natures of
*different* classes in one compiled program, wrap them in :class:`Switch` and sweep over the
index::

    natures = (Bernoulli(0.3), Markov(0.05, 0.1), Contrarian())
    runs = jcalib.core.sweep(f, Switch.all_of(natures), T, key=key, n_seeds=64)   # axes (3, 64, T)

Every member's outcome is computed each round and the acting one's selected (as ``lax.switch``
does under ``vmap`` with a batched index), so a round costs the sum of the natures' costs; in
exchange the sweep compiles once instead of once per class, which dominates for short runs on a
CPU.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence


import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Int, PRNGKeyArray

from .._validation import shown, stage_check
from ..core.types import AbstractNature, Forecast

__all__ = ["Switch", "SwitchState"]


class SwitchState(NamedTuple):
    """:class:`Switch`'s state.

    Attributes:
        index: the acting member (int32), checked against the number of members once, at init.
        members: every member's state (a tuple).
    """

    index: Int[Array, ""]
    members: tuple


class Switch(AbstractNature):
    """Acts as ``natures[index]``; the state holds every member's state.

    Args:
        natures: a tuple of natures (any classes; each unbatched). If any member reveals a
            context, all must, with contexts of one structure and dtype.
        index: which one acts, an int in ``[0, len(natures))`` (an array field, so a sweep
            can vmap over it). A concrete index is checked at construction; a traced one is
            checked when the run starts (an out-of-range index raises instead of being
            clipped).

    Every member sees the same keys; only the selected member's outcome is used, and only its
    state matters for the run.
    """

    natures: tuple
    index: Any = 0

    @property
    def outcome_space(self) -> str | None:
        """The members' common outcome space (``None`` when they differ or are undeclared)."""
        spaces = {n.outcome_space for n in self.natures}
        return spaces.pop() if len(spaces) == 1 else None

    def __check_init__(self):
        if not isinstance(self.natures, tuple) or not self.natures:
            raise ValueError("natures must be a non-empty tuple of natures")
        for n in self.natures:
            if not isinstance(n, AbstractNature):
                raise ValueError(f"every member must be an AbstractNature, got {type(n).__name__}")
        idx = self.index
        if not isinstance(idx, jax.core.Tracer):
            v = None if isinstance(idx, (bool, np.bool_)) or idx is None else np.asarray(idx)
            if v is None or v.dtype.kind not in "iu":
                raise ValueError(f"index must be an integer in [0, {len(self.natures)}), got {shown(idx)}")
            if v.ndim != 0:
                raise ValueError(f"index must be a scalar integer, got shape {v.shape}")
            i = int(idx)
            if not 0 <= i < len(self.natures):
                raise ValueError(f"index must lie in [0, {len(self.natures)}), got {i}")

    @classmethod
    def all_of(cls, natures: Sequence[AbstractNature]) -> list["Switch"]:
        """One ``Switch`` per member, ready to pass to ``jcalib.core.sweep`` as a list."""
        natures = tuple(natures)
        return [cls(natures, jnp.asarray(i, jnp.int32)) for i in range(len(natures))]

    def init(self, key: PRNGKeyArray) -> SwitchState:
        n = len(self.natures)
        idx = jnp.asarray(self.index, jnp.int32)
        idx = stage_check(idx, (idx < 0) | (idx >= n), f"Switch index out of range [0, {n})")
        return SwitchState(idx, tuple(m.init(key) for m in self.natures))

    def context(self, state: SwitchState, key: PRNGKeyArray):
        xs = [n.context(s, key) for n, s in zip(self.natures, state.members)]
        if all(x is None for x in xs):
            return None
        if any(x is None for x in xs):
            raise ValueError("either every member of a Switch reveals a context or none does")
        return jax.lax.switch(state.index, [lambda x=x: x for x in xs])

    def outcome(self, state: SwitchState, x, public, key: PRNGKeyArray):
        # every member's outcome, then one selected: what lax.switch does under vmap with a batched
        # index, without tracing each branch into a jaxpr and batching it again (a third of the
        # time a sweep over a Switch spends tracing); every member's update runs each round anyway
        ys = [n.outcome(s, x, public, key) for n, s in zip(self.natures, state.members)]
        return jax.tree_util.tree_map(lambda *y: jax.lax.select_n(state.index, *y), *ys)

    def update(self, state: SwitchState, x, forecast: Forecast, y, key: PRNGKeyArray) -> SwitchState:
        # every member's state advances (states are independent); only the acting one matters
        members = tuple(n.update(s, x, forecast, y, key) for n, s in zip(self.natures, state.members))
        return SwitchState(state.index, members)
