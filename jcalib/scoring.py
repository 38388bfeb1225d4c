r"""Proper scoring rules, as losses (lower is better), each with its Lipschitz constant.

Binary rules score a probability $p \in [0, 1]$ of the event $y = 1$ against $y \in \{0, 1\}$;
they are equinox modules, so a forecaster can hold one as a field and a sweep can vmap over
its settings. Every rule here is *strictly proper*: $\mathbb{E}_{y \sim \mathrm{Bern}(q)}
s(p, y)$ is uniquely minimised at $p = q$. Paper 001's recalibration game divides the regret
coordinate by the rule's Lipschitz constant $L$ in $p$ (paper 001, L152–154; SPEC §2), so
each rule states it:

| rule | $s(p, y)$ | $L$ on $[0, 1]$ |
| --- | --- | --- |
| :class:`Brier` | $(p - y)^2$ | 2 |
| :class:`Spherical` | $1 - p_y / \sqrt{p^2 + (1-p)^2}$ | $\approx 1.6164$ |
| :class:`LogScore` | $-\log \max(p_y, c)$ | $1/c$ (clipped; unbounded without the clip) |

with $p_1 = p$, $p_0 = 1 - p$. Log loss is not Lipschitz; :class:`LogScore` is clipped at
``clip`` and flags itself with ``lipschitz_bounded = False`` so algorithms whose guarantees
need a Lipschitz rule can refuse it.

For real outcomes: :func:`pinball` (quantile loss), :func:`squared_error`, and :func:`crps`
of a predictive distribution (closed form, delegated to the distribution's own ``crps``).
All functions are elementwise and vmappable.

Input checks: concrete arguments are checked at the Python boundary (``ValueError`` for $p$
outside $[0, 1]$ or NaN, $y \notin \{0, 1\}$; NaN or infinite real outcomes and predictions).
Traced arguments are **not** checked in the graph: the rules run inside forecasters' inner
loops (a bisection per round), where the forecasts are grid points by construction.
"""

from __future__ import annotations

import abc
import math

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from ._dtypes import float_dtype
from ._validation import as_float_array, check_binary_labels, check_binary_probs, check_finite, is_concrete

__all__ = [
    "AbstractScoringRule",
    "Brier",
    "LogScore",
    "Spherical",
    "crps",
    "pinball",
    "squared_error",
]


class AbstractScoringRule(eqx.Module):
    """A binary proper scoring rule $s(p, y)$, negatively oriented (a loss).

    Subclasses define :meth:`__call__` and the class attributes ``lipschitz`` (the constant in
    $p$ on $[0, 1]$, uniform over $y$) and ``lipschitz_bounded``.
    """

    lipschitz_bounded = True

    @abc.abstractmethod
    def __call__(self, p: ArrayLike, y: ArrayLike) -> Float[Array, "..."]:
        raise NotImplementedError  # abstract

    @property
    @abc.abstractmethod
    def lipschitz(self) -> float:
        raise NotImplementedError  # abstract

    def expected(self, p: ArrayLike, q: ArrayLike) -> Float[Array, "..."]:
        r"""$\mathbb{E}_{y \sim \mathrm{Bern}(q)}\, s(p, y) = q\, s(p, 1) + (1-q)\, s(p, 0)$."""
        q = jnp.asarray(q)
        one, zero = self(p, jnp.ones_like(q, jnp.int32)), self(p, jnp.zeros_like(q, jnp.int32))
        return q * one + (1 - q) * zero


def _checked(p, y):
    """``(p, y)`` as arrays of ``p``'s float dtype, after the concrete checks (tracers pass)."""
    if is_concrete(p):
        check_binary_probs(p, "p")
    if is_concrete(y):
        check_binary_labels(y, "y")
    p = jnp.asarray(p, float_dtype(p))
    return p, jnp.asarray(y).astype(p.dtype)


def _real(x, name):
    """A real prediction or outcome: numeric and, when concrete, finite."""
    return check_finite(as_float_array(x, name), name) if is_concrete(x) else x


def _broadcastable(**arrays):
    """The elementwise rules' arguments must broadcast together (else a ``ValueError`` naming them)."""
    shapes = {k: tuple(jnp.shape(v)) for k, v in arrays.items()}
    try:
        np.broadcast_shapes(*shapes.values())
    except ValueError:
        raise ValueError(f"arguments must broadcast together, got shapes {shapes}") from None


def _py(p, y):
    """$p_y$: the probability the forecast gave to the outcome that happened."""
    p, y = _checked(p, y)
    return y * p + (1 - y) * (1 - p), p


class Brier(AbstractScoringRule):
    r"""The Brier (quadratic) score $s(p, y) = (p - y)^2$; $L = 2$.

    Example:
        >>> float(Brier()(0.25, 1))
        0.5625
    """

    def __call__(self, p, y):
        p, y = _checked(p, y)
        return (p - y) ** 2

    @property
    def lipschitz(self) -> float:
        return 2.0


# max over p of |d/dp s(p, y)| = (1-p)/(2p²-2p+1)^{3/2} for y = 1 (by symmetry the same for
# y = 0), attained at the root p* = (7 - √17)/8 of 4p² - 7p + 2.
_P_STAR = (7 - math.sqrt(17)) / 8
_SPHERICAL_L = (1 - _P_STAR) / (2 * _P_STAR**2 - 2 * _P_STAR + 1) ** 1.5


class Spherical(AbstractScoringRule):
    r"""The spherical score as a loss, $s(p, y) = 1 - p_y / \sqrt{p^2 + (1-p)^2}$;
    $L = (1-p^\*)/(2p^{\*2} - 2p^\* + 1)^{3/2} \approx 1.6164$ at $p^\* = (7-\sqrt{17})/8$.

    Example:
        >>> round(float(Spherical()(1.0, 1)), 6)
        0.0
    """

    def __call__(self, p, y):
        py, p = _py(p, y)
        return 1 - py / jnp.sqrt(p**2 + (1 - p) ** 2)

    @property
    def lipschitz(self) -> float:
        return _SPHERICAL_L


class LogScore(AbstractScoringRule):
    r"""Log loss $s(p, y) = -\log \max(p_y, c)$, clipped at $c$ = ``clip``.

    Not Lipschitz without the clip; with it, $L = 1/c$, which is large, so bounds that scale
    with $L$ are loose. ``lipschitz_bounded`` is ``False``: algorithms whose guarantee needs a
    Lipschitz rule (paper 001's recalibrator) refuse it unless told otherwise.

    Attributes:
        clip: the smallest probability scored, in (0, 1/2).
    """

    clip: float = 1e-4
    lipschitz_bounded = False

    def __check_init__(self):
        if not (isinstance(self.clip, (int, float)) and 0 < self.clip < 0.5):
            raise ValueError(f"clip must be a number in (0, 1/2), got {self.clip!r}")

    def __call__(self, p, y):
        py, _ = _py(p, y)
        return -jnp.log(jnp.maximum(py, jnp.asarray(self.clip, py.dtype)))

    @property
    def lipschitz(self) -> float:
        return 1.0 / self.clip


def pinball(pred: ArrayLike, y: ArrayLike, alpha: ArrayLike) -> Float[Array, "..."]:
    r"""Quantile (pinball) loss of a predicted $\alpha$-quantile: $\rho_\alpha(y - \hat q)$ with
    $\rho_\alpha(u) = u(\alpha - 1[u < 0])$. Strictly consistent for the $\alpha$-quantile.

    Example:
        >>> float(pinball(0.0, 1.0, 0.9))
        0.9
    """
    pred, y = _real(pred, "pred"), _real(y, "y")
    if is_concrete(alpha):
        check_binary_probs(alpha, "alpha")
    _broadcastable(pred=pred, y=y, alpha=alpha)
    dt = float_dtype(pred, y, alpha)
    u = jnp.asarray(y, dt) - jnp.asarray(pred, dt)
    a = jnp.asarray(alpha, dt)
    return jnp.maximum(a * u, (a - 1) * u)


def squared_error(pred: ArrayLike, y: ArrayLike) -> Float[Array, "..."]:
    r"""$(\hat y - y)^2$: strictly consistent for the mean."""
    pred, y = _real(pred, "pred"), _real(y, "y")
    _broadcastable(pred=pred, y=y)
    dt = float_dtype(pred, y)
    return (jnp.asarray(pred, dt) - jnp.asarray(y, dt)) ** 2


def crps(dist, y: ArrayLike) -> Float[Array, "..."]:
    r"""Continuous ranked probability score $\int (F(z) - 1[y \le z])^2\,dz$ of a predictive
    distribution, in closed form: calls ``dist.crps(y)`` (see :mod:`jcalib.distributions`).
    Strictly proper; equal to $\mathbb{E}|X - y| - \tfrac12 \mathbb{E}|X - X'|$.
    """
    if not hasattr(dist, "crps"):
        raise ValueError(f"crps needs a distribution with a crps method, got {type(dist).__name__}")
    return dist.crps(_real(y, "y"))
