r"""Payoffs indexed by a finite grid of forecasts or actions (Marx et al. 2024, App. C).

They pair with the specialised half-space oracles of :mod:`jcalib.payoffs.oracles`:

- :class:`ConformalPayoff` (App. C.1.1, adaptive conformal inference): actions
  $a_i = i/M$, a mixed strategy $q \in \Delta(A)$,
  $\pi_{a}(x, q, y) = q(a)\,(e(a) - \beta)$, $e(a) = \mathbb 1\{y \le Q_t(a)\}$ with the
  context $x = (Q_t(a_0), \dots, Q_t(a_M))$; $e(a_0) := 0$ and $e(a_M) := 1$ (the 0- and
  1-quantiles of a continuous outcome are $\mp\infty$; the oracle's end cases need it).
- :class:`SmoothConformalPayoff` (C.1.1, deterministic variant): a single level
  $\alpha \in [0, 1]$, $\pi_a = w_a(\alpha)\,(e(\alpha) - \beta)$ with tent weights $w_a$
  (smoothed indicators: with hard ones the root of $c = \bar\pi$ rarely exists; jcalib's choice) and
  $Q_t(\alpha)$ interpolated linearly.
- :class:`MomentGridCalibration` / :class:`MixedMomentCalibration` (App. C.2.2): forecasts
  $f = (\mu, \sigma)$ on a grid of $M$ ticks per axis of $[0,1]^2$, $\sigma = \mathbb E[y^2]$ (a
  second moment, not a standard deviation), Freudenthal barycentric weights $w_v(f)$;
  $\pi_v = w_v(f)(f - z(y))$ or, for a mixed strategy $q$ over vertices,
  $\pi_v = q(v)(v - z(y))$, with $z(y) = (y, y^2)$, $y \in [0, 1]$.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .._grid import GRID_WHY, MAX_GRID, size_field
from .._validation import check_hyper, check_positive_int, Custom, declare, Int, RealArray
from ..core.types import Mixture
from .base import AbstractPayoff
from .binary import _tent_weights

__all__ = [
    "ConformalPayoff",
    "MixedMomentCalibration",
    "MomentGridCalibration",
    "SmoothConformalPayoff",
    "freudenthal",
]


def _exceed(x, y, dtype):
    """$e(a_i) = \\mathbb 1\\{y \\le Q(a_i)\\}$ with $e(a_0) = 0$, $e(a_M) = 1$."""
    e = (jnp.asarray(y).astype(dtype) <= jnp.asarray(x).astype(dtype)).astype(dtype)
    return e.at[0].set(0).at[-1].set(1)


class ConformalPayoff(AbstractPayoff):
    r"""$\pi_a(x, q, y) = q(a)\,(\mathbb 1\{y \le Q_t(a)\} - \beta)$, $a = 0, 1/M, \dots, 1$ (App. C.1.1).

    ``q`` is a :class:`~jcalib.core.Mixture` whose support is all $M+1$ levels (in order) or
    the ``(M+1,)`` probability vector itself. $B = \max(\beta, 1-\beta)^2$ (at most one action
    carries mass $\le 1$ with $|e - \beta| \le \max(\beta, 1-\beta)$; $\sum_a q_a^2 \le 1$).

    Attributes:
        beta: target level $\beta \in (0, 1)$ (a float: vmappable).
        n_actions: $M$ (static; $M + 1$ actions).
    """

    beta: float
    n_actions: int = size_field("n_actions", lambda n: n, what="its coordinates")

    def __check_init__(self):
        check_positive_int(self.n_actions, "n_actions")
        check_hyper(self.beta, "beta", 0.0, 1.0, open_lo=True, open_hi=True)

    @property
    def dim(self) -> int:
        return self.n_actions + 1

    def levels(self, dtype=None):
        return jnp.arange(self.n_actions + 1, dtype=dtype or jnp.result_type(float)) / self.n_actions

    @staticmethod
    def probs(forecast):
        return forecast.probs if isinstance(forecast, Mixture) else jnp.asarray(forecast)

    def __call__(self, x, forecast, y):
        w = self.probs(forecast)
        return w * (_exceed(x, y, w.dtype) - jnp.asarray(self.beta, w.dtype))

    def bound(self) -> float:
        b = float(self.beta)
        return max(b, 1 - b) ** 2


class SmoothConformalPayoff(AbstractPayoff):
    r"""$\pi_a(x, \alpha, y) = w_a(\alpha)\,(e(\alpha, y) - \beta)$ with tent weights (App. C.1.1, deterministic).

    $e(0, y) = 0$, $e(1, y) = 1$, otherwise $e(\alpha, y) = \mathbb 1\{y \le Q_t(\alpha)\}$, $Q_t$
    the linear interpolation of the context $x = (Q_t(a_i))_i$. $B = \max(\beta, 1-\beta)^2$.

    Attributes:
        beta: target level (float).
        n_actions: $M$ (static).
    """

    beta: float
    n_actions: int = size_field("n_actions", lambda n: n, what="its coordinates")

    def __check_init__(self):
        check_positive_int(self.n_actions, "n_actions")
        check_hyper(self.beta, "beta", 0.0, 1.0, open_lo=True, open_hi=True)

    @property
    def dim(self) -> int:
        return self.n_actions + 1

    def __call__(self, x, forecast, y):
        forecast = jnp.asarray(forecast)
        x = jnp.asarray(x, forecast.dtype)
        levels = jnp.arange(self.n_actions + 1, dtype=forecast.dtype) / self.n_actions
        q = jnp.interp(forecast, levels, x)
        e = jnp.where(forecast <= 0, 0.0, jnp.where(forecast >= 1, 1.0, (jnp.asarray(y).astype(forecast.dtype) <= q).astype(forecast.dtype)))
        return _tent_weights(forecast, self.n_actions) * (e - jnp.asarray(self.beta, forecast.dtype))

    def bound(self) -> float:
        b = float(self.beta)
        return max(b, 1 - b) ** 2


def _point(forecast, name, bound):
    f = RealArray(ndim=1, lo=0.0, hi=1.0).check(forecast, name, bound)
    if f.shape != (2,):
        raise ValueError(f"{name} must be a point (mean, second moment) of shape (2,), got {tuple(f.shape)}")
    return f


@declare(forecast=Custom(_point, "a point of [0, 1]^2"), n_bins=Int(1, MAX_GRID))
def freudenthal(forecast, n_bins: int):
    r"""Vertices and barycentric weights of $f \in [0,1]^2$ in the Freudenthal triangulation of an $m\times m$ grid, $m$ = ``n_bins``.

    Each square cell $[i, i+1]\times[j, j+1]$ (in units of $1/m$) is cut along its diagonal; for
    $r = mf - (i, j)$: if $r_0 \ge r_1$ the vertices are $(i,j), (i+1,j), (i+1,j+1)$ with weights
    $(1 - r_0, r_0 - r_1, r_1)$, else $(i,j), (i,j+1), (i+1,j+1)$ with $(1 - r_1, r_1 - r_0, r_0)$.

    Args:
        forecast: the point $f = (\mu, \sigma)$, shape ``(2,)``.
        n_bins: $m$, cells per axis of the grid.

    Returns:
        ``(idx, w)``: flat vertex indices ``i * (m+1) + j`` (int32, shape (3,)) and weights (3,).

    Raises:
        ValueError: ``forecast`` not of shape (2,) in [0, 1] (in the graph when traced), or
            ``n_bins`` not a positive integer.
    """
    m = n_bins
    f = forecast
    u = f * m
    ij = jnp.clip(jnp.floor(u), 0, m - 1)
    r = u - ij
    i, j = ij[0].astype(jnp.int32), ij[1].astype(jnp.int32)
    upper = r[0] >= r[1]
    v1 = i * (m + 1) + j
    v2 = jnp.where(upper, (i + 1) * (m + 1) + j, i * (m + 1) + j + 1)
    v3 = (i + 1) * (m + 1) + j + 1
    w = jnp.where(
        upper,
        jnp.stack([1 - r[0], r[0] - r[1], r[1]]),
        jnp.stack([1 - r[1], r[1] - r[0], r[0]]),
    )
    return jnp.stack([v1, v2, v3]), w


def moment_vertices(n_bins: int, dtype=None):
    """The $(m+1)^2$ grid vertices $(i/m, j/m)$, $m$ = ``n_bins``, flat index ``i * (m+1) + j``."""
    dtype = dtype or jnp.result_type(float)
    g = jnp.arange(n_bins + 1, dtype=dtype) / n_bins
    return jnp.stack(jnp.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)


def _z(y, dtype):
    y = jnp.asarray(y).astype(dtype)
    return jnp.stack([y, y * y])


class MomentGridCalibration(AbstractPayoff):
    r"""$\pi_v(f, y) = w_v(f)\,(f - (y, y^2))$ over the $(M+1)^2$ vertices (App. C.2.2, deterministic).

    The forecast is the pair $f = (\mu, \sigma)$ of first and second moments. Consistent for any
    $p$ with those moments. Output flattened to ``(2 (M+1)^2,)`` as ``[v, (μ, σ)]``.
    $B \le 2$ ($\sum_v w_v^2 \le 1$, $\|f - z\|^2 \le 2$ on $[0,1]^2$).

    Attributes:
        n_ticks: $M$ (static).
    """

    n_ticks: int = size_field("n_ticks", lambda n: n + 1, what="its grid of moments", hi=MAX_GRID, why=GRID_WHY)

    def __check_init__(self):
        check_positive_int(self.n_ticks, "n_ticks")

    @property
    def dim(self) -> int:
        return 2 * (self.n_ticks + 1) ** 2

    def weights(self, forecast):
        idx, w = _freudenthal(forecast, self.n_ticks)
        return jnp.zeros((self.n_ticks + 1) ** 2, w.dtype).at[idx].add(w)

    def __call__(self, x, forecast, y):
        forecast = jnp.asarray(forecast)
        return (self.weights(forecast)[:, None] * (forecast - _z(y, forecast.dtype))[None, :]).reshape(-1)

    def bound(self) -> float:
        return 2.0


class MixedMomentCalibration(AbstractPayoff):
    r"""$\pi_v(q, y) = q(v)\,(v - (y, y^2))$ for a mixed strategy $q$ over the grid (App. C.2.2, randomised).

    ``q`` is a :class:`~jcalib.core.Mixture` over vertices (support: points ``(k, 2)``) or the
    ``((M+1)^2,)`` probability vector. $B \le 2$.

    Attributes:
        n_ticks: $M$ (static).
    """

    n_ticks: int = size_field("n_ticks", lambda n: n + 1, what="its grid of moments", hi=MAX_GRID, why=GRID_WHY)

    def __check_init__(self):
        check_positive_int(self.n_ticks, "n_ticks")

    @property
    def dim(self) -> int:
        return 2 * (self.n_ticks + 1) ** 2

    def grid_probs(self, forecast):
        if not isinstance(forecast, Mixture):
            return jnp.asarray(forecast)
        m = self.n_ticks
        ij = jnp.clip(jnp.round(forecast.support * m), 0, m).astype(jnp.int32)
        return jnp.zeros((m + 1) ** 2, forecast.probs.dtype).at[ij[:, 0] * (m + 1) + ij[:, 1]].add(forecast.probs)

    def __call__(self, x, forecast, y):
        w = self.grid_probs(forecast)
        v = moment_vertices(self.n_ticks, w.dtype)
        return (w[:, None] * (v - _z(y, w.dtype)[None, :])).reshape(-1)

    def bound(self) -> float:
        return 2.0

    @property
    def semi(self) -> np.ndarray:
        return np.zeros(self.dim, bool)


_freudenthal = freudenthal.__wrapped__  # inside the payoff's rounds: forecasts already checked
