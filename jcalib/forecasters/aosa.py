r"""Almost-One-Step-Ahead (AOSA) and its look-ahead, One-Step-Ahead (Arunachaleswaran et al. 2024).

Grid $B_m = \{0, 1/m, \dots, 1\}$, $p_i = i/m$. One-Step-Ahead keeps the *look-ahead bias*

$$\alpha_{t-1}(p_i) = \sum_{s<t} \mathbb 1[\tilde p_s = p_i]\,(\tilde p_s - y_s),$$

picks adjacent $p_i, p_{i+1}$ with $\alpha_{t-1}(p_i) \le 0 \le \alpha_{t-1}(p_{i+1})$ (one exists:
$\alpha(0) \le 0$ and $\alpha(1) \ge 0$ always) and, *after* seeing $y_t$, forecasts
$\tilde p_t = \arg\min_{p \in \{p_i, p_{i+1}\}} |p - y_t| = (i + y_t)/m$. It is not an online
forecaster. Almost-One-Step-Ahead keeps the same state, commits to $p_t = p_i$ (or $p_{i+1}$)
before $y_t$, and then updates One-Step-Ahead's state with $y_t$.

Theorem 2 (Arunachaleswaran et al. 2024): $|\alpha_t(p_i)| \le 1$ for every $i$ and $t$, so
$\mathrm{ECE}(\tilde p, y) \le m + 1$. Theorem 1: $|p_t - \tilde p_t| \le 1/m$, so
$\mathrm{CalDist}(p, y) \le T/m + m + 1$, which is $2\sqrt T + 1$ for $m = \sqrt T$.

Exact integer state (DESIGN.md, "Numbers"): we store $\beta_i = m\,\alpha(p_i) = \sum_s
\mathbb 1[\tilde p_s = p_i](i - m y_s)$ as int32. Theorem 2 gives $|\beta_i| \le m$, so it never
overflows, and the sign tests are exact in float32 and float64 runs alike.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

from .._grid import GRID_WHY, MAX_GRID, grid_points, lookahead_update, sign_change_index, size_field, table_size
from .._padded import grid_value, scale, sign_change_below, table_bins
from .._validation import HORIZON, Custom, Optional, check_binary_labels, check_positive_int, declare
from ..core.types import AbstractForecaster, Forecast

__all__ = [
    "AOSAState",
    "AlmostOneStepAhead",
    "aosa_bins",
    "aosa_bound",
    "one_step_ahead",
]


def _grid_size(entries_per_bin: int, what: str):
    """A grid size m (a static int below 2**22) whose table holds ``entries_per_bin * (m + 1)`` bytes."""
    return Custom(lambda v, name, bound: table_size(v, name, lambda n: entries_per_bin * (n + 1), what=what, hi=MAX_GRID,
                                                    why=GRID_WHY), "a grid size m")


@declare(T=HORIZON)
def aosa_bins(T: int) -> int:
    r"""The grid size $m = \lceil \sqrt T \rceil$ that Theorem 1 (Arunachaleswaran et al. 2024) asks for.

    Args:
        T: horizon (positive int).

    Returns:
        $\lceil\sqrt T\rceil$, computed exactly in integers.

    Example:
        >>> aosa_bins(100), aosa_bins(101)
        (10, 11)
    """
    return math.isqrt(T - 1) + 1


@declare(T=HORIZON, n_bins=Optional(_grid_size(8, "its tables")))
def aosa_bound(T: int, n_bins: int | None = None) -> float:
    r"""Theorem 1's bound $T/m + m + 1$ on AOSA's distance to calibration (unnormalised).

    With $m = \lceil\sqrt T\rceil$ (the default) this is $2\sqrt T + 1$ when $T$ is a perfect
    square and at most $2\sqrt T + 1 + (m - \sqrt T)^2/m < 2\sqrt T + 2$ otherwise (the paper
    takes $m = \sqrt T$ real; an integer grid rounds it).

    Args:
        T: horizon.
        n_bins: grid size $m$ (default :func:`aosa_bins`).

    Returns:
        The bound as a Python float.
    """
    m = aosa_bins(T) if n_bins is None else n_bins
    return T / m + m + 1


class AOSAState(NamedTuple):
    """AOSA's state: One-Step-Ahead's look-ahead biases, scaled to integers.

    Attributes:
        beta: int32 ``(m + 1,)``, ``beta[i]`` $= m\\,\\alpha(p_i)$; $|\\beta_i| \\le m$.
    """

    beta: Int[Array, " m+1"]


class AlmostOneStepAhead(AbstractForecaster):
    r"""Almost-One-Step-Ahead (Arunachaleswaran et al. 2024, Algorithm 1): deterministic, $2\sqrt T + 1$ CalDist.

    Each round, with $\beta_i = m\,\alpha(p_i)$ the integer look-ahead biases:

    $$i_t : \beta_{i_t} \le 0 \le \beta_{i_t + 1} \quad\text{(bisection, } O(\log m)\text{)},\qquad
    p_t = \begin{cases} i_t/m & \text{tie = "low"} \\ (i_t+1)/m & \text{tie = "high"}\end{cases}$$

    and after $y_t$: $j = i_t + y_t$ (so $\tilde p_t = j/m$), $\beta_j \mathrel{+}= j - m y_t$.

    Guarantees (Arunachaleswaran et al. 2024): Theorem 2, $|\alpha(p_i)| \le 1$, so
    $\mathrm{ECE}(\tilde p, y) \le m+1$; Theorem 1, $\mathrm{CalDist}(p, y) \le \sum_t|p_t -
    \tilde p_t| + m + 1 \le T/m + m + 1 \le 2\sqrt T + 1$ for $m = \sqrt T$ (see
    :func:`aosa_bound` for integer $m$). Both tie rules satisfy them ("Arbitrarily predict $p_i$
    or $p_{i+1}$").

    The forecast is deterministic, so ``Forecast.public`` is the value itself: an adaptive
    adversary sees it. :meth:`info` returns the look-ahead forecast $\tilde p_t$, recorded as
    ``Trajectory.info``: the certificate sequence of Theorem 1's proof.

    Attributes:
        n_bins: grid size $m \ge 1$ (forecasts in $\{0, 1/m, \dots, 1\}$). For a horizon $T$
            use :meth:`for_horizon` ($m = \lceil\sqrt T\rceil$).
        tie: ``"low"`` predicts $p_i$, ``"high"`` predicts $p_{i+1}$.

    Example:
        >>> import jax, jcalib
        >>> f = AlmostOneStepAhead.for_horizon(10_000)
        >>> traj = jcalib.core.play(f, jcalib.natures.Bernoulli(0.3), 10_000, key=jax.random.key(0))
        >>> bool(jnp.all(jnp.abs(traj.forecast - traj.info) <= 1 / f.n_bins + 1e-6))
        True

    References:
        Arunachaleswaran, Collina, Roth, Shi (2024), *An Elementary Predictor Obtaining
        2√T+1 Distance to Calibration*, Algorithm 1, Theorems 1 and 2.
    """

    outcome_space = "binary"

    n_bins: int = size_field("n_bins", what="its per-grid-point state", hi=MAX_GRID, why=GRID_WHY)
    tie: str = eqx.field(static=True, default="low")

    def __check_init__(self):
        check_positive_int(self.n_bins, "n_bins")
        if self.tie not in ("low", "high"):
            raise ValueError(f"tie must be 'low' or 'high', got {self.tie!r}")

    @classmethod
    def for_horizon(cls, T: int, tie: str = "low") -> "AlmostOneStepAhead":
        """AOSA with Theorem 1's grid for horizon ``T``: ``n_bins = ceil(sqrt(T))``."""
        return cls(n_bins=aosa_bins(T), tie=tie)

    @property
    def value_grid(self) -> int:
        """Forecasts lie on the grid {0, 1/m, …, 1} (``record="summary"`` uses it)."""
        return self.n_bins

    @property
    def _offset(self) -> int:
        return 1 if self.tie == "high" else 0

    def init(self, key: PRNGKeyArray) -> AOSAState:
        # the table is sized for max_bins in the padded variant (jcalib._padded); entries past m stay 0
        return AOSAState(beta=jnp.zeros((table_bins(self) + 1,), jnp.int32))

    def predict(self, state: AOSAState, x, key: PRNGKeyArray) -> Forecast:
        i = sign_change_below(state.beta, self.n_bins)
        v = grid_value(self, i + self._offset)
        return Forecast(v, v)

    def _lower_index(self, forecast: Forecast) -> Int[Array, ""]:
        # Recover i from p_t = (i + offset)/m instead of searching again (exact for m < 2^22).
        v = jnp.asarray(forecast.value)
        return jnp.round(v * scale(self.n_bins, v.dtype)).astype(jnp.int32) - self._offset

    def info(self, state: AOSAState, x, forecast: Forecast, y) -> Float[Array, ""]:
        """The look-ahead forecast $\\tilde p_t = (i_t + y_t)/m$."""
        j = self._lower_index(forecast) + jnp.asarray(y, jnp.int32)
        return grid_value(self, j)

    def update(self, state: AOSAState, x, forecast: Forecast, y) -> AOSAState:
        return AOSAState(beta=lookahead_update(state.beta, self._lower_index(forecast), y, self.n_bins))


def _outcomes(value, name, bound):
    y = check_binary_labels(value, name)
    if y.ndim != 1 or y.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of outcomes, got shape {tuple(y.shape)}")
    return y


@declare(n_bins=_grid_size(4, "its biases"), y=Custom(_outcomes, "non-empty 0/1 outcomes (T,)"))
def one_step_ahead(y: Int[Array, " T"], n_bins: int) -> Float[Array, " T"]:
    r"""One-Step-Ahead's look-ahead forecasts $\tilde p_{1:T}$ for a given outcome sequence.

    Not an online forecaster: round $t$'s forecast depends on $y_t$. It is the sequence AOSA
    tracks (:meth:`AlmostOneStepAhead.info`), computed here by one ``lax.scan`` over ``y``.

    Guarantee (Arunachaleswaran et al. 2024, Theorem 2): every prefix has $|\alpha(p)| \le 1$ at
    every grid point, so $\mathrm{ECE}(\tilde p, y) \le m + 1$ (unnormalised).

    Args:
        y: 0/1 outcomes, shape ``(T,)``.
        n_bins: grid size $m$.

    Returns:
        $\tilde p_t \in \{0, 1/m, \dots, 1\}$, shape ``(T,)``, default float dtype.

    Example:
        >>> one_step_ahead(jnp.array([1, 1, 0, 1]), 2).tolist()
        [1.0, 1.0, 0.5, 0.5]

    References:
        Arunachaleswaran, Collina, Roth, Shi (2024), §3 ("One-Step-Ahead"), Theorem 2.
    """
    return _one_step_ahead(y, n_bins)


@eqx.filter_jit
def _one_step_ahead(y, m: int):
    def step(beta, yt):
        i = sign_change_index(beta)
        return lookahead_update(beta, i, yt, m), i + yt

    _, j = jax.lax.scan(step, jnp.zeros((m + 1,), jnp.int32), y)
    return grid_points(m)[j]
