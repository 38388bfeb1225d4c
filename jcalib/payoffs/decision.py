r"""Decision calibration and swap regret for a utility $u(a, y, x)$ over $K$ actions (Marx et al. 2024, §3).

- :class:`DecisionCalibration`: $\pi_a = \mathbb E_{y\sim p} u(a, y, x) - u(a, y_t, x)$: the
  forecast's predicted utility of every action matches the realised one on average.
- :class:`SwapRegret`: $\pi_{a,a'} = \mathbb 1\{a' = \delta(p, x)\}\,(\mathbb E_{y\sim p}
  u(a,y,x) - u(a,y_t,x))$, $\delta(p,x) = \arg\max_a \mathbb E_{y\sim p}u(a,y,x)$ the Bayes
  action: calibration conditional on the recommended action, which bounds swap regret. The
  indicator is discontinuous in $p$ (Condition 3 fails at ties); smooth it if an oracle needs it.

Both are consistent: $\mathbb E_{y\sim p}\pi = 0$. The forecast $p$ is either a binary
probability (a float: $\mathbb E_p u = p\,u(a,1,x) + (1-p)\,u(a,0,x)$) or a distribution
(an :class:`~jcalib.distributions.AbstractDistribution`, through its ``expect``; e.g.
:class:`jcalib.distributions.PiecewiseConstant`, exact for utilities polynomial of low degree
on each bin). ``utility(y, x)`` returns the ``(K,)`` utilities of all actions.
There is no decision-calibration oracle in App. C: use ORCA.
"""

from __future__ import annotations

from typing import Callable

import equinox as eqx
import jax
import jax.numpy as jnp

from .._grid import size_field
from .._validation import Real
from ..core.batching import as_traced_module
from ..distributions import AbstractDistribution
from .base import AbstractPayoff

__all__ = ["DecisionCalibration", "SwapRegret", "expected_utility"]


def expected_utility(utility: Callable, forecast, x):
    """$\\mathbb E_{y\\sim p} u(\\cdot, y, x)$, shape ``(K,)``.

    Compiled once per ``utility`` (the same function object), forecast type and shapes: numbers
    in ``p`` and ``x`` are traced, so eager calls with new forecasts or contexts reuse it.
    """
    if not isinstance(forecast, AbstractDistribution):
        forecast = jnp.asarray(forecast)
    return _expected_utility(utility, forecast, as_traced_module(x))


@eqx.filter_jit
def _expected_utility(utility: Callable, p, x):
    # A distribution's `expect` takes its integrand as a static argument: the closure over x
    # made here is new on every call, so it is built inside this jit (traced once per utility
    # and shapes), never on an eager call (which would compile `expect` again every time).
    if isinstance(p, AbstractDistribution):
        def fn(ys):
            u = jax.vmap(jax.vmap(lambda y: utility(y, x)))(ys)  # (n, m, K)
            return jnp.moveaxis(u, -1, 0)

        return p.expect(fn)
    p = jnp.asarray(p)
    return p * utility(jnp.ones((), p.dtype), x) + (1 - p) * utility(jnp.zeros((), p.dtype), x)


def _utility_gap(utility, x, p, y):
    """``(E_p u(·, x), E_p u(·, x) − u(y, x))`` over the actions: the expected utilities and the gap
    that decision calibration and swap regret both average."""
    eu = expected_utility(utility, p, x)
    return eu, eu - jnp.asarray(utility(jnp.asarray(y).astype(eu.dtype), x), eu.dtype)


class DecisionCalibration(AbstractPayoff):
    r"""$\pi_a(x, p, y) = \mathbb E_{y'\sim p}u(a,y',x) - u(a,y,x)$, $a = 1..K$ (Marx et al. 2024, §3).

    Attributes:
        utility: ``(y, x) -> (K,)`` utilities of the $K$ actions.
        n_actions: $K$ (static).
        utility_range: $\sup u - \inf u$ (static); $B = K\cdot$ ``utility_range``$^2$.
    """

    utility: Callable
    n_actions: int = size_field("n_actions", lambda n: n, what="its coordinates")
    utility_range: float = eqx.field(static=True, default=1.0, converter=Real(0.0, open_lo=True, static=True).converter("utility_range"))

    def __check_init__(self):
        if not callable(self.utility):
            raise ValueError(f"utility must be callable as utility(y, x) -> (n_actions,) utilities, got {type(self.utility).__name__}")

    @property
    def dim(self) -> int:
        return self.n_actions

    def __call__(self, x, forecast, y):
        return _utility_gap(self.utility, x, forecast, y)[1]

    def bound(self) -> float:
        return float(self.n_actions * self.utility_range**2)


class SwapRegret(AbstractPayoff):
    r"""$\pi_{a,a'} = \mathbb 1\{a' = \delta(p,x)\}(\mathbb E_p u(a,\cdot,x) - u(a,y,x))$, flattened ``[a', a]`` (Marx et al. 2024, §3).

    Attributes:
        utility: ``(y, x) -> (K,)``.
        n_actions: $K$ (static).
        utility_range: $\sup u - \inf u$ (static); $B = K\cdot$ ``utility_range``$^2$ (one row
            $a'$ is non-zero).
    """

    utility: Callable
    n_actions: int = size_field("n_actions", lambda n: n * n, what="its n_actions**2 coordinates")
    utility_range: float = eqx.field(static=True, default=1.0, converter=Real(0.0, open_lo=True, static=True).converter("utility_range"))

    def __check_init__(self):
        if not callable(self.utility):
            raise ValueError(f"utility must be callable as utility(y, x) -> (n_actions,) utilities, got {type(self.utility).__name__}")

    @property
    def dim(self) -> int:
        return self.n_actions**2

    def __call__(self, x, forecast, y):
        eu, gap = _utility_gap(self.utility, x, forecast, y)
        row = jax.nn.one_hot(jnp.argmax(eu), self.n_actions, dtype=eu.dtype)
        return (row[:, None] * gap[None, :]).reshape(-1)

    def bound(self) -> float:
        return float(self.n_actions * self.utility_range**2)
