r"""Calibration payoffs for binary outcomes on a grid $\{0, 1/m, \dots, 1\}$ (Marx et al. 2024, §3, App. C.2.1).

- :class:`BinaryCalibration`: $\pi_v(p, y) = w_v(p)\,(p - y)$, $v = 0, \dots, m$, with $w_v$ the
  tent partition of unity (the continuous "$\mathbb 1\{p\approx v\}$" of the paper's §2, after Eq.
  1), or the hard nearest-point indicator. Consistent: $\mathbb E_{y\sim p}\pi_v = w_v(p)(p - p) =
  0$; $B = \sup\sum_v w_v^2 (p-y)^2 \le 1$. (The sign "forecast minus outcome" matches the moment
  payoffs; the paper's $y - v$ would not be consistent for $p \ne v$.)
- :class:`MixedBinaryCalibration`: the payoff of a randomised forecaster that plays grid point
  $v$ with probability $q(v)$: $\pi_v(q, y) = q(v)(v - y)$ (Kakade–Foster's quasi-deterministic
  forecaster, App. C.2.1). Consistent in the sense $\mathbb E_{y\sim\bar q}\sum$… only up to the
  grid spacing: $\langle c, \pi\rangle$ is within $\|c\|/m$ of the deterministic payoff's.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._grid import GRID_WHY, MAX_GRID, grid_index, size_field
from .._validation import check_positive_int, declare, Int, RealArray
from ..core.types import Mixture
from .base import AbstractPayoff

__all__ = ["BinaryCalibration", "MixedBinaryCalibration", "tent_weights"]


@declare(forecasts=RealArray(ndim=None, lo=0.0, hi=1.0), n_bins=Int(1, MAX_GRID))
def tent_weights(forecasts, n_bins: int) -> Float[Array, "... n_bins+1"]:
    """Tent (piecewise-linear) partition of unity on the grid $\\{0, 1/m, \\dots, 1\\}$, $m$ = ``n_bins``, at each forecast.

    $w_v(p) = \\max(0, 1 - |m p - v|)$: at most two non-zero weights, summing to 1, with
    $\\sum_v w_v(p)\\, v/m = p$ (barycentric coordinates of $p$ on its segment).

    Args:
        forecasts: forecasts $p \\in [0, 1]$, any shape.
        n_bins: $m$, the grid's number of cells ($m + 1$ points).

    Returns:
        The weights, shape ``forecasts.shape + (n_bins + 1,)``.

    Raises:
        ValueError: a forecast outside [0, 1] or NaN (in the graph when traced), or ``n_bins``
            not a positive integer.

    Example:
        >>> tuple(round(float(w), 2) for w in tent_weights(0.3, 4))
        (0.0, 0.8, 0.2, 0.0, 0.0)
    """
    p = jnp.asarray(forecasts)
    v = jnp.arange(n_bins + 1, dtype=p.dtype).reshape((1,) * p.ndim + (n_bins + 1,))
    return jnp.maximum(0.0, 1.0 - jnp.abs(n_bins * p[..., None] - v))


_tent_weights = tent_weights.__wrapped__  # inside the payoffs' rounds: forecasts already checked


class BinaryCalibration(AbstractPayoff):
    r"""$\pi_v(x, p, y) = w_v(p)(p - y)$ over the grid $v \in \{0, 1/m, \dots, 1\}$ (Marx et al. 2024, §3).

    Attributes:
        n_bins: $m$ (the grid has $m + 1$ points; static).
        hard: use $w_v(p) = \mathbb 1\{v = \mathrm{round}(mp)\}$ instead of tents (discontinuous
            in $p$: Condition 3 fails, and no deterministic oracle exists for it).

    Example:
        >>> import jax.numpy as jnp
        >>> pi = BinaryCalibration(4)
        >>> v = pi(None, jnp.asarray(0.3), jnp.asarray(1))   # tents at 1/4 and 2/4, times p - y
        >>> round(float(v[1]), 3), round(float(v[2]), 3), round(float(v.sum()), 3)
        (-0.56, -0.14, -0.7)
    """

    n_bins: int = size_field("n_bins", what="its per-grid-point coordinates", hi=MAX_GRID, why=GRID_WHY)
    hard: bool = eqx.field(static=True, default=False)

    def __check_init__(self):
        check_positive_int(self.n_bins, "n_bins")

    @property
    def dim(self) -> int:
        return self.n_bins + 1

    def weights(self, forecast):
        if self.hard:
            return (jnp.arange(self.n_bins + 1, dtype=jnp.int32) == grid_index(forecast, self.n_bins)).astype(jnp.asarray(forecast).dtype)
        return _tent_weights(forecast, self.n_bins)

    def __call__(self, x, forecast, y):
        forecast = jnp.asarray(forecast)
        return self.weights(forecast) * (forecast - jnp.asarray(y).astype(forecast.dtype))

    def expect(self, x, forecast, q):
        """$\\mathbb E_{y\\sim\\mathrm{Bernoulli}(q)}\\pi = w(p)(p - q)$."""
        forecast = jnp.asarray(forecast)
        return self.weights(forecast) * (forecast - jnp.asarray(q, forecast.dtype))

    def bound(self) -> float:
        return 1.0


class MixedBinaryCalibration(AbstractPayoff):
    r"""$\pi_v(q, y) = q(v)\,(v - y)$ for a mixed strategy $q$ over the grid (App. C.2.1, quasi-deterministic).

    ``p`` is a :class:`~jcalib.core.Mixture` whose support are grid points $i/m$; $q(v)$ is the
    total probability on $v$. $B = \sup\sum_v q(v)^2 (v - y)^2 \le 1$.

    Attributes:
        n_bins: $m$ (static).
    """

    n_bins: int = size_field("n_bins", what="its per-grid-point coordinates", hi=MAX_GRID, why=GRID_WHY)

    def __check_init__(self):
        check_positive_int(self.n_bins, "n_bins")

    @property
    def dim(self) -> int:
        return self.n_bins + 1

    def grid_probs(self, forecast: Mixture):
        idx = grid_index(forecast.support, self.n_bins)
        return jnp.zeros(self.n_bins + 1, forecast.probs.dtype).at[idx].add(forecast.probs)

    def __call__(self, x, forecast: Mixture, y):
        q = self.grid_probs(forecast)
        v = jnp.arange(self.n_bins + 1, dtype=q.dtype) / self.n_bins
        return q * (v - jnp.asarray(y).astype(q.dtype))

    def bound(self) -> float:
        return 1.0

    @property
    def semi(self) -> np.ndarray:
        return np.zeros(self.dim, bool)
