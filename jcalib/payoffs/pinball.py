r"""Regret against an expert's quantile decisions under pinball losses (Marx et al. 2024, §5).

A decision maker who pays the pinball loss $\rho_\alpha(y - a)$, $\rho_\alpha(u) =
\max(\alpha u, (\alpha - 1)u)$, acts on a forecast $p$ with its Bayes action, the quantile
$Q_p(\alpha)$. :class:`PinballRegret` compares the loss of the forecast's action with the loss
of the expert's action $Q_{e(x)}(\alpha)$, one coordinate per level:
$$\pi_j(x, p, y) = \rho_{\alpha_j}\big(y - Q_p(\alpha_j)\big) - \rho_{\alpha_j}\big(y - Q_{e(x)}(\alpha_j)\big).$$
It is the regret block of Theorem 5.2 for the decision losses $\ell_j(a, y) = \rho_{\alpha_j}(y-a)$
with the expert's Bayes actions as the comparator (the operator of Marx et al. 2024, §6.2, pays
$(1+\lambda)(y-a)_+ + (1-\lambda)(a-y)_+ = 2\rho_{(1+\lambda)/2}(y-a)$). It is
semi-consistent (Condition 4): $Q_p(\alpha)$ minimises $\mathbb E_{y\sim p}\rho_\alpha(y-a)$
over $a$, so $\mathbb E_{y\sim p}\pi_j \le 0$, and a forecaster that drives $(\bar\pi_T)_+$ to
zero (Proposition A.5) is asymptotically no worse than the expert's decisions at every level.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .._validation import Real
from ..scoring import pinball
from .base import AbstractExpectations, AbstractIntervalPayoff
from .interval import ExpertRegret, check_range

__all__ = ["PinballRegret"]


def _as_levels(levels) -> tuple:
    """``levels`` as a tuple of Python floats in (0, 1); a ``ValueError`` naming it otherwise."""
    if isinstance(levels, (str, bytes)) or not hasattr(levels, "__len__"):
        raise ValueError(f"levels must be a non-empty sequence of floats in (0, 1), got {levels!r}")
    out = []
    for a in np.asarray(levels, dtype=object).reshape(-1):
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, float, np.integer, np.floating)):
            raise ValueError(f"levels must be floats in (0, 1), got {a!r}")
        if not 0.0 < float(a) < 1.0:
            raise ValueError(f"levels must be floats in (0, 1), got {a!r}")
        out.append(float(a))
    if not out:
        raise ValueError("levels must be a non-empty sequence of floats in (0, 1), got none")
    return tuple(out)


class PinballRegret(AbstractExpectations, AbstractIntervalPayoff):
    r"""$\pi_j = \rho_{\alpha_j}(y - Q_p(\alpha_j)) - \rho_{\alpha_j}(y - Q_{e(x)}(\alpha_j))$ per level $\alpha_j$ (Marx et al. 2024, §5).

    $e(x)$ is the expert's forecast: ``x.expert`` for an
    :class:`~jcalib.payoffs.ExpertContext`, else ``x`` itself (as for
    :class:`~jcalib.payoffs.ExpertRegret`). Both forecasts need ``quantile``. Every coordinate
    is semi-consistent (:attr:`semi`). Unnormalised, in the outcome's units: $|\pi_j| \le
    \max(\alpha_j, 1-\alpha_j)\,|Q_p(\alpha_j) - Q_e(\alpha_j)|$, so
    $B = \sum_j \max(\alpha_j, 1-\alpha_j)^2 (hi - lo)^2$. Continuous in $y$ (no jumps).

    Attributes:
        levels: quantile levels in $(0, 1)$ (static; any sequence, kept as a tuple of floats).
        lo, hi: the outcome range (static).

    Example:
        >>> import jax.numpy as jnp
        >>> from jcalib.distributions import PiecewiseConstant
        >>> edges = (0.0, 0.5, 1.0)
        >>> p = PiecewiseConstant(jnp.array([0.5, 0.5]), edges)
        >>> e = PiecewiseConstant(jnp.array([0.9, 0.1]), edges)
        >>> pay = PinballRegret((0.5,))
        >>> [round(float(v), 4) for v in pay(e, p, 0.9)]  # medians 0.5 and 0.2778: p loses less
        [-0.1111]

    References:
        Marx et al. (2024) (Blackwell forecasting), §5, Theorem 5.2 and Proposition A.5; §6.2.
    """

    levels: tuple = eqx.field(static=True, converter=_as_levels)
    lo: float = eqx.field(static=True, default=0.0, converter=Real(static=True).converter("lo"))
    hi: float = eqx.field(static=True, default=1.0, converter=Real(static=True).converter("hi"))

    def __check_init__(self):
        check_range(self.lo, self.hi)

    @property
    def outcome_range(self) -> tuple[float, float]:
        return float(self.lo), float(self.hi)

    @property
    def dim(self) -> int:
        return len(self.levels)

    @property
    def semi(self) -> np.ndarray:
        return np.ones(self.dim, bool)

    def _actions(self, x, p, dtype):
        alpha = jnp.asarray(self.levels, dtype)
        e = ExpertRegret.expert_of(x)
        return alpha, jnp.asarray(p.quantile(alpha)).astype(dtype), jnp.asarray(e.quantile(alpha)).astype(dtype)

    def __call__(self, x, forecast, y):
        y = jnp.asarray(y)
        alpha, a_p, a_e = self._actions(x, forecast, y.dtype)
        return (pinball(a_p, y, alpha) - pinball(a_e, y, alpha)).astype(y.dtype)

    def expect_uniform(self, x, forecast, lo, hi):
        r"""$\mathbb E_{y\sim U[lo_k, hi_k]}\pi_j$ in closed form, ``(K, d)``.

        With $m = (lo+hi)/2$, $w = hi - lo$ and $c = \mathrm{clip}(a, lo, hi)$:
        $\mathbb E\rho_\alpha(y - a) = \alpha(m - a) + (c - lo)^2/(2w) + (a - hi)_+$
        (the second and third terms are $\mathbb E(a - y)_+$); $(a - lo)_+$ when $w = 0$.
        """
        lo, hi = jnp.asarray(lo), jnp.asarray(hi)
        alpha, a_p, a_e = self._actions(x, forecast, lo.dtype)
        lo_, hi_ = lo[:, None], hi[:, None]
        w = hi_ - lo_
        pos = w > 0

        def expected(a):
            c = jnp.clip(a[None, :], lo_, hi_)
            below = jnp.where(pos, (c - lo_) ** 2 / (2 * jnp.where(pos, w, 1)), 0) + jnp.maximum(a[None, :] - hi_, 0)
            return alpha[None, :] * ((lo_ + hi_) / 2 - a[None, :]) + below

        return expected(a_p) - expected(a_e)

    def bound(self) -> float:
        a = np.asarray(self.levels, np.float64)
        return float(np.sum(np.maximum(a, 1 - a) ** 2) * (self.hi - self.lo) ** 2)
