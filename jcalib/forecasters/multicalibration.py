r"""Online multicalibration: Blackwell forecasting (Marx et al. 2024, Algorithm 1) with a groups × bins payoff.

Gupta, Jung, Noarov, Pai, Roth (2022), *Online multivalid learning: means, moments, and
prediction intervals* (ITCS), ask for forecasts of binary (or $[0,1]$) outcomes that are
calibrated on every group of an overlapping family, against an adversary who picks the
context and the outcome. Marx, Kuleshov, Ermon et al. (2024), *Calibrated Probabilistic
Forecasts for Arbitrary Sequences* (TMLR), Algorithm 1, gives it with the payoff
$\pi_{g,v}(x, p, y) = g(x)_g\,w_v(p)\,(p - y)$ of
:class:`~jcalib.payoffs.MulticalibrationPayoff` and the oracle
:class:`~jcalib.payoffs.MulticalibrationOracle`.

**Guarantee** (Theorem 4.3 with the exact oracle): for every sequence of contexts and outcomes,
adaptive ones included, with each round in at most $k$ groups ($B = k$),
$$\|\bar\pi_T\|_2 \le \sqrt{k/T}, \qquad\text{so for every group } g:\quad
\frac1T\sum_{v=0}^m\Big|\sum_{t\le T} g(x_t)_g\,w_v(p_t)\,(p_t - y_t)\Big| \le \sqrt{(m+1)\,k/T}$$
(Cauchy–Schwarz over the $m+1$ grid points): each group's tent-binned calibration error,
counted over all $T$ rounds, decays at the rate $T^{-1/2}$, uniformly over groups and without a
$\log G$ factor. Gupta et al. (2022) reach the same $T^{-1/2}$ rate with a factor that grows
like $\sqrt{\log G}$, by a multiplicative-weights reduction; the Blackwell version trades the
$\log G$ for the overlap $k$ and keeps $O(Gm)$ memory and work per round.

The forecaster is deterministic (certificate $\le 0$ every round), so the bound holds round by
round with no expectation; the tests check it exactly and fit the exponent of $\|\bar\pi_T\|$
in $T$ on an adversarial sequence whose groups overlap.
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from .._validation import BINS, Int
from ..core.types import AbstractForecaster, Forecast
from ..payoffs.multicalibration import MulticalibrationOracle, MulticalibrationPayoff
from .blackwell import BlackwellState

__all__ = ["OnlineMulticalibration"]

_GROUPS = Int(1, 2**20)


class OnlineMulticalibration(AbstractForecaster):
    r"""Online multicalibration over $G$ overlapping groups: Algorithm 1 of Marx et al. (2024) with the
    groups × bins payoff (module docstring: the payoff, the oracle, the guarantee).

    The context of each round is its memberships $g(x_t) \in [0, 1]^G$ (shape ``(G,)``); the
    forecast $p_t \in [0, 1]$ is Kakade–Foster's fixed point of the group-aggregated direction
    $\tilde c = g(x_t)^\top \bar\pi_{t-1}$. The state is :class:`BlackwellState` (the running sum
    of payoffs and the round count), so $\bar\pi_T$ is exact.

    Attributes:
        n_groups: $G$ (static).
        n_bins: $m$, grid cells (static).
        max_overlap: $k$, the most groups a round belongs to (static; ``None``: $G$), the
            bound $B$ of the guarantee.

    Example:
        >>> import jax, jax.numpy as jnp, jcalib
        >>> y = (jnp.arange(400) % 3 == 0).astype(jnp.int32)
        >>> x = jnp.stack([jnp.ones(400), jnp.where(jnp.arange(400) % 3 == 0, 1.0, 0.0)], 1)  # all; every third
        >>> f = OnlineMulticalibration(n_groups=2, n_bins=10)
        >>> traj = jcalib.core.play(f, jcalib.natures.Replay(y, x), 400, key=jax.random.key(0))
        >>> bool(jnp.abs(traj.forecast[-3:] - jnp.array([0.0, 0.0, 1.0])).max() < 0.2)
        True

    References:
        Gupta, Jung, Noarov, Pai, Roth (2022); Marx, Kuleshov, Ermon et al. (2024),
        Algorithm 1, Theorem 4.3, App. C.2.1.
    """

    n_groups: int = eqx.field(static=True, converter=_GROUPS.converter("n_groups"))
    n_bins: int = eqx.field(static=True, default=10, converter=BINS.converter("n_bins"))
    max_overlap: int | None = eqx.field(static=True, default=None, converter=Int(1, 2**20, optional=True).converter("max_overlap"))

    outcome_space = "binary"

    @property
    def payoff(self) -> MulticalibrationPayoff:
        """The payoff $\\pi$ whose running mean the forecaster drives to 0."""
        return MulticalibrationPayoff(self.n_groups, self.n_bins, self.max_overlap)

    @property
    def oracle(self) -> MulticalibrationOracle:
        return MulticalibrationOracle(self.n_groups, self.n_bins, self.max_overlap)

    def init(self, key: PRNGKeyArray) -> BlackwellState:
        fdt = jnp.result_type(float)
        return BlackwellState(jnp.zeros((self.payoff.dim,), fdt), jnp.zeros((), jnp.int32))

    def predict(self, state: BlackwellState, x: Any, key: PRNGKeyArray) -> Forecast:
        return self.oracle(state.mean(), x, key)

    def update(self, state: BlackwellState, x: Any, forecast: Forecast, y) -> BlackwellState:
        pi = self.payoff(x, forecast.public, y).astype(state.total.dtype)
        return BlackwellState(state.total + pi, state.count + 1)

    def group_errors(self, state: BlackwellState) -> Float[Array, " G"]:
        r"""Each group's tent-binned calibration error over the rounds so far, divided by $T$:
        $\sum_v |\bar\pi_{g,v}|$, shape ``(G,)`` (at most $\sqrt{(m+1)k/T}$)."""
        return jnp.sum(jnp.abs(state.mean().reshape(self.n_groups, self.n_bins + 1)), axis=1)
