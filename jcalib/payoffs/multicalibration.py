r"""The groups × bins payoff of online multicalibration and its half-space oracle.

Online multicalibration (Gupta, Jung, Noarov, Pai, Roth 2022, *Online multivalid learning:
means, moments, and prediction intervals*, ITCS, the mean-multicalibration objective): the
context $x_t$ says which groups of a family the round belongs to — memberships
$g(x_t) \in [0, 1]^G$, overlapping — and the forecasts must be calibrated on every group's
subsequence, at every forecast level. As a Blackwell payoff (the §3 calibration payoff of
Marx, Kuleshov, Ermon et al. 2024, *Calibrated Probabilistic Forecasts for Arbitrary
Sequences*, one block per group):
$$\pi_{g,v}(x, p, y) = g(x)_g\; w_v(p)\,(p - y),\qquad g = 1..G,\ v = 0, \dots, m,$$
with $w_v$ the tent partition of unity on the grid $\{0, 1/m, \dots, 1\}$
(:func:`~jcalib.payoffs.tent_weights`). $\bar\pi_{g,\cdot}$ is group $g$'s (tent-binned)
calibration vector divided by $T$. Consistent ($\mathbb E_{y\sim p}\pi = 0$) and bounded by
$B = \sup_x \sum_g g(x)_g^2 \le k$ when each round belongs to at most $k$ groups
(``max_overlap``).

The oracle (:class:`MulticalibrationOracle`) reduces to Kakade–Foster's fixed point (Marx et al.
2024, App. C.2.1): $\langle c, \pi\rangle = \big(\sum_v w_v(p)\,\tilde c_v\big)(p - y)$ with the
group-aggregated direction $\tilde c_v = \sum_g g(x)_g\,c_{g,v}$, so the forecast
$p = $ :func:`~jcalib.payoffs.tent_root` $(\tilde c)$ has certificate $\le 0$ for every
$y \in [0, 1]$ (0 in the interior).
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from .._validation import BINS, Int
from ..core.types import Forecast
from .base import AbstractPayoff
from .binary import tent_weights
from .oracles import AbstractOracle, tent_root

__all__ = ["MulticalibrationOracle", "MulticalibrationPayoff"]

_GROUPS = Int(1, 2**20)


def _memberships(x, n_groups: int, dtype):
    g = jnp.asarray(x).astype(dtype)
    if g.shape != (n_groups,):
        raise ValueError(f"the context must be the round's memberships, shape ({n_groups},), got {tuple(g.shape)}")
    return g


class MulticalibrationPayoff(AbstractPayoff):
    r"""$\pi_{g,v}(x, p, y) = x_g\,w_v(p)\,(p - y)$ over $G$ groups × $(m+1)$ grid points.

    The context ``x`` is the round's memberships, shape ``(G,)`` in $[0, 1]$; the output is
    flattened group-major, ``(G (m+1),)``. $B = $ ``max_overlap`` (each round in at most that
    many groups; default $G$).

    Attributes:
        n_groups: $G$ (static).
        n_bins: $m$, grid cells (static; $m + 1$ points).
        max_overlap: $k$, the most groups a round belongs to (static; ``None``: $G$).

    Example:
        >>> import jax.numpy as jnp
        >>> pi = MulticalibrationPayoff(2, 4)
        >>> v = pi(jnp.array([1.0, 0.0]), jnp.asarray(0.3), jnp.asarray(1))
        >>> round(float(v[1]), 2), round(float(v[2]), 2), float(jnp.abs(v[5:]).sum())   # group 1 only
        (-0.56, -0.14, 0.0)
    """

    n_groups: int = eqx.field(static=True, converter=_GROUPS.converter("n_groups"))
    n_bins: int = eqx.field(static=True, converter=BINS.converter("n_bins"))
    max_overlap: int | None = eqx.field(static=True, default=None, converter=Int(1, 2**20, optional=True).converter("max_overlap"))

    @property
    def dim(self) -> int:
        return self.n_groups * (self.n_bins + 1)

    def __call__(self, x, forecast, y):
        p = jnp.asarray(forecast)
        g = _memberships(x, self.n_groups, p.dtype)
        cell = tent_weights(p, self.n_bins) * (p - jnp.asarray(y).astype(p.dtype))
        return (g[:, None] * cell[None, :]).reshape(-1)

    def expect(self, x, forecast, q):
        """$\\mathbb E_{y\\sim\\mathrm{Bernoulli}(q)}\\pi = x_g\\,w_v(p)(p - q)$."""
        return self(x, forecast, q)

    def bound(self) -> float:
        return float(self.n_groups if self.max_overlap is None else min(self.max_overlap, self.n_groups))


class MulticalibrationOracle(AbstractOracle):
    r"""Half-space oracle for :class:`MulticalibrationPayoff`: Kakade–Foster's fixed point on
    the group-aggregated direction.

    For direction $c \in \mathbb R^{G\times(m+1)}$ and memberships $x$, let
    $\tilde c = x^\top c \in \mathbb R^{m+1}$; the forecast is $p = $ ``tent_root``$(\tilde c)$,
    and $\langle c, \pi(x, p, y)\rangle = \tilde g(p)\,(p - y)$ with
    $\tilde g(p) = \sum_v w_v(p)\tilde c_v$, which is 0 at an interior root, and
    $\le 0$ at $p = 0$ ($\tilde c_0 \ge 0$) and $p = 1$ ($\tilde c_m \le 0$) — Eq. (4) of
    Marx et al. (2024) holds exactly, so Algorithm 1 gets Theorem 4.3's bound
    $\|\bar\pi_T\|_2^2 \le B/T$ against every sequence. Work $O(G\,m)$ per round.

    Attributes:
        n_groups: $G$ (static).
        n_bins: $m$ (static).
        max_overlap: as in :class:`MulticalibrationPayoff`.

    References:
        Gupta, Jung, Noarov, Pai, Roth (2022); Marx, Kuleshov, Ermon et al. (2024),
        Algorithm 1, Eq. (4), Theorem 4.3, App. C.2.1.
    """

    n_groups: int = eqx.field(static=True, converter=_GROUPS.converter("n_groups"))
    n_bins: int = eqx.field(static=True, converter=BINS.converter("n_bins"))
    max_overlap: int | None = eqx.field(static=True, default=None, converter=Int(1, 2**20, optional=True).converter("max_overlap"))

    @property
    def payoff(self) -> MulticalibrationPayoff:
        return MulticalibrationPayoff(self.n_groups, self.n_bins, self.max_overlap)

    def __call__(self, c: Float[Array, " d"], x, key: PRNGKeyArray) -> Forecast:
        c = jnp.asarray(c)
        g = _memberships(x, self.n_groups, c.dtype)
        agg = g @ c.reshape(self.n_groups, self.n_bins + 1)
        f, _, _ = tent_root(agg)
        slope = jnp.dot(tent_weights(f, self.n_bins), agg)
        cert = jnp.maximum(slope * f, slope * (f - 1))  # max over y in [0, 1] of slope (f - y)
        return Forecast(f, f, cert)
