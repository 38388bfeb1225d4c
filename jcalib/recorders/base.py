r"""Recorders: what a run keeps, computed inside the scan (DESIGN.md, "Drivers own the loops").

A recorder is a small equinox module with three pure functions, like diffrax's ``SaveAt``:

```
rstate        = recorder.init()                    # O(1) in T (O(m) for a grid summary)
rstate, out   = recorder.step(rstate, round)       # every round, inside lax.scan
result        = recorder.finalise(rstate, outs)    # outs: the per-round outs stacked on axis 0
```

:class:`History` keeps the full trajectory (``out`` is the round itself); summaries keep
running statistics in ``rstate`` and emit ``None`` per round, so a run of $10^7$ rounds holds
O(1) memory in T. ``play``/``sweep`` take ``record=`` as a recorder, a tuple or dict of
recorders (the result has the same structure), or a shorthand string: ``"full"`` is
``History()``; other shorthands (``"summary"``: the grid summary of Arunachaleswaran et al.
2024) are registered by the modules that define them (:func:`register_shorthand`), so the core
knows no paper's types.
"""

from __future__ import annotations

import abc
from typing import Any, Callable, NamedTuple

import equinox as eqx
import jax
from jaxtyping import Array, Int

from .._validation import Custom, declare
from ..core.types import Forecast, Trajectory

__all__ = ["AbstractRecorder", "History", "Round", "register_shorthand"]


class Round(NamedTuple):
    """Everything one round produced, as a recorder sees it.

    Attributes:
        t: the absolute round index (int32, 0-based).
        x: the context.
        forecast: the :class:`~jcalib.core.Forecast` (value, public mixed strategy, certificate,
            carry).
        y: the outcome.
        info: the forecaster's post-outcome value (``None`` for most forecasters).
    """

    t: Int[Array, ""]
    x: Any
    forecast: Forecast
    y: Any
    info: Any


class AbstractRecorder(eqx.Module):
    """What a run keeps. Subclasses implement :meth:`init`, :meth:`step`, :meth:`finalise`."""

    @abc.abstractmethod
    def init(self) -> Any:
        """The running state before the first round (memory O(1) in T for summaries)."""
        raise NotImplementedError  # abstract

    @abc.abstractmethod
    def step(self, state: Any, rnd: Round) -> tuple[Any, Any]:
        """The state after one round, and this round's output (``None`` for summaries)."""
        raise NotImplementedError  # abstract

    def finalise(self, state: Any, outs: Any) -> Any:
        """The result of the run from the final state and the stacked per-round outputs.

        Default: the state (summaries) — or the outputs when the state is empty.
        """
        return state if outs is None else outs


class History(AbstractRecorder):
    """The full history: a :class:`~jcalib.core.Trajectory` with a leading round axis.

    Attributes:
        mixtures: also keep each round's published strategy (``Trajectory.public``), e.g. the
            two-point mixtures of a randomised forecaster (memory grows with the support size).
        carry: also keep each round's ``Forecast.carry`` (``Trajectory.carry``): what
            ``predict`` handed to ``update``, e.g. ORCA's warm start ($3n + 1$ numbers per
            round for $n$ bins). Off by default: it is the forecaster's working memory, not a
            result.
    """

    mixtures: bool = eqx.field(static=True, default=False)
    carry: bool = eqx.field(static=True, default=False)

    def init(self) -> tuple:
        return ()

    def step(self, state: tuple, rnd: Round) -> tuple[tuple, Trajectory]:
        fc = rnd.forecast
        public = fc.public if self.mixtures else None
        carry = fc.carry if self.carry else None
        return state, Trajectory(rnd.x, fc.value, rnd.y, rnd.info, fc.certificate, public, carry)

    def finalise(self, state: tuple, outs: Trajectory) -> Trajectory:
        return outs


class _Several(AbstractRecorder):
    """A tuple or dict of recorders run side by side; results keep the container's structure."""

    recorders: Any  # tuple or dict of AbstractRecorder

    def _map(self, fn, *trees):
        if isinstance(self.recorders, dict):
            return {k: fn(r, *(t[k] for t in trees)) for k, r in self.recorders.items()}
        return tuple(fn(r, *(t[i] for t in trees)) for i, r in enumerate(self.recorders))

    def init(self):
        return self._map(lambda r: r.init())

    def step(self, state, rnd: Round):
        pairs = self._map(lambda r, s: r.step(s, rnd), state)
        if isinstance(pairs, dict):
            return {k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items()}
        return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)

    def finalise(self, state, outs):
        return self._map(lambda r, s, o: r.finalise(s, o), state, outs)


_SHORTHANDS: dict[str, Callable[..., AbstractRecorder]] = {"full": lambda forecaster, n_bins: History()}
_BUILT_IN = {"full"}  # shorthands of jcalib itself ("summary" joins when jcalib.recorders.grid registers it)


def _shorthand_name(name, arg, bound):
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{arg} must be a non-empty string, got {type(name).__name__} {name!r:.60}")
    if name in _BUILT_IN:
        raise ValueError(f"{arg} {name!r} is a built-in shorthand of jcalib and cannot be replaced; choose another name")
    return name


def _factory(factory, arg, bound):
    if not callable(factory):
        raise ValueError(f"{arg} must be callable as factory(forecaster, n_bins) -> recorder, got "
                         f"{type(factory).__name__}")
    return factory


@declare(name=Custom(_shorthand_name, "a new shorthand name"), factory=Custom(_factory, "factory(forecaster, n_bins) -> recorder"))
def register_shorthand(name: str, factory: Callable[..., AbstractRecorder]) -> None:
    """Make ``record=name`` mean ``factory(forecaster, n_bins)`` in ``play`` and ``sweep``.

    Args:
        name: a non-empty string, not one of jcalib's own shorthands (``"full"``,
            ``"summary"``: every later ``record="full"`` in the process would change meaning).
            Registering a name of one's own again replaces its factory.
        factory: a callable ``(forecaster, n_bins) -> recorder``.

    Raises:
        ValueError: ``name`` is not a non-empty string, or names a built-in shorthand;
            ``factory`` is not callable.
    """
    _SHORTHANDS[name] = factory


def register_builtin_shorthand(name: str, factory: Callable[..., AbstractRecorder]) -> None:
    """:func:`register_shorthand` for jcalib's own modules: the name is then protected."""
    register_shorthand(name, factory)
    _BUILT_IN.add(name)


def resolve_recorder(record, forecaster, n_bins=None) -> AbstractRecorder:
    """The recorder that ``record=`` names (a recorder, a tuple/dict of them, or a shorthand)."""
    if isinstance(record, AbstractRecorder):
        return record
    if isinstance(record, str):
        if record not in _SHORTHANDS:
            raise ValueError(f"record must be a recorder or one of {sorted(_SHORTHANDS)}, got {record!r}")
        return _SHORTHANDS[record](forecaster, n_bins)
    if isinstance(record, (tuple, list)):
        return _Several(tuple(resolve_recorder(r, forecaster, n_bins) for r in record))
    if isinstance(record, dict):
        return _Several({k: resolve_recorder(r, forecaster, n_bins) for k, r in record.items()})
    raise ValueError(f"record must be a recorder, a tuple or dict of recorders, or a shorthand string; got {type(record).__name__}")


def stack_outputs(pieces: list, axis: int) -> Any:
    """Concatenate per-chunk outputs along the round axis (host-side NumPy)."""
    import numpy as np

    return jax.tree_util.tree_map(lambda *xs: np.concatenate([np.asarray(x) for x in xs], axis=axis), *pieces)
