r"""Blackwell forecasting, Algorithm 1 of Marx, Kuleshov, Ermon et al. (2024, §4.1).

Marx, Kuleshov, Ermon et al. (2024), *Calibrated Probabilistic Forecasts for Arbitrary Sequences*
(TMLR); equation, proposition and theorem numbers below are theirs.

$\bar\pi_0 = 0$; in round $t$ a half-space oracle returns $p_t$ with
$\max_y \langle \bar\pi_{t-1}, \pi(x_t, p_t, y)\rangle \le 0$ (Eq. 4), the outcome $y_t$ is
revealed and $\bar\pi_t = \frac{t-1}{t}\bar\pi_{t-1} + \frac1t\pi(x_t, p_t, y_t)$.

Theorem 4.3 (with Proposition 4.1): $\|\bar\pi_T\|_2^2 \le B/T + \frac2T\sum_t
\langle\bar\pi_{t-1}, \pi_t\rangle \le B/T$ for every sequence, $B = \sup\|\pi\|^2$. For a
direct sum with normalised blocks each block obeys $\|\bar\pi^{(i)}_T\|^2 \le nB_i/T$
(Prop. 4.4); for regret coordinates the oracle is given the positive part of $\bar\pi$ and
the bound holds for $\|(\bar\pi_T)_+\|$ (Prop. A.5).

The running mean is kept **exactly as a sum and an integer count** (divided only when used),
never by the recursive update above, whose rounding errors compound over $10^6$ rounds.
The certificate $\max_y\langle\bar\pi_{t-1}, \pi(x_t, p_t, y)\rangle$ — computed by the
oracle before the outcome — is published as ``Forecast.certificate``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

from ..core.types import AbstractForecaster, Forecast
from ..payoffs.base import AbstractPayoff, direction
from ..payoffs.oracles import AbstractOracle

__all__ = ["BlackwellForecaster", "BlackwellState"]


class BlackwellState(NamedTuple):
    """Algorithm 1's state.

    Attributes:
        total: $\\sum_{s \\le t} \\pi(x_s, p_s, y_s)$, shape ``(d,)``.
        count: $t$ (int32).
    """

    total: Float[Array, " d"]
    count: Int[Array, ""]

    def mean(self) -> Float[Array, " d"]:
        """$\\bar\\pi_t$ (0 before the first round)."""
        return self.total / jnp.maximum(self.count, 1).astype(self.total.dtype)


class BlackwellForecaster(AbstractForecaster):
    r"""Algorithm 1 of Marx et al. (2024): play what a half-space oracle returns for $\bar\pi_{t-1}$.

    Attributes:
        payoff: the payoff $\pi$ (``payoff(x, forecast.public, y)`` after each round).
        oracle: a half-space oracle for that payoff (:mod:`jcalib.payoffs.oracles`), called
            with the direction $\bar\pi_{t-1}$ (positive part on the payoff's semi-consistent
            coordinates).

    Example:
        >>> import jax, jcalib
        >>> from jcalib.payoffs import KakadeFoster
        >>> f = BlackwellForecaster.from_oracle(KakadeFoster(10))
        >>> traj = jcalib.core.play(f, jcalib.natures.Contrarian(), 500, key=jax.random.key(0))
        >>> bool((traj.certificate <= 1e-6).all())
        True

    References:
        Marx et al. (2024), Algorithm 1, Proposition 4.1, Theorem 4.3, Proposition 4.4, App. A.1.
    """

    payoff: AbstractPayoff
    oracle: AbstractOracle

    def __check_init__(self):
        if not isinstance(self.payoff, AbstractPayoff):
            raise ValueError(f"payoff must be an AbstractPayoff, got {type(self.payoff).__name__}")
        if not isinstance(self.oracle, AbstractOracle):
            raise ValueError(f"oracle must be an AbstractOracle, got {type(self.oracle).__name__}")

    @classmethod
    def from_oracle(cls, oracle: AbstractOracle) -> "BlackwellForecaster":
        """Algorithm 1 with the payoff the oracle is built for."""
        return cls(oracle.payoff, oracle)

    def init(self, key: PRNGKeyArray) -> BlackwellState:
        fdt = jnp.result_type(float)
        return BlackwellState(jnp.zeros((self.payoff.dim,), fdt), jnp.zeros((), jnp.int32))

    def predict(self, state: BlackwellState, x: Any, key: PRNGKeyArray) -> Forecast:
        return self.oracle(direction(self.payoff, state.mean()), x, key)

    def payoff_of(self, x, forecast: Forecast, y) -> Float[Array, " d"]:
        """$\\pi(x_t, p_t, y_t)$ with $p_t$ the published (mixed) forecast."""
        return self.payoff(x, forecast.public, y)

    def update(self, state: BlackwellState, x: Any, forecast: Forecast, y) -> BlackwellState:
        pi = self.payoff_of(x, forecast, y).astype(state.total.dtype)
        return BlackwellState(state.total + pi, state.count + 1)
