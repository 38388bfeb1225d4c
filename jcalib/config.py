"""Library-wide settings: the switch for in-graph input checks.

Concrete inputs are always checked at the Python boundary (a ``ValueError`` or ``TypeError``
naming the argument). Traced inputs — inside a user's ``jit``, ``vmap``, ``grad`` or ``scan`` —
are checked in the graph with ``eqx.error_if`` where the check is cheap (a reduction over the
input: NaN, ±inf, probabilities outside [0, 1], labels outside their classes, negative weights).
Those checks are on by default; in a hot loop that has already validated its data they can be
turned off:

>>> import jcalib
>>> with jcalib.config.checks(False):
...     pass  # functions traced here carry no eqx.error_if checks

The switch is read **at trace time**: a function compiled while checks were on keeps them (and
one compiled while they were off keeps none) until it is traced again. With checks off a bad
traced input gives an unspecified value (NaN, or a number computed from the clipped input).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from ._validation import Bool, declare

__all__ = ["checks", "checks_enabled", "set_checks"]

_CHECKS: contextvars.ContextVar[bool] = contextvars.ContextVar("jcalib_checks", default=True)


@declare()
def checks_enabled() -> bool:
    """Whether in-graph (``eqx.error_if``) input checks are staged into functions traced now."""
    return _CHECKS.get()


@declare(enabled=Bool())
def set_checks(enabled: bool) -> None:
    """Turn in-graph input checks on or off for everything traced afterwards (in this context).

    Args:
        enabled: a ``bool``.

    Raises:
        TypeError: ``enabled`` is not a bool (NumPy bools are).
    """
    _CHECKS.set(enabled)


@declare(enabled=Bool())
@contextlib.contextmanager
def checks(enabled: bool) -> Iterator[None]:
    """Context manager: in-graph input checks on (``True``) or off (``False``) inside the block.

    Example:
        >>> import jax, jax.numpy as jnp, jcalib
        >>> with jcalib.config.checks(False):
        ...     fast = jax.jit(jcalib.metrics.ece).lower(jnp.ones(4) / 2, jnp.ones(4, int)).compile()
    """
    token = _CHECKS.set(enabled)
    try:
        yield
    finally:
        _CHECKS.reset(token)
