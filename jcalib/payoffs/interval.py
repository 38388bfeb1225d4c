r"""Calibration and regret payoffs for real outcomes in an interval $[lo, hi]$ (paper 002, §3, App. B).

The forecast $p$ is a distribution module with ``cdf``, ``quantile``, ``moment``, ``mean`` and
``crps`` (e.g. :class:`jcalib.distributions.PiecewiseConstant`). Outcomes are scalars.

- :class:`QuantileCalibration`: $\pi_\alpha = \mathbb 1\{F_p(y) \le \alpha\} - \alpha$ over levels
  $\alpha_j = j/(m+1)$, linearised across CDF jumps (Eq. 19, :func:`linearised_quantile`).
- :class:`MomentCalibration`: $\pi_k = \mathbb E_{y\sim p} y^k - y^k$, $k \in \{1, 2\}$.
- :class:`ExpertRegret`: $\pi_i = \ell_i(p, y) - \ell_i(e, y)$ against the expert $e$ of the
  context, for $\ell$ = CRPS and squared error of the mean (Eq. 6–7), semi-consistent: driven
  through its positive part (Prop. A.5).
- :func:`experiment_payoff`: the payoff of paper 002's experiments (L464–466): quantile +
  no-regret for CRPS and MSE + moments $k = 1, 2$, blocks normalised (Prop. 4.4).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._validation import check_hyper, check_positive_int
from .base import AbstractPayoff, DirectSum, ExpertContext

__all__ = [
    "DistributionCalibration",
    "ExpertRegret",
    "MomentCalibration",
    "QuantileCalibration",
    "QuantileStepPayoff",
    "experiment_payoff",
    "linearised_quantile",
    "quantile_levels",
]


def quantile_levels(n: int, dtype=None):
    """The levels $\\alpha_j = j/(n+1)$, $j = 1..n$ (n = 99 gives 0.01, …, 0.99)."""
    n = check_positive_int(n, "n")
    dtype = dtype or jnp.result_type(float)
    return jnp.arange(1, n + 1, dtype=dtype) / (n + 1)


def linearised_quantile(f_left, f_right, alpha):
    r"""Eq. 19 (App. B) in closed form: the quantile payoff linearised across a CDF jump.

    With $a = F_p(y^-)$ and $b = F_p(y)$, Eq. 19's $\lambda\mathbb 1\{F_p(y)\le\alpha^-\} +
    (1-\lambda)\mathbb 1\{F_p(y)\le\alpha^+\} - \alpha$ equals
    $\mathrm{clip}((\alpha - a)/(b - a), 0, 1) - \alpha$ when $a < b$ (for $\alpha$ inside the
    jump, $\alpha^- = a$, $\alpha^+ = b$, $1-\lambda = (\alpha-a)/(b-a)$), and
    $\mathbb 1\{b \le \alpha\} - \alpha$ when $F_p$ is continuous at $y$ ($\lambda := 1$).
    Derived here from Eq. 19; it is the randomised PIT's CDF at $\alpha$ minus $\alpha$.
    """
    a, b, alpha = jnp.asarray(f_left), jnp.asarray(f_right), jnp.asarray(alpha)
    gap = b - a
    ratio = jnp.clip((alpha - a) / jnp.where(gap > 0, gap, 1), 0, 1)
    return jnp.where(gap > 0, ratio, (b <= alpha).astype(alpha.dtype)) - alpha


def _sup_quantile_norm2(levels: np.ndarray) -> float:
    # ||pi||^2 = sum_{alpha < u} alpha^2 + sum_{alpha >= u} (1 - alpha)^2 for u = F(y); it is
    # piecewise constant in u with breaks at the levels: take the max over the n + 1 pieces.
    lv = np.sort(np.asarray(levels, np.float64))
    vals = [np.sum(lv[:j] ** 2) + np.sum((1 - lv[j:]) ** 2) for j in range(len(lv) + 1)]
    return float(max(vals))


class QuantileCalibration(AbstractPayoff):
    r"""$\pi_\alpha(x, p, y) = \mathbb 1\{F_p(y) \le \alpha\} - \alpha$, $\alpha_j = j/(m+1)$ (paper 002, §3, Eq. 19).

    Consistent for continuous $p$ ($\mathbb E_{y\sim p}\mathbb 1\{F_p(y)\le\alpha\} = \alpha$);
    $B = \max_u \sum_{\alpha<u}\alpha^2 + \sum_{\alpha\ge u}(1-\alpha)^2$ exactly. The squared
    norm of $\bar\pi_T$ is the (sum-form) quantile calibration error QCE of paper 002 §6 when
    $m = 99$.

    :meth:`expect_uniform` is closed-form: for $y \sim U[lo, hi]$ and a continuous increasing
    $F_p$, $P(F_p(y) \le \alpha) = \mathrm{clip}((Q_p(\alpha) - lo)/(hi - lo), 0, 1)$, which is
    differentiable in $p$'s parameters through $Q_p(\alpha)$ — unlike point-mass natures, where
    the payoff is piecewise constant in $p$ (SPEC §3's zero-gradient trap). Where $F_p$ is flat
    at level $\alpha$ (empty bins) ``p.quantile`` picks one end of the flat piece: a set of
    parameters of measure zero.

    Attributes:
        n_levels: $m$ (static).
    """

    n_levels: int = eqx.field(static=True, default=99)

    def __check_init__(self):
        check_positive_int(self.n_levels, "n_levels")

    @property
    def dim(self) -> int:
        return self.n_levels

    def levels(self, dtype=None):
        return quantile_levels(self.n_levels, dtype)

    def __call__(self, x, p, y):
        u = jnp.asarray(p.cdf(y))
        alpha = self.levels(u.dtype)
        return linearised_quantile(u, u, alpha)  # PiecewiseConstant has no atoms: F(y-) = F(y)

    def expect_uniform(self, x, p, lo, hi):
        lo, hi = jnp.asarray(lo), jnp.asarray(hi)
        alpha = self.levels(lo.dtype)
        q = jax.vmap(p.quantile)(alpha)  # (m,)
        frac = jnp.clip((q[None, :] - lo[:, None]) / (hi - lo)[:, None], 0, 1)
        return frac - alpha[None, :]

    def bound(self) -> float:
        return _sup_quantile_norm2(np.arange(1, self.n_levels + 1) / (self.n_levels + 1))


class MomentCalibration(AbstractPayoff):
    r"""$\pi_k(x, p, y) = \mathbb E_{y'\sim p}[y'^k] - y^k$ for $k$ in ``orders`` (paper 002, §3).

    $B = \sum_k (\max_{[lo,hi]} y^k - \min_{[lo,hi]} y^k)^2$ (attained by a point mass at one end
    and $y$ at the other). Raw moments, unnormalised.

    Attributes:
        orders: tuple of positive ints (static), default (1, 2).
        lo, hi: the outcome range (static).
    """

    orders: tuple = eqx.field(static=True, default=(1, 2))
    lo: float = eqx.field(static=True, default=0.0)
    hi: float = eqx.field(static=True, default=1.0)

    def __check_init__(self):
        for k in self.orders:
            check_positive_int(k, "orders")
        if not self.lo < self.hi:
            raise ValueError(f"need lo < hi, got lo={self.lo}, hi={self.hi}")

    @property
    def dim(self) -> int:
        return len(self.orders)

    def __call__(self, x, p, y):
        y = jnp.asarray(y)
        return jnp.stack([jnp.asarray(p.moment(k)).astype(y.dtype) - y**k for k in self.orders])

    def bound(self) -> float:
        grid = np.linspace(self.lo, self.hi, 10001)
        grid = np.r_[grid, 0.0] if self.lo < 0 < self.hi else grid
        return float(sum((np.max(grid**k) - np.min(grid**k)) ** 2 for k in self.orders))


_LOSSES = ("crps", "mse")


class ExpertRegret(AbstractPayoff):
    r"""$\pi_\ell(x, p, y) = \ell(p, y) - \ell(e(x), y)$ per loss $\ell$ (paper 002, Eq. 6–7).

    $e(x)$ is the expert's forecast: ``x.expert`` for an :class:`ExpertContext`, else ``x``
    itself. Losses: ``"crps"`` ($\mathrm{CRPS}(p, y)$, in $[0, hi-lo]$) and ``"mse"``
    ($(\mathbb E_p y - y)^2$, in $[0, (hi-lo)^2]$). Semi-consistent (a proper score makes
    $\mathbb E_{y\sim p}\pi \le 0$): every coordinate is in :attr:`semi`, so Algorithm 1 uses
    $(\bar\pi)_+$ and $\|(\bar\pi_T)_+\|^2 \le B/T$ bounds the average regret (Prop. A.5).
    $B = \sum_\ell (\sup\ell - \inf\ell)^2$.

    Attributes:
        losses: tuple of names from ``("crps", "mse")`` (static).
        lo, hi: the outcome range (static).
    """

    losses: tuple = eqx.field(static=True, default=("crps", "mse"))
    lo: float = eqx.field(static=True, default=0.0)
    hi: float = eqx.field(static=True, default=1.0)

    def __check_init__(self):
        if not self.losses or any(name not in _LOSSES for name in self.losses):
            raise ValueError(f"losses must be a non-empty tuple from {_LOSSES}, got {self.losses!r}")
        check_hyper(self.lo, "lo")
        check_hyper(self.hi, "hi")
        if not self.lo < self.hi:
            raise ValueError(f"need lo < hi, got lo={self.lo}, hi={self.hi}")

    @property
    def dim(self) -> int:
        return len(self.losses)

    @staticmethod
    def expert_of(x):
        return x.expert if isinstance(x, ExpertContext) else x

    def _loss(self, name, p, y):
        if name == "crps":
            return jnp.asarray(p.crps(y))
        return (jnp.asarray(p.mean()) - y) ** 2

    def __call__(self, x, p, y):
        e = self.expert_of(x)
        y = jnp.asarray(y)
        return jnp.stack([(self._loss(n, p, y) - self._loss(n, e, y)).astype(y.dtype) for n in self.losses])

    def bound(self) -> float:
        w = self.hi - self.lo
        return float(sum(w**2 if n == "crps" else w**4 for n in self.losses))

    @property
    def semi(self) -> np.ndarray:
        return np.ones(self.dim, bool)


def experiment_payoff(n_levels: int = 99, lo: float = 0.0, hi: float = 1.0) -> DirectSum:
    r"""The payoff of paper 002's experiments (§6, L464–466), blocks normalised (Prop. 4.4).

    $\pi = \pi^{Q}/\sqrt{B_Q} \oplus \pi^{REG}/\sqrt{B_R} \oplus \pi^{M}/\sqrt{B_M}$: quantile
    calibration at $\alpha = j/(m+1)$ (the paper does not give its levels: $m = 99$ matches the QCE
    metric), regret against the context's expert for CRPS and MSE (positive part), and moments
    $k = 1, 2$. $B = 3$. The context must be the expert's forecast (or an
    :class:`ExpertContext`).

    Example:
        >>> pi = experiment_payoff()
        >>> pi.dim, pi.bound()
        (103, 3.0)
    """
    return DirectSum(
        (QuantileCalibration(n_levels), ExpertRegret(("crps", "mse"), lo, hi), MomentCalibration((1, 2), lo, hi))
    )


class QuantileStepPayoff(AbstractPayoff):
    r"""$\pi_a(x, Q, y) = \mathbb 1\{y \le Q(a)\} - a$ over $a_j = j/(m+1)$ for a quantile vector $Q$ (App. C.1.2).

    The forecast is the vector $(Q(a_j))_j$ itself (a quantile function on the level grid);
    $B$ as for :class:`QuantileCalibration`.

    Attributes:
        n_levels: $m$ (static).
    """

    n_levels: int = eqx.field(static=True)

    def __check_init__(self):
        check_positive_int(self.n_levels, "n_levels")

    @property
    def dim(self) -> int:
        return self.n_levels

    def __call__(self, x, Q, y):
        Q = jnp.asarray(Q)
        a = quantile_levels(self.n_levels, Q.dtype)
        return (jnp.asarray(y) <= Q).astype(Q.dtype) - a

    def bound(self) -> float:
        return _sup_quantile_norm2(np.arange(1, self.n_levels + 1) / (self.n_levels + 1))


def _compositions(n_ticks: int, n_cells: int) -> np.ndarray:
    """All non-decreasing integer vectors $0 \\le s_1 \\le \\dots \\le s_{M-1} \\le N$ (cumulative pmf ticks)."""
    out = [[]]
    for _ in range(n_cells - 1):
        out = [v + [k] for v in out for k in range(v[-1] if v else 0, n_ticks + 1)]
    return np.asarray(out, np.int64).reshape(-1, n_cells - 1)


class DistributionCalibration(AbstractPayoff):
    r"""$\pi_v(x, p, y) = w_v(p)\,(F_p - F_{\delta_y})$ over a discretisation of $\Delta(\mathcal Y)$ (App. B, C.2.3).

    The outcome range is cut into $M$ cells (``cell_edges``); a forecast is summarised by its
    cell masses, a point of the simplex $\Delta_M$, whose grid with $N$ ticks
    (masses in $\{0, 1/N, \dots, 1\}$) has $\binom{N+M-1}{M-1}$ vertices. $w_v(p)$ are the
    barycentric weights of $p$ in the Freudenthal triangulation of the cumulative coordinates
    $s_i = N\sum_{j\le i} p_j$ (at most $M$ non-zero; continuous in $p$); $F_p - F_{\delta_y}$ is
    the CDF difference at the $M-1$ interior cell edges. Consistent; $B \le M - 1$.

    **Cost**: the payoff has $(M-1)\binom{N+M-1}{M-1}$ coordinates — exponential in $M$ (the
    paper's remark that distribution calibration is computationally hard). Construction raises a
    ``ValueError`` beyond ``max_dim`` coordinates (default $10^6$). There is no practical oracle
    for $M > 2$ (App. C.2.3's fixed point needs a search over the simplices); use ORCA with it
    when the cells are unions of ORCA's bins (the payoff is then constant in $y$ on each bin).

    Attributes:
        cell_edges: static tuple of $M + 1$ increasing floats.
        n_ticks: $N$ (static).
        max_dim: the size limit (static).
    """

    cell_edges: tuple = eqx.field(static=True, converter=lambda e: tuple(float(v) for v in e))
    n_ticks: int = eqx.field(static=True)
    max_dim: int = eqx.field(static=True, default=10**6)

    def __check_init__(self):
        e = np.asarray(self.cell_edges, np.float64)
        if e.ndim != 1 or len(e) < 3 or not np.all(np.diff(e) > 0):
            raise ValueError("cell_edges must be a strictly increasing tuple of at least 3 floats")
        check_positive_int(self.n_ticks, "n_ticks")
        from math import comb

        size = (len(e) - 2) * comb(self.n_ticks + len(e) - 2, len(e) - 2)
        if size > self.max_dim:
            raise ValueError(
                f"distribution calibration with M = {len(e) - 1} cells and N = {self.n_ticks} ticks has "
                f"{size} coordinates (> max_dim = {self.max_dim}): the cost is exponential in M"
            )

    @property
    def n_cells(self) -> int:
        return len(self.cell_edges) - 1

    @property
    def n_vertices(self) -> int:
        from math import comb

        return comb(self.n_ticks + self.n_cells - 1, self.n_cells - 1)

    @property
    def dim(self) -> int:
        return (self.n_cells - 1) * self.n_vertices

    def _lookup(self):
        comps = _compositions(self.n_ticks, self.n_cells)
        base = (self.n_ticks + 1) ** np.arange(self.n_cells - 2, -1, -1)
        table = np.full((self.n_ticks + 1) ** (self.n_cells - 1), -1, np.int64)
        table[comps @ base] = np.arange(len(comps))
        return table, base

    def weights(self, p) -> tuple:
        """``(idx, w)``: the $M$ vertices (flat indices) and barycentric weights of ``p``'s cell masses."""
        F = jnp.asarray(p.cdf(jnp.asarray(self.cell_edges[1:-1], p.dtype)))  # (M-1,)
        s = jnp.clip(F * self.n_ticks, 0, self.n_ticks)
        fl = jnp.clip(jnp.floor(s), 0, self.n_ticks - 1)
        r = s - fl
        # Freudenthal: add unit vectors in decreasing order of r (ties: larger index first, which
        # keeps every vertex non-decreasing, i.e. a valid pmf)
        k = self.n_cells - 1
        order = jnp.lexsort((-jnp.arange(k), -r))
        rs = r[order]
        lam = jnp.concatenate([1 - rs[:1], rs[:-1] - rs[1:], rs[-1:]])  # (M,)
        steps = jnp.cumsum(jax.nn.one_hot(order, k, dtype=jnp.int32), axis=0)  # (M-1, M-1)
        verts = fl.astype(jnp.int32)[None, :] + jnp.concatenate([jnp.zeros((1, k), jnp.int32), steps])
        table, base = self._lookup()
        idx = jnp.asarray(table, jnp.int32)[verts @ jnp.asarray(base, jnp.int32)]
        return idx, lam

    def __call__(self, x, p, y):
        z = jnp.asarray(self.cell_edges[1:-1], p.dtype)
        diff = jnp.asarray(p.cdf(z)) - (jnp.asarray(y).astype(p.dtype) <= z).astype(p.dtype)  # (M-1,)
        idx, lam = self.weights(p)
        W = jnp.zeros((self.n_vertices,), p.dtype).at[idx].add(lam)
        return (W[:, None] * diff[None, :]).reshape(-1)

    def bound(self) -> float:
        return float(self.n_cells - 1)
