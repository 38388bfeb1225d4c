r"""Kuleshov & Ermon (2017) online recalibration: a calibrated forecaster per cell of the model's forecast.

The model's forecast $q_t$ falls in one of $N$ equal cells (cell $\lfloor qN\rfloor$, $q = 1$ in
the last); each cell runs its own calibrated forecaster on the rounds that reach it
(:class:`~jcalib.forecasters.Partitioned`), so the recalibrated forecasts are calibrated
conditionally on the model's cell and, through internal regret, lose little against it
(the baseline of Okoroafor, Kleinberg, Sun 2024, *Faster Recalibration of an Online Predictor
via Approachability*, §1.3–1.4).

The per-cell forecaster, :class:`SwapRegretCalibrated`, is exponentially weighted averaging
with **internal (swap) regret** by the Blum–Mansour-style reduction of Cesa-Bianchi & Lugosi
(2006, §4.4): actions are the grid points $\{0, 1/N, \dots, 1\}$ with Brier losses
$\ell_t(j) = (j/N - y_t)^2$; each swap expert $i \to j$ ($i \ne j$, $N(N+1)$ of them) has
cumulative regret $R_{ij} = \sum_s p_s(i)(\ell_s(j) - \ell_s(i))$ and weight
$d_{ij} \propto e^{-\eta R_{ij}}$ (the common term $\sum_s\langle p_s, \ell_s\rangle$ cancels);
the played distribution is the fixed point $p = \sum_{ij} d_{ij} P_{i\to j}\,p$, i.e. the
stationary distribution of the chain $Q = I + c\,(D - \mathrm{diag}(D\mathbf 1))$ (any $c > 0$
that keeps $Q$ stochastic; we take $c = 1/\max_i (D\mathbf 1)_i$). We compute it by a fixed number
of power iterations done as repeated squaring, $Q^{2^k}$ (rows renormalised after each
squaring): $O(N^3 k)$ per round, the cost the paper quotes as $O(N^3)$.

Guarantee (EWA over $M = N(N+1)$ experts with losses in $[0, 1]$): internal regret
$\max_{ij} R_{ij} \le \ln M/\eta + \eta T/8$ per cell; calibration follows from internal
regret for the Brier score (Foster–Vohra). Kuleshov & Ermon's rates are worse in ε than
Okoroafor et al.'s (their §1.3): see the tutorial's comparison.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray

from .._grid import float_bytes, grid_points, size_field, table_size
from ..core.keys import check_horizon
from .._validation import check_hyper, check_positive_int, Int
from ..core.types import AbstractForecaster, Forecast, Mixture
from ..scoring import AbstractScoringRule, Brier
from .partitioned import AbstractPartitioned, UniformCells

MAX_SWAP_BINS = 2**12  # O(n^3) work per round: 2**12 grid points already take ~10**12 flops a round

__all__ = ["KuleshovErmon", "SwapRegretCalibrated", "SwapRegretState", "swap_stationary"]


class SwapRegretState(NamedTuple):
    """Cumulative swap regrets $R_{ij}$, ``(N+1, N+1)`` (zero diagonal), and the round count."""

    regret: Float[Array, "n n"]
    t: Int[Array, ""]


def swap_stationary(regret, learning_rate, n_squarings: int = 40) -> Float[Array, " n"]:
    r"""The distribution played for cumulative swap regrets ``regret`` (see the module docstring).

    Args:
        regret: $R$, shape ``(n, n)``.
        learning_rate: $\eta$.
        n_squarings: $k$: the chain is run for $2^k$ steps (static).

    Returns:
        The stationary distribution of $Q$, shape ``(n,)``.

    Example:
        >>> p = swap_stationary(jnp.zeros((3, 3)), 0.1)
        >>> round(float(p.min()), 3), round(float(p.max()), 3)
        (0.333, 0.333)
    """
    R = jnp.asarray(regret)
    n = R.shape[0]
    off = ~jnp.eye(n, dtype=bool)
    logits = jnp.where(off, -jnp.asarray(learning_rate).astype(R.dtype) * R, -jnp.inf)
    d = jax.nn.softmax(logits.ravel()).reshape(n, n)
    rows = jnp.sum(d, axis=1)
    c = 1.0 / jnp.max(rows)
    Q = c * d + jnp.diag(1.0 - c * rows)

    def square(_, P):
        P = P @ P
        return P / jnp.sum(P, axis=1, keepdims=True)

    P = jax.lax.fori_loop(0, n_squarings, square, Q)
    p = jnp.clip(jnp.mean(P, axis=0), 0.0, None)
    return p / jnp.sum(p)


class SwapRegretCalibrated(AbstractForecaster):
    r"""EWA with internal (swap) regret on the grid $\{0, 1/N, \dots, 1\}$: a calibrated forecaster.

    Publishes ``Mixture(grid, p)`` with $p$ = :func:`swap_stationary`; ``Forecast.value`` is
    the draw. After $y_t$: $R_{ij} \mathrel{+}= p_t(i)\,(\ell_t(j) - \ell_t(i))$, $\ell_t(j) =
    s(j/N, y_t)$. Ignores the context (use it inside :class:`Partitioned`, as
    :class:`KuleshovErmon` does).

    Attributes:
        n_bins: $N$ (static; $N + 1$ actions).
        learning_rate: $\eta$ (traced).
        n_squarings: power iterations by squaring, $2^k$ chain steps (static).
        scoring: the loss of the actions (default Brier, as Kuleshov & Ermon).

    References:
        N. Cesa-Bianchi, G. Lugosi (2006), *Prediction, Learning, and Games*, §4.4; A. Blum,
        Y. Mansour (2007), *From external to internal regret*, JMLR.
    """

    outcome_space = "binary"

    n_bins: int = size_field("n_bins", lambda n: (n + 1) ** 2, what="its swap-regret table", hi=MAX_SWAP_BINS,
                             why=": the stationary distribution costs O(n_bins^3) per round")
    learning_rate: float
    n_squarings: int = eqx.field(static=True, default=40, converter=Int(1, 64, what="squarings: 2**64 chain steps already").converter("n_squarings"))
    scoring: AbstractScoringRule = eqx.field(default_factory=Brier)

    def __check_init__(self):
        check_positive_int(self.n_bins, "n_bins")
        check_positive_int(self.n_squarings, "n_squarings")
        check_hyper(self.learning_rate, "learning_rate", 0.0, open_lo=True)

    @property
    def value_grid(self) -> int:
        return self.n_bins

    def init(self, key: PRNGKeyArray) -> SwapRegretState:
        n = self.n_bins + 1
        return SwapRegretState(jnp.zeros((n, n), jnp.result_type(float)), jnp.zeros((), jnp.int32))

    def predict(self, state: SwapRegretState, x, key: PRNGKeyArray) -> Forecast:
        p = swap_stationary(state.regret, self.learning_rate, self.n_squarings)
        mix = Mixture(support=grid_points(self.n_bins), probs=p)
        return Forecast(mix.sample(key=key), mix)

    def update(self, state: SwapRegretState, x, forecast: Forecast, y) -> SwapRegretState:
        fdt = state.regret.dtype
        p = forecast.public.probs.astype(fdt)
        loss = self.scoring(grid_points(self.n_bins).astype(fdt), jnp.asarray(y, jnp.int32)).astype(fdt)
        return SwapRegretState(state.regret + p[:, None] * (loss[None, :] - loss[:, None]), state.t + 1)


class KuleshovErmon(AbstractPartitioned):
    r"""Kuleshov & Ermon (2017): one forecaster per each of $N$ uniform cells of $q_t$, each running
    :class:`SwapRegretCalibrated` on the grid $\{0, 1/N, \dots, 1\}$.

    An :class:`~jcalib.forecasters.AbstractPartitioned` forecaster (what
    :class:`~jcalib.forecasters.Partitioned` does, with the inner forecaster and the cells built
    from $N$ and $\eta$); :meth:`for_horizon` picks them from $T$.

    Args:
        n_cells: $N$: cells of the model's forecast and grid size of each cell's forecaster.
        learning_rate: EWA's $\eta$.
        n_squarings: power iterations by squaring.
        scoring: the loss (default Brier).

    Example:
        >>> import jax, jcalib
        >>> f = KuleshovErmon(5, 0.05)
        >>> traj = jcalib.core.play(f, jcalib.natures.TwoLevelModel(), 500, key=jax.random.key(0))
        >>> traj.forecast.shape
        (500,)

    References:
        V. Kuleshov, S. Ermon (2017), *Estimating uncertainty online against an adversary*, AAAI.
    """

    inner: SwapRegretCalibrated
    n_cells: int = eqx.field(static=True)
    cell_of: UniformCells

    def __init__(self, n_cells: int, learning_rate: float, *, n_squarings: int = 40,
                 scoring: AbstractScoringRule | None = None):
        n = table_size(n_cells, "n_cells", lambda n: n * (n + 1) ** 2 * float_bytes(), hi=MAX_SWAP_BINS,
                       what="its per-cell swap-regret tables", why=": each cell costs O(n_cells^3) per round")
        self.inner = SwapRegretCalibrated(n, learning_rate, n_squarings, Brier() if scoring is None else scoring)
        self.n_cells = n
        self.cell_of = UniformCells(n)

    @classmethod
    def for_horizon(cls, T: int, n_cells: int | None = None, **kw) -> "KuleshovErmon":
        r"""$N = \lceil T^{1/3}\rceil$ by default and $\eta = \sqrt{2\ln(N+1)/T}$ (jcalib's
        choice: $\sqrt{2\ln N/T}$ with $N + 1$ actions in place of $N$, so that $N = 1$ still learns);
        ``kw`` (``n_squarings``, ``scoring``) pass through."""
        T = check_horizon(T)
        N = max(1, math.ceil(T ** (1 / 3) - 1e-9)) if n_cells is None else check_positive_int(n_cells, "n_cells")
        return cls(N, math.sqrt(2 * math.log(N + 1) / T), **kw)
