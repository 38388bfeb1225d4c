r"""Foster's (1999) randomised calibrated forecaster, a baseline for online binary calibration.

Grid $\{0, 1/k, \dots, 1\}$. Per grid point the running error of the *realised* forecasts

$$e_i = \sum_{s<t} \mathbb 1[p_s = i/k]\,(y_s - i/k),$$

so $e_0 \ge 0 \ge e_k$ always and some adjacent pair has $e_i \ge 0 \ge e_{i+1}$. Forecast
$i/k$ with probability $w = |e_{i+1}| / (e_i + |e_{i+1}|)$ and $(i+1)/k$ otherwise. Then the
expected increment of $e_i$ and $e_{i+1}$ points back towards 0 (the halfspace condition of
Blackwell approachability), and the expected ECE is $O(T^{2/3})$ with $k \approx T^{1/3}$
(normalised: $O(T^{-1/3})$).
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Int, PRNGKeyArray

from .._grid import GRID_WHY, MAX_GRID, size_field
from .._padded import grid_value, scale, sign_change_below, table_bins
from .._validation import HORIZON, check_positive_int, declare
from ..core.types import AbstractForecaster, Forecast, Mixture

__all__ = ["FosterRandomized", "FosterState", "foster_bins"]


@declare(T=HORIZON)
def foster_bins(T: int) -> int:
    r"""The grid size $k = \lceil T^{1/3} \rceil$ that balances Foster's $T/k$ and $\sqrt{kT}$."""
    k = max(1, round(T ** (1 / 3)))
    while k**3 < T:  # exact integer ceiling of the cube root
        k += 1
    while k > 1 and (k - 1) ** 3 >= T:
        k -= 1
    return k


class FosterState(NamedTuple):
    """Foster's state: the running errors, scaled to integers.

    Attributes:
        err: int32 ``(k + 1,)``, ``err[i]`` $= k\\,e_i = \\sum_s \\mathbb 1[p_s = i/k](k y_s - i)$.
            Its size is $k$ times a bias that approachability keeps near $\\sqrt{n_i}$, so
            int32 holds it for any horizon a run can reach ($k\\sqrt T \\ll 2^{31}$).
    """

    err: Int[Array, " k+1"]


class FosterRandomized(AbstractForecaster):
    r"""Foster (1999) randomised calibration on the grid $\{0, 1/k, \dots, 1\}$.

    With integer errors $E_i = k\,e_i$ (see :class:`FosterState`):

    $$i_t : E_{i_t} \ge 0 \ge E_{i_t+1},\qquad
    w_t = \frac{-E_{i_t+1}}{E_{i_t} - E_{i_t+1}}\ (w_t = 1 \text{ if both are } 0),$$

    $p_t = i_t/k$ with probability $w_t$, else $(i_t+1)/k$; after $y_t$,
    $E_{k p_t} \mathrel{+}= k y_t - k p_t$.

    ``Forecast.public`` is the mixed strategy ``Mixture([i/k, (i+1)/k], [w, 1-w])`` (an adaptive
    adversary sees it, not the draw); ``Forecast.value`` is the draw, made with the round's key.

    Guarantee: expected ECE/T $= O(1/k + \sqrt{k/T})$, $O(T^{-1/3})$ with $k \approx T^{1/3}$
    (:meth:`for_horizon`), against adaptive adversaries that do not see the draw.

    Attributes:
        n_bins: grid size $k \ge 1$.

    References:
        D. P. Foster (1999), *A proof of calibration via Blackwell's approachability theorem*,
        Games and Economic Behavior 29:73–78. The formulation above is jcalib's reading of the
        paper; the tie rule $w = 1$ when $e_i = e_{i+1} = 0$ and the non-strict $e_i \ge 0$ are
        jcalib's choices: a strict $e_i > 0$ has no solution when all errors are 0, e.g. at $t = 1$.
    """

    outcome_space = "binary"

    n_bins: int = size_field("n_bins", what="its per-grid-point state", hi=MAX_GRID, why=GRID_WHY)

    def __check_init__(self):
        check_positive_int(self.n_bins, "n_bins")

    @classmethod
    def for_horizon(cls, T: int) -> "FosterRandomized":
        """Foster's forecaster with ``n_bins = ceil(T ** (1/3))``."""
        return cls(n_bins=foster_bins(T))

    @property
    def value_grid(self) -> int:
        """Forecasts lie on the grid {0, 1/k, …, 1} (``record="summary"`` uses it)."""
        return self.n_bins

    def init(self, key: PRNGKeyArray) -> FosterState:
        # the table is sized for max_bins in the padded variant (jcalib._padded); entries past k stay 0
        return FosterState(err=jnp.zeros((table_bins(self) + 1,), jnp.int32))

    def predict(self, state: FosterState, x, key: PRNGKeyArray) -> Forecast:
        fdt = jnp.result_type(float)
        k = self.n_bins
        i = sign_change_below(-state.err, k)  # E_i >= 0 >= E_{i+1}
        lo, hi = state.err[i], -state.err[i + 1]  # both >= 0
        den = lo + hi
        w = jnp.where(den > 0, hi.astype(fdt) / jnp.maximum(den, 1).astype(fdt), 1.0)
        support = grid_value(self, jnp.stack([i, i + 1]))
        draw_low = jax.random.bernoulli(key, w)
        value = jnp.where(draw_low, support[0], support[1])
        return Forecast(value, Mixture(support=support, probs=jnp.stack([w, 1.0 - w])))

    def update(self, state: FosterState, x, forecast: Forecast, y) -> FosterState:
        v = jnp.asarray(forecast.value)
        j = jnp.round(v * scale(self.n_bins, v.dtype)).astype(jnp.int32)
        return FosterState(err=state.err.at[j].add(self.n_bins * jnp.asarray(y, jnp.int32) - j))
