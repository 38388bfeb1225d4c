r"""Deterministic smooth calibration by defensive forecasting, a baseline for online binary calibration.

Kakade–Foster (2004) / Foster–Hart (2018): with a positive-definite kernel $K$ and residuals
$r_s = y_s - p_s$, let $\Phi_t(p) = \sum_{s<t} K(p_s, p)\, r_s$ and forecast a zero of
$\Phi_t$ ($0$ if $\Phi_t(0) \le 0$, $1$ if $\Phi_t(1) \ge 0$). Then $\Phi_t(p_t)\, r_t \le 0$
every round, so the RKHS norm of $f_T = \sum_t r_t K(p_t, \cdot)$ obeys

$$\|f_T\|^2 = \sum_{s,t} K(p_s, p_t)\, r_s r_t \le \sum_t K(p_t, p_t)\, r_t^2 \le T,
\qquad |\Phi_{T+1}(p)| \le \sqrt{K(p,p)}\, \|f_T\| \le \sqrt T\ \ \forall p.$$

That is smooth calibration: the kernel-weighted bias near every $p$ is at most $\sqrt T$
(unnormalised), whatever the outcomes, without randomisation.

**Fixed-size state (departure from the papers).** The direct formulation uses the tent kernel
$\Lambda(x, p) = \max(0, 1 - |x - p|/\delta)$, whose $\Phi_t$ needs the whole history. We keep
$\Phi$ on the grid $g_j = j/N$, $j = 0..N$, and use the kernel

$$K_N(x, p) = \phi(x)^\top G\, \phi(p),\qquad G_{jk} = \Lambda(g_j, g_k),$$

where $\phi(p)$ are the linear-interpolation (hat) weights of $p$ on the grid. $G$ is the Gram
matrix of the positive-definite tent kernel, so $K_N$ is positive semi-definite and the
guarantee above holds for $K_N$ **exactly**. $K_N(x, p) = \Lambda(x, p)$ whenever $x$ or $p$ is a
grid point and $\delta N$ is an integer; in general it is $\Lambda$ bilinearly interpolated on
the grid, within $O(1/(N\delta))$ of it. The stored values are $V_j = \Phi_t(g_j)$ and
$\Phi_t(p)$ is their linear interpolation, so the zero is found exactly, segment by segment.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from .._grid import GRID_WHY, MAX_GRID, sign_change_index, size_field
from ..core.keys import check_horizon
from .._validation import check_hyper, check_positive_int
from ..core.types import AbstractForecaster, Forecast

__all__ = ["DefensiveForecaster", "DefensiveState", "grid_kernel"]


class DefensiveState(NamedTuple):
    """Defensive forecasting's state.

    Attributes:
        phi: ``(N + 1,)`` floats, ``phi[j]`` $= \\Phi_t(j/N) = \\sum_{s<t} K_N(p_s, j/N)\\,(y_s - p_s)$.
    """

    phi: Float[Array, " N+1"]


def _hat(p, n_grid: int):
    """Index k and weight lam with p = ((1 - lam) k + lam (k + 1)) / N, k in [0, N-1]."""
    s = p * n_grid
    k = jnp.clip(jnp.floor(s), 0, n_grid - 1)
    return k.astype(jnp.int32), s - k


def grid_kernel(
    x: Float[Array, " a"], p: Float[Array, " b"], n_grid: int, bandwidth: float
) -> Float[Array, "a b"]:
    r"""The kernel $K_N(x, p) = \phi(x)^\top G\,\phi(p)$ that :class:`DefensiveForecaster` uses.

    Args:
        x: points in $[0, 1]$, shape ``(a,)``.
        p: points in $[0, 1]$, shape ``(b,)``.
        n_grid: grid size $N$.
        bandwidth: tent half-width $\delta$.

    Returns:
        ``(a, b)`` kernel matrix (positive semi-definite when ``x is p``).
    """
    fdt = jnp.result_type(float)
    g = jnp.arange(n_grid + 1, dtype=fdt) / n_grid
    delta = jnp.asarray(bandwidth, fdt)
    G = jnp.maximum(0.0, 1.0 - jnp.abs(g[:, None] - g[None, :]) / delta)

    def weights(z):
        k, lam = _hat(jnp.asarray(z, fdt), n_grid)
        j = jnp.arange(n_grid + 1, dtype=jnp.int32)
        return jnp.where(j[None, :] == k[:, None], 1.0 - lam[:, None], 0.0) + jnp.where(
            j[None, :] == k[:, None] + 1, lam[:, None], 0.0
        )

    return weights(x) @ G @ weights(p).T


class DefensiveForecaster(AbstractForecaster):
    r"""Deterministic smooth calibration with a tent kernel (Kakade–Foster, Foster–Hart).

    Round $t$, with $V_j = \Phi_t(j/N)$:

    $$p_t = \begin{cases} 0 & V_0 \le 0 \\ 1 & V_N \ge 0 \\
    (i + V_i/(V_i - V_{i+1}))/N & \text{else, } V_i \ge 0 \ge V_{i+1} \text{ (bisection)}\end{cases}$$

    and after $y_t$: $V_j \mathrel{+}= (y_t - p_t)\,[(1-\lambda)\Lambda(g_j, g_k) +
    \lambda\Lambda(g_j, g_{k+1})]$ with $p_t = (k + \lambda)/N$ — that is,
    $V_j \mathrel{+}= K_N(p_t, g_j)\, r_t$ (module docstring). $O(N)$ per round.

    Guarantee (for its own kernel $K_N$, exactly): $\sum_{s,t} K_N(p_s,p_t) r_s r_t \le
    \sum_t r_t^2$ and $\max_p |\Phi_{T+1}(p)| \le \sqrt{\sum_t r_t^2} \le \sqrt T$ (unnormalised).

    Deterministic: ``Forecast.public`` is the value. Forecasts are not on a grid; for
    ``record="summary"`` pass ``n_bins=`` (values are then rounded).

    Attributes:
        n_grid: grid size $N$ for the stored $\Phi$ (static: fixes the state's shape).
        bandwidth: tent half-width $\delta > 0$. $\delta N$ an integer makes $K_N$ agree with
            the tent kernel whenever one argument is a grid point.

    References:
        S. Kakade, D. Foster (2004), *Deterministic calibration and Nash equilibrium*, COLT;
        D. Foster, S. Hart (2018), *Smooth calibration, leaky forecasts, finite recall, and Nash
        dynamics*, Games and Economic Behavior 109:271–293; V. Vovk et al. (2005), *Defensive
        forecasting*. The formulation above is jcalib's reading of these papers; the grid kernel
        $K_N$ is jcalib's.
    """

    outcome_space = "binary"

    n_grid: int = size_field("n_grid", what="its grid of candidate forecasts", hi=MAX_GRID, why=GRID_WHY, default=100)
    bandwidth: float = 0.1

    def __check_init__(self):
        check_positive_int(self.n_grid, "n_grid")
        check_hyper(self.bandwidth, "bandwidth", 0.0, open_lo=True)

    @classmethod
    def for_horizon(cls, T: int) -> "DefensiveForecaster":
        """The defaults (``n_grid=100, bandwidth=0.1``): the guarantee does not depend on ``T``."""
        check_horizon(T)
        return cls()

    def init(self, key: PRNGKeyArray) -> DefensiveState:
        return DefensiveState(phi=jnp.zeros((self.n_grid + 1,), jnp.result_type(float)))

    def predict(self, state: DefensiveState, x, key: PRNGKeyArray) -> Forecast:
        N = self.n_grid
        V = state.phi
        i = sign_change_index(-V)  # meaningful only when V_0 > 0 > V_N, the case it is used in
        a, b = V[i], V[i + 1]
        den = a - b
        lam = jnp.clip(jnp.where(den > 0, a / jnp.where(den > 0, den, 1.0), 0.0), 0.0, 1.0)
        root = (i.astype(V.dtype) + lam) / N
        p = jnp.where(V[0] <= 0, 0.0, jnp.where(V[N] >= 0, 1.0, root))
        return Forecast(p, p)

    def update(self, state: DefensiveState, x, forecast: Forecast, y) -> DefensiveState:
        fdt = state.phi.dtype
        N = self.n_grid
        p = jnp.asarray(forecast.value, fdt)
        k, lam = _hat(p, N)
        j = jnp.arange(N + 1, dtype=jnp.int32)
        scale = jnp.asarray(self.bandwidth, fdt) * N
        tent_k = jnp.maximum(0.0, 1.0 - jnp.abs(j - k).astype(fdt) / scale)
        tent_k1 = jnp.maximum(0.0, 1.0 - jnp.abs(j - k - 1).astype(fdt) / scale)
        r = jnp.asarray(y, fdt) - p
        return DefensiveState(phi=state.phi + r * ((1.0 - lam) * tent_k + lam * tent_k1))
