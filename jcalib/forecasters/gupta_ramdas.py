r"""Gupta & Ramdas (2022): deterministic calibration with interval forecasts.

The forecaster announces two nearby forecasts — an interval $[c_i, c_{i+1}]$ of width $1/m$ —
and after $y_t$ is revealed the endpoint closest to $y_t$ is the one judged:
$\tilde p_t = c_{i+y_t}$. With the deficits

$$D_j = \sum_{s<t} \mathbb 1[\tilde p_s = c_j]\,(y_s - c_j),$$

it picks adjacent $c_i, c_{i+1}$ with $D_i \ge 0 \ge D_{i+1}$; the judged point then moves each
deficit towards 0 or by at most 1, so $|D_j| \le 1$ forever (the argument of Arunachaleswaran,
Collina, Roth, Shi 2024, *An Elementary Predictor Obtaining 2√T+1 Distance to Calibration*,
Theorem 2, which calls this forecaster's look-ahead "One-Step-Ahead").

**Reconstruction.** We take the points $c_j = j/m$, $j = 0..m$: the midpoints of the $m + 1$
bins $[0, \tfrac1{2m}], [\tfrac1{2m}, \tfrac3{2m}], \dots, [1 - \tfrac1{2m}, 1]$. The end
points $0$ and $1$ are what make a pair always exist ($D_0 \ge 0 \ge D_m$); with the midpoints
$(j - \tfrac12)/m$ of $m$ equal bins no bound on $D$ can hold (all-zero outcomes push every
deficit down). The judged sequence is then exactly :func:`~jcalib.forecasters.aosa.one_step_ahead`.

**One state machine.** $mD_j = -\beta_j$, with $\beta$ AOSA's integer look-ahead biases
(Arunachaleswaran et al. 2024): the pair $D_i \ge 0 \ge D_{i+1}$ is AOSA's $\beta_i \le 0 \le
\beta_{i+1}$ and the deficit update is AOSA's bias update with the sign flipped. So this
forecaster keeps AOSA's state and runs its transition
(:func:`~jcalib.forecasters.aosa.sign_change_index`,
:func:`~jcalib.forecasters.aosa.lookahead_update`); only what it announces and scores differs.
"""

from __future__ import annotations

import math
import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

from .._grid import GRID_WHY, MAX_GRID, lookahead_update, size_field
from .._padded import grid_value, scale, sign_change_below, table_bins
from ..core.keys import check_horizon
from .._validation import check_positive_int
from ..core.types import AbstractForecaster, Forecast
from .aosa import AOSAState

__all__ = ["GuptaRamdas", "GuptaRamdasState"]


class GuptaRamdasState(AOSAState):
    """Gupta–Ramdas state: AOSA's look-ahead biases, which are the negated scaled deficits.

    Attributes:
        beta: int32 ``(m + 1,)``, ``beta[j]`` $= -m D_j = \\sum_s \\mathbb 1[\\tilde p_s =
            j/m](j - m y_s)$; $|m D_j| \\le m$.
    """

    __slots__ = ()

    @property
    def deficit(self) -> Int[Array, " m+1"]:
        """$m D_j$ (int32)."""
        return -self.beta


class GuptaRamdas(AbstractForecaster):
    r"""Interval forecaster of Gupta & Ramdas (2022): $|D_j| \le 1$ deterministically.

    Round $t$: $i_t$ with $D_{i_t} \ge 0 \ge D_{i_t+1}$ (bisection on the integer deficits);
    the interval forecast is $[i_t/m, (i_t+1)/m]$; after $y_t$ the judged endpoint is
    $\tilde p_t = (i_t + y_t)/m$ and $mD_{j} \mathrel{+}= m y_t - j$ for $j = i_t + y_t$.

    What is scored. ``Forecast.value`` is the interval's **midpoint** $(2i_t + 1)/(2m)$, a point
    forecast on the grid $\{0, \tfrac1{2m}, \dots, 1\}$ (its ``value_grid`` is ``2 * n_bins``,
    the grid ``record="summary"`` counts on). ``Forecast.public`` is that midpoint too: the interval is a
    deterministic function of it, so an adversary who sees one sees both. :meth:`info` returns
    the judged endpoint $\tilde p_t$ (the interval is ``value ± 1/(2m)``).

    Guarantees: $|D_j| \le 1$ at every grid point and round (so the judged endpoints have
    $\mathrm{ECE} \le m + 1$); and, by the triangle inequality of Arunachaleswaran et al. (2024) with
    $|p_t - \tilde p_t| = 1/(2m)$, the midpoints have $\mathrm{CalDist} \le T/(2m) + m + 1$,
    $\approx \sqrt{2T} + 1$ for $m = \sqrt{T/2}$ (:meth:`for_horizon`).

    Attributes:
        n_bins: $m \ge 1$; interval endpoints on $\{0, 1/m, \dots, 1\}$.

    References:
        C. Gupta, A. Ramdas (2022), *Faster online calibration without randomization: interval
        forecasts and the power of two choices*, COLT, PMLR 178:4283–4309. The choice of
        points and of the midpoint as the scored value are jcalib's (see the module docstring).
    """

    outcome_space = "binary"
    grid_factor = 2  # scored midpoints lie on the grid of 2m (jcalib._padded.grid_value)

    n_bins: int = size_field("n_bins", what="its per-grid-point state", hi=MAX_GRID, why=GRID_WHY)

    def __check_init__(self):
        check_positive_int(self.n_bins, "n_bins")

    @classmethod
    def for_horizon(cls, T: int) -> "GuptaRamdas":
        """``n_bins = ceil(sqrt(T / 2))``, which minimises ``T/(2m) + m + 1``."""
        T = check_horizon(T)
        return cls(n_bins=max(1, math.ceil(math.sqrt(T / 2))))

    def init(self, key: PRNGKeyArray) -> GuptaRamdasState:
        # the table is sized for max_bins in the padded variant (jcalib._padded); entries past m stay 0
        return GuptaRamdasState(beta=jnp.zeros((table_bins(self) + 1,), jnp.int32))

    @property
    def value_grid(self) -> int:
        """Scored forecasts lie on the grid of step 1/(2m) (``record="summary"`` uses it)."""
        return 2 * self.n_bins

    def predict(self, state: GuptaRamdasState, x, key: PRNGKeyArray) -> Forecast:
        i = sign_change_below(state.beta, self.n_bins)  # beta_i <= 0 <= beta_{i+1}, i.e. D_i >= 0 >= D_{i+1}
        v = grid_value(self, 2 * i + 1, 2)
        return Forecast(v, v)

    def _lower_index(self, forecast: Forecast) -> Int[Array, ""]:
        # value = (2i + 1)/(2m), so i = floor(value * m), exact for m < 2^22
        v = jnp.asarray(forecast.value)
        return jnp.floor(v * scale(self.n_bins, v.dtype)).astype(jnp.int32)

    def info(self, state: GuptaRamdasState, x, forecast: Forecast, y) -> Float[Array, ""]:
        """The judged endpoint $\\tilde p_t = (i_t + y_t)/m$."""
        j = self._lower_index(forecast) + jnp.asarray(y, jnp.int32)
        return grid_value(self, j)

    def update(self, state: GuptaRamdasState, x, forecast: Forecast, y) -> GuptaRamdasState:
        # m D_j += m y - j is AOSA's beta_j += j - m y
        return GuptaRamdasState(beta=lookahead_update(state.beta, self._lower_index(forecast), y, self.n_bins))
