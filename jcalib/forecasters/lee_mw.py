r"""Lee–Noarov–Pai–Roth (2022) multi-objective multiplicative weights for recalibration (Okoroafor et al. 2024, §6).

Okoroafor, Kleinberg, Sun (2024), *Faster Recalibration of an Online Predictor via
Approachability*, AISTATS.

Okoroafor et al. (2024), §6.2 (eqs 40–42), cast recalibration as online multi-objective optimisation with
$d = 2^{m+1} + 1$ loss rows: $\langle\sigma, u_{\mathrm{cal}}\rangle$ for every sign vector
$\sigma \in \{\pm1\}^{m+1}$ (their maximum is $\|u_{\mathrm{cal}}\|_1$) and the regret row
$u_{\mathrm{reg}} = s(p, y) - s(q, y)$ (not divided by $L$; losses bounded by $C = \max(1, L)$).
Multiplicative weights put weight $\propto e^{\eta \mathcal L^j}$ on row $j$, with
$\mathcal L^j$ its cumulative loss, and play the minimiser of the weighted loss's maximum over
$y$.

**Closed form** (jcalib's derivation; Okoroafor et al.'s eqs 43–45 give the O(m) dynamic programme). With
$U$ the cumulative calibration vector and $U_{\mathrm{reg}}$ the cumulative regret,
$\sum_\sigma e^{\eta\langle\sigma, U\rangle} = \prod_i 2\cosh(\eta U_i)$ and
$\sum_\sigma e^{\eta\langle\sigma,U\rangle}\sigma_i = \tanh(\eta U_i)\prod_k 2\cosh(\eta U_k)$, so
the weighted loss is, up to a positive factor, the halfspace objective of Okoroafor et al.'s
(2024) oracle with

$$\theta_i = \tanh(\eta U_i),\qquad \lambda = \frac{e^{\eta U_{\mathrm{reg}}}}{\prod_i 2\cosh(\eta U_i)}
= \exp\Big(\eta U_{\mathrm{reg}} - \sum_i \log 2\cosh(\eta U_i)\Big)$$

(computed in log space). We reuse :class:`~jcalib.forecasters.ApproachabilityOracle`
with regret weight $\lambda L$ (the oracle divides the regret coordinate by $L$) instead of an
exact minimax solve: the oracle's value is within the AMF bound Lee et al.'s Theorem needs
(departure from the paper, which solves the minimax problem). Per round: $O(m)$ for
$\sum_i \log 2\cosh(\eta U_i)$ (the paper's cost), $O(\log m)$ for the oracle.

**Guarantee** (Okoroafor et al. 2024, §6.2, from Lee et al.'s Theorem 15): calibration and average regret
both $\le$ the AMF value $+\ O(C\sqrt{\ln d / T})$, i.e. $O(\varepsilon + \sqrt{m/T})$ — the
calibration bound of Algorithm 1 with a worse regret dependence.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

from .._grid import GRID_WHY, MAX_GRID, grid_points, size_field
from ..core.keys import check_horizon
from .._validation import check_hyper, check_positive_int, declare, Real, RealArray
from ..core.types import AbstractForecaster, Forecast
from ..scoring import AbstractScoringRule, Brier
from .approachability import ApproachabilityOracle, check_context_prob

__all__ = ["LeeMultiObjectiveMW", "LeeMWState", "lee_weights"]


def _log2cosh(x):
    a = jnp.abs(x)
    return a + jnp.log1p(jnp.exp(-2 * a))


@declare(U=RealArray(ndim=1), U_reg=Real(), eta=Real(0.0, open_lo=True))
def lee_weights(U, U_reg, eta) -> tuple[Float[Array, " m+1"], Float[Array, ""]]:
    r"""The MW weighted objective as a halfspace normal: $\theta_i = \tanh(\eta U_i)$ and
    $\lambda = \exp(\eta U_{\mathrm{reg}} - \sum_i \log 2\cosh(\eta U_i))$ (log space; $\log\lambda$
    clipped to $[-80, 80]$ so float32 neither overflows nor flushes to a spurious 0).

    Raises:
        ValueError: ``U`` not a finite non-empty vector, ``U_reg`` not a finite real, or ``eta``
            not a positive finite real (in the graph when traced).

    Example:
        >>> th, lam = lee_weights(jnp.zeros(3), 0.0, 1.0)
        >>> th.tolist(), round(float(lam), 4)
        ([0.0, 0.0, 0.0], 0.125)
    """
    U = jnp.asarray(U)
    eta = jnp.asarray(eta).astype(U.dtype)
    log_lam = eta * jnp.asarray(U_reg).astype(U.dtype) - jnp.sum(_log2cosh(eta * U))
    return jnp.tanh(eta * U), jnp.exp(jnp.clip(log_lam, -80.0, 80.0))


_lee_weights = lee_weights.__wrapped__  # inside the rounds: on the forecaster's own state


class LeeMWState(NamedTuple):
    """Lee et al.'s MW state: the cumulative (expected) loss vector.

    Attributes:
        cal: $U_i = \\sum_s w_s(p_i)(y_s - p_i)$, ``(m + 1,)``.
        reg: $U_{\\mathrm{reg}} = \\sum_s [s(w_s, y_s) - s(q_s, y_s)]$ (not divided by L).
        t: rounds (int32).
    """

    cal: Float[Array, " m+1"]
    reg: Float[Array, ""]
    t: Int[Array, ""]


class LeeMultiObjectiveMW(AbstractForecaster):
    r"""Lee–Noarov–Pai–Roth multiplicative weights for recalibration (Okoroafor et al. 2024, §6, eqs 40–45).

    Each round: $(\theta, \lambda)$ = :func:`lee_weights`$(U, U_{\mathrm{reg}}, \eta)$; the
    published mixture is the halfspace oracle's at $(\theta, \lambda L)$; ``Forecast.value`` is
    the draw. After $y_t$ the cumulative losses add the mixture's expected loss vector.

    Attributes:
        n_bins: grid size $m$ (static).
        learning_rate: $\eta$ (traced). :meth:`for_horizon` uses
            $\eta = \sqrt{\ln d / (4T)}/C$, $d = 2^{m+1} + 1$, $C = \max(1, L)$ (the constant 4
            is jcalib's choice).
        scoring: a Lipschitz proper scoring rule (default Brier).

    Example:
        >>> import jax, jcalib
        >>> f = LeeMultiObjectiveMW.for_horizon(1000)
        >>> traj = jcalib.core.play(f, jcalib.natures.TwoLevelModel(), 1000, key=jax.random.key(0))
        >>> traj.forecast.shape
        (1000,)

    References:
        D. Lee, G. Noarov, M. Pai, A. Roth (2022), *Online minimax multiobjective optimization:
        multicalibeating and other applications*, NeurIPS; Okoroafor et al. (2024), §6.
    """

    outcome_space = "binary"
    needs_context = True

    n_bins: int = size_field("n_bins", what="its per-grid-point state", hi=MAX_GRID, why=GRID_WHY)
    learning_rate: float
    scoring: AbstractScoringRule = eqx.field(default_factory=Brier)

    def __check_init__(self):
        check_positive_int(self.n_bins, "n_bins")
        if not isinstance(self.scoring, AbstractScoringRule):
            raise ValueError(f"scoring must be a rule from jcalib.scoring, got {type(self.scoring).__name__}")
        if not self.scoring.lipschitz_bounded:
            raise ValueError(f"scoring={type(self.scoring).__name__} is not Lipschitz; use Brier or Spherical")
        check_hyper(self.learning_rate, "learning_rate", 0.0, open_lo=True)

    @classmethod
    def for_horizon(cls, T: int, n_bins: int | None = None, scoring: AbstractScoringRule | None = None) -> "LeeMultiObjectiveMW":
        r"""$m = \lceil T^{1/3}\rceil$ by default, $\eta = \sqrt{\ln d/(4T)}/\max(1, L)$."""
        T = check_horizon(T)
        m = max(1, math.ceil(T ** (1 / 3) - 1e-9)) if n_bins is None else check_positive_int(n_bins, "n_bins")
        scoring = Brier() if scoring is None else scoring
        ln_d = (m + 1) * math.log(2) + math.log1p(2.0 ** -(m + 1))
        return cls(n_bins=m, learning_rate=math.sqrt(ln_d / (4 * T)) / max(1.0, scoring.lipschitz), scoring=scoring)

    @property
    def value_grid(self) -> int:
        return self.n_bins

    def init(self, key: PRNGKeyArray) -> LeeMWState:
        fdt = jnp.result_type(float)
        return LeeMWState(jnp.zeros((self.n_bins + 1,), fdt), jnp.zeros((), fdt), jnp.zeros((), jnp.int32))

    def predict(self, state: LeeMWState, x, key: PRNGKeyArray) -> Forecast:
        q = check_context_prob(x)
        theta, lam = _lee_weights(state.cal, state.reg, self.learning_rate)
        L = jnp.asarray(self.scoring.lipschitz, lam.dtype)
        fc = ApproachabilityOracle(self.n_bins, self.scoring)(jnp.append(theta, lam * L), q, key)
        return Forecast(fc.value, fc.public)

    def update(self, state: LeeMWState, x, forecast: Forecast, y) -> LeeMWState:
        m = self.n_bins
        fdt = state.cal.dtype
        mix = forecast.public
        i = jnp.clip(jnp.round(mix.support[0] * m).astype(jnp.int32), 0, m - 1)
        idx = jnp.stack([i, i + 1])
        w = mix.probs.astype(fdt)
        p = grid_points(m)[idx].astype(fdt)
        yi = jnp.asarray(y, jnp.int32)
        q = jnp.asarray(x).astype(fdt)
        u_reg = jnp.sum(w * self.scoring(p, yi).astype(fdt)) - self.scoring(q, yi).astype(fdt)
        return LeeMWState(state.cal.at[idx].add(w * (yi.astype(fdt) - p)), state.reg + u_reg, state.t + 1)
