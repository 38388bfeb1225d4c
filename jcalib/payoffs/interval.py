r"""Calibration and regret payoffs for real outcomes in an interval $[lo, hi]$ (Marx et al. 2024, §3, App. B).

Marx, Kuleshov, Ermon et al. (2024), *Calibrated Probabilistic Forecasts for Arbitrary
Sequences* (TMLR).

The forecast $p$ is a distribution module with ``cdf``, ``quantile``, ``moment``, ``mean`` and
``crps`` (e.g. :class:`jcalib.distributions.PiecewiseConstant`). Outcomes are scalars.

- :class:`QuantileCalibration`: $\pi_\alpha = \mathbb 1\{F_p(y) \le \alpha\} - \alpha$ over levels
  $\alpha_j = j/(m+1)$, linearised across CDF jumps (Eq. 19, :func:`linearised_quantile`).
- :class:`MomentCalibration`: $\pi_k = \mathbb E_{y\sim p} y^k - y^k$, $k \in \{1, 2\}$.
- :class:`ExpertRegret`: $\pi_i = \ell_i(p, y) - \ell_i(e, y)$ against the expert $e$ of the
  context, for $\ell$ = CRPS and squared error of the mean (Eq. 6–7), semi-consistent: driven
  through its positive part (Prop. A.5).
- :func:`experiment_payoff`: the payoff of the paper's experiments (§6.1): quantile +
  no-regret for CRPS and MSE + moments $k = 1, 2$, blocks normalised (Prop. 4.4).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._grid import MAX_GRID, float_bytes, size_field, table_size
from .._validation import Custom, Optional, check_hyper, check_positive_int, declare, Int, Real, RealArray, shown
from ..distributions import PiecewiseConstant
from .base import AbstractExpectations, AbstractIntervalPayoff, AbstractPayoff, DirectSum, ExpertContext, _bin_ends

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


def _float_dtype(value, name, bound):
    try:
        dt = jnp.dtype(value)
    except TypeError:
        raise ValueError(f"{name} must be a floating dtype, got {shown(value)}") from None
    if not jnp.issubdtype(dt, jnp.floating):
        raise ValueError(f"{name} must be a floating dtype, got {dt}")
    return dt


@declare(n=Custom(lambda v, name, b: table_size(v, name, lambda n: n * float_bytes(), what="the levels", hi=MAX_GRID),
                  "a number of levels"),
         dtype=Optional(Custom(_float_dtype, "a floating dtype")))
def quantile_levels(n: int, dtype=None):
    """The levels $\\alpha_j = j/(n+1)$, $j = 1..n$ (n = 99 gives 0.01, …, 0.99)."""
    dtype = dtype or jnp.result_type(float)
    return jnp.arange(1, n + 1, dtype=dtype) / (n + 1)


@declare(f_left=RealArray(ndim=None, lo=0.0, hi=1.0), f_right=RealArray(ndim=None, lo=0.0, hi=1.0, shape_of="f_left"),
         alpha=RealArray(ndim=None, lo=0.0, hi=1.0))
def linearised_quantile(f_left, f_right, alpha):
    r"""Eq. 19 (App. B) in closed form: the quantile payoff linearised across a CDF jump.

    With $a = F_p(y^-)$ and $b = F_p(y)$, Eq. 19's $\lambda\mathbb 1\{F_p(y)\le\alpha^-\} +
    (1-\lambda)\mathbb 1\{F_p(y)\le\alpha^+\} - \alpha$ equals
    $\mathrm{clip}((\alpha - a)/(b - a), 0, 1) - \alpha$ when $a < b$ (for $\alpha$ inside the
    jump, $\alpha^- = a$, $\alpha^+ = b$, $1-\lambda = (\alpha-a)/(b-a)$), and
    $\mathbb 1\{b \le \alpha\} - \alpha$ when $F_p$ is continuous at $y$ ($\lambda := 1$).
    Derived here from Eq. 19; it is the randomised PIT's CDF at $\alpha$ minus $\alpha$.

    Raises:
        ValueError: CDF values or levels outside [0, 1] or NaN (in the graph when traced), or
            ``f_left`` and ``f_right`` of different shapes.
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


class QuantileCalibration(AbstractExpectations):
    r"""$\pi_\alpha(x, p, y) = \mathbb 1\{F_p(y) \le \alpha\} - \alpha$, $\alpha_j = j/(m+1)$ (Marx et al. 2024, §3, Eq. 19).

    Consistent for continuous $p$ ($\mathbb E_{y\sim p}\mathbb 1\{F_p(y)\le\alpha\} = \alpha$);
    $B = \max_u \sum_{\alpha<u}\alpha^2 + \sum_{\alpha\ge u}(1-\alpha)^2$ exactly. The squared
    norm of $\bar\pi_T$ is the (sum-form) quantile calibration error QCE of Marx et al. (2024, §6) when
    $m = 99$.

    :meth:`expect_uniform` is closed-form: for $y \sim U[lo, hi]$ and a continuous increasing
    $F_p$, $P(F_p(y) \le \alpha) = \mathrm{clip}((Q_p(\alpha) - lo)/(hi - lo), 0, 1)$, which is
    differentiable in $p$'s parameters through $Q_p(\alpha)$ — unlike point-mass natures, where the
    payoff is piecewise constant in $p$ (the zero-gradient trap for which ORCA's nature family is
    uniform on bins). Where $F_p$ is flat at level $\alpha$ (empty bins) ``p.quantile`` picks one
    end of the flat piece: a set of parameters of measure zero. On a piecewise-constant forecast's
    own bins (:meth:`expect_bins`, ORCA's inner loop) it is
    :meth:`~jcalib.distributions.PiecewiseConstant.bin_fraction_below`,
    $\mathrm{clip}((\alpha - C_k)/p_k, 0, 1) - \alpha$, one dense expression of the cumulative
    masses with no quantile search. The payoff jumps in $y$ at the quantiles $Q_p(\alpha)$
    (:meth:`jumps`).

    Attributes:
        n_levels: $m$ (static).
    """

    n_levels: int = size_field("n_levels", lambda n: n, what="its quantile levels", hi=MAX_GRID, default=99)

    def __check_init__(self):
        check_positive_int(self.n_levels, "n_levels")

    @property
    def dim(self) -> int:
        return self.n_levels

    def levels(self, dtype=None):
        return quantile_levels(self.n_levels, dtype)

    def __call__(self, x, forecast, y):
        u = jnp.asarray(forecast.cdf(y))
        alpha = self.levels(u.dtype)
        return _linearised_quantile(u, u, alpha)  # PiecewiseConstant has no atoms: F(y-) = F(y)

    def expect_uniform(self, x, forecast, lo, hi):
        lo, hi = jnp.asarray(lo), jnp.asarray(hi)
        alpha = self.levels(lo.dtype)
        q = jnp.asarray(forecast.quantile(alpha))  # (m,), one vectorised call
        frac = jnp.clip((q[None, :] - lo[:, None]) / (hi - lo)[:, None], 0, 1)
        return frac - alpha[None, :]

    def expect_bins(self, x, forecast, edges):
        if not _own_bins(forecast, edges):
            return super().expect_bins(x, forecast, edges)
        alpha = self.levels(forecast.dtype)
        return forecast.bin_fraction_below(alpha) - alpha[None, :]

    def expect_bins_along(self, x, forecast, edges, c):
        r"""$v_k = \sum_j c_j(\phi_{kj} - \alpha_j)$ on a piecewise-constant forecast's own bins, in $O(n + m)$.

        $\phi_{kj} = \mathrm{clip}((\alpha_j - u_k)/q_k, 0, 1)$ with $u_k = C_k/\sum p$ and
        $q_k = p_k/\sum p$ (:meth:`expect_bins`) is 0 for the levels $\alpha_j \le u_k$, 1 for
        $\alpha_j > u_{k+1}$, and linear in between. The levels are $j/(m+1)$, so the count of
        levels $\le u$ is $\lfloor (m+1)u \rfloor$, and with the prefix sums $W_i = \sum_{j\le i}
        c_j$, $A_i = \sum_{j \le i} c_j\alpha_j$ and $i_k = \lfloor (m+1) u_k\rfloor$:

        $$v_k = (W_m - W_{i_{k+1}}) + \frac{(A_{i_{k+1}} - A_{i_k}) - u_k (W_{i_{k+1}} - W_{i_k})}{q_k}
        - A_m.$$

        $W$ and $A$ depend on $c$ only (once per round in ORCA); the prefix sums are
        compensated (:func:`_prefix_sums`), so their differences are as accurate as the dense
        sums. The gradient flows through $u$ and $q$ only ($O(n)$), not through an $(n, m)$
        matrix. Equal to ``expect_bins(x, p, edges) @ c`` except at ties $\alpha_j = u_k$ on a bin
        of zero mass (a set of measure zero).
        """
        if not _own_bins(forecast, edges):
            return super().expect_bins_along(x, forecast, edges, c)
        pref = self._prefix(c, forecast.dtype)
        cum = forecast.cdf_at_edges()
        total = cum[-1]
        u = cum / total  # (n + 1,): u_0 = 0, …, u_n = 1
        at = self._at(pref, u)
        return self._combine(pref, [a[:-1] for a in at], [a[1:] for a in at], u[:-1], forecast.probs / total)

    def _prefix(self, c, dt):
        """The compensated prefix sums $(W, A)$ of $c_j$ and $c_j\\alpha_j$ (once per direction)."""
        c = jnp.asarray(c).astype(dt)
        hi, lo = _prefix_sums(jnp.stack([c, c * self.levels(dt)]))  # both in one pass: half the program
        return hi[0], lo[0], hi[1], lo[1]

    def _at(self, pref, u):
        """$W$ and $A$ (both parts) at $\\lfloor (m+1)u\\rfloor$, the count of levels $\\le u$."""
        idx = jnp.clip(jnp.floor((self.n_levels + 1) * u), 0, self.n_levels).astype(jnp.int32)
        return [a[idx] for a in pref]

    def _combine(self, pref, at_lo, at_hi, u_lo, q):
        """$v$ of a bin whose CDF rises from $u_{lo}$ by $q$ (normalised), from $W, A$ at both ends."""
        m = self.n_levels
        w_hi, w_lo, a_hi, a_lo = pref
        d_w = (at_hi[0] - at_lo[0]) + (at_hi[1] - at_lo[1])  # Σ c_j over the levels inside the bin
        d_a = (at_hi[2] - at_lo[2]) + (at_hi[3] - at_lo[3])  # Σ c_j α_j over the same levels
        above = (w_hi[m] - at_hi[0]) + (w_lo[m] - at_hi[1])  # Σ c_j over the levels above the bin
        pos = q > 0
        inside = jnp.where(pos, (d_a - u_lo * d_w) / jnp.where(pos, q, 1), 0)
        return above + inside - (a_hi[m] + a_lo[m])

    def spike_values(self, x, forecast, edges, c, gammas):
        r"""Closed form of :meth:`~jcalib.payoffs.AbstractExpectations.spike_values`: $O(Gn)$ bin values.

        With $p' = (1-\gamma)p + \gamma\delta_j$ and $T = (1-\gamma)\sum p + \gamma$, bin $k$'s
        normalised CDF rises from $(1-\gamma)C_k/T$ by $(1-\gamma)p_k/T$ when $k < j$, from
        $((1-\gamma)C_k + \gamma)/T$ by the same when $k > j$, and from $(1-\gamma)C_j/T$ by
        $((1-\gamma)p_j + \gamma)/T$ when $k = j$: three values per $(\gamma, k)$, whatever $j$.
        """
        if not _own_bins(forecast, edges):
            return super().spike_values(x, forecast, edges, c, gammas)
        dt = forecast.dtype
        pref = self._prefix(c, dt)
        g = jnp.asarray(gammas, dt)[:, None]  # (G, 1)
        cum = forecast.cdf_at_edges()[None, :]
        T = (1 - g) * cum[:, -1:] + g
        lo, hi, q = (1 - g) * cum[:, :-1] / T, (1 - g) * cum[:, 1:] / T, (1 - g) * forecast.probs[None, :] / T
        left = self._combine(pref, self._at(pref, lo), self._at(pref, hi), lo, q)  # k < j
        right = self._combine(pref, self._at(pref, lo + g / T), self._at(pref, hi + g / T), lo + g / T, q)  # k > j
        own = self._combine(pref, self._at(pref, lo), self._at(pref, hi + g / T), lo, q + g / T)  # k = j
        return _by_side(left, own, right)

    def along_at(self, x, forecast, c, ys):
        r"""$\sum_j c_j(\mathbb 1\{F_p(y_i) \le \alpha_j\} - \alpha_j)$ at each outcome, in $O(n + m + M)$.

        With $W$, $A$ the prefix sums of $c_j$ and $c_j\alpha_j$ (:meth:`expect_bins_along`) and
        $k_i = \#\{j : \alpha_j < F_p(y_i)\}$ (from $\lfloor (m+1)F_p(y_i)\rfloor$, corrected
        by one comparison with the neighbouring levels, so it agrees with the comparison
        $F_p(y) \le \alpha_j$ of :meth:`__call__` exactly): $W_m - W_{k_i} - A_m$.
        For a piecewise-constant forecast; other forecasts use the default.
        """
        if not (isinstance(forecast, PiecewiseConstant) and forecast.batch_shape == ()):
            return super().along_at(x, forecast, c, ys)
        m, dt = self.n_levels, forecast.dtype
        u, _ = forecast.at_points(jnp.asarray(ys).astype(dt))
        alpha = self.levels(dt)
        k = jnp.clip(jnp.floor((m + 1) * u), 0, m).astype(jnp.int32)
        padded = jnp.concatenate([jnp.full((1,), -jnp.inf, dt), alpha, jnp.full((1,), jnp.inf, dt)])  # α_0, …, α_{m+1}
        k = k - (padded[k] >= u).astype(jnp.int32) + (padded[k + 1] < u).astype(jnp.int32)
        w_hi, w_lo, a_hi, a_lo = self._prefix(c, dt)
        return (w_hi[m] - w_hi[k]) + (w_lo[m] - w_lo[k]) - (a_hi[m] + a_lo[m])

    def jumps(self, x, forecast):
        """The quantiles $Q_p(\\alpha_j)$: $\\mathbb 1\\{F_p(y) \\le \\alpha\\}$ steps down where $y$ crosses them."""
        return jnp.asarray(forecast.quantile(self.levels(forecast.dtype)))

    def bound(self) -> float:
        return _sup_quantile_norm2(np.arange(1, self.n_levels + 1) / (self.n_levels + 1))


def _prefix_sums(x):
    """The prefix sums $0, x_0, x_0 + x_1, \\dots$ along the last axis of ``x`` as an unevaluated sum ``hi + lo``.

    Hillis–Steele doubling ($\\lceil\\log_2 (m+1)\\rceil$ vector steps, no loop) with the rounding
    error of every addition kept by TwoSum (Knuth): ``hi + lo`` is the exact prefix sum up to
    $O(\\varepsilon^2)$ relative, so a difference of two prefix sums loses no digits to
    cancellation.
    """
    hi = jnp.concatenate([jnp.zeros(x.shape[:-1] + (1,), x.dtype), x], axis=-1)
    lo = jnp.zeros_like(hi)
    s = 1
    while s < hi.shape[-1]:  # static: log2(m + 1) steps
        a, b = hi[..., s:], hi[..., :-s]
        t = a + b
        bb = t - a
        err = (a - (t - bb)) + (b - bb)  # TwoSum: a + b = t + err exactly
        lo = jnp.concatenate([lo[..., :s], lo[..., s:] + lo[..., :-s] + err], axis=-1)
        hi = jnp.concatenate([hi[..., :s], t], axis=-1)
        s *= 2
    return hi, lo


def float_tuple(values, name: str) -> tuple:
    """``values`` (a sequence of real numbers) as a tuple of Python floats, for a static field;
    a ``ValueError`` naming ``name`` for anything else."""
    try:
        return tuple(float(v) for v in values)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a sequence of real numbers, got {shown(values)}") from None


def check_range(lo, hi) -> None:
    """Raise ``ValueError`` unless ``lo`` and ``hi`` are finite real numbers with ``lo < hi`` (an outcome range)."""
    check_hyper(lo, "lo")
    check_hyper(hi, "hi")
    if not lo < hi:
        raise ValueError(f"need lo < hi, got lo={lo}, hi={hi}")


def _own_bins(p, edges) -> bool:
    """Whether ``p`` is a single piecewise-constant density whose bins are the static ``edges``."""
    return isinstance(p, PiecewiseConstant) and p.batch_shape == () and tuple(p.edges) == tuple(edges)


def _by_side(left, own, right):
    """``[g, j, k]`` = ``left[g, k]`` for $k < j$, ``own[g, j]`` for $k = j$, ``right[g, k]`` for $k > j$."""
    n = left.shape[-1]
    j, k = np.arange(n)[:, None], np.arange(n)[None, :]
    return jnp.where((k < j)[None], left[:, None, :], jnp.where((k > j)[None], right[:, None, :], own[:, :, None]))


def _uniform_power_mean(lo, hi, k: int):
    """$\\mathbb E_{y\\sim U[lo, hi]}\\,y^k = \\frac{1}{k+1}\\sum_{j=0}^k lo^j hi^{k-j}$ (no cancellation for narrow intervals)."""
    return sum(lo**j * hi ** (k - j) for j in range(k + 1)) / (k + 1)


class MomentCalibration(AbstractExpectations, AbstractIntervalPayoff):
    r"""$\pi_k(x, p, y) = \mathbb E_{y'\sim p}[y'^k] - y^k$ for $k$ in ``orders`` (Marx et al. 2024, §3).

    $B = \sum_k (\max_{[lo,hi]} y^k - \min_{[lo,hi]} y^k)^2$ (attained by a point mass at one end
    and $y$ at the other). Raw moments, unnormalised.

    Attributes:
        orders: tuple of positive ints (static), default (1, 2).
        lo, hi: the outcome range (static).
    """

    orders: tuple = eqx.field(static=True, default=(1, 2))
    lo: float = eqx.field(static=True, default=0.0, converter=Real(static=True).converter("lo"))
    hi: float = eqx.field(static=True, default=1.0, converter=Real(static=True).converter("hi"))

    def __check_init__(self):
        for k in self.orders:
            check_positive_int(k, "orders")
        if not self.lo < self.hi:
            raise ValueError(f"need lo < hi, got lo={self.lo}, hi={self.hi}")

    @property
    def outcome_range(self) -> tuple[float, float]:
        return float(self.lo), float(self.hi)

    @property
    def dim(self) -> int:
        return len(self.orders)

    def __call__(self, x, forecast, y):
        y = jnp.asarray(y)
        return jnp.stack([jnp.asarray(forecast.moment(k)).astype(y.dtype) - y**k for k in self.orders])

    def expect_bins_along(self, x, forecast, edges, c):
        """$\\sum_k c_k(\\mathbb E_p y^k - \\mathbb E_{U[e_j, e_{j+1}]} y^k)$ per bin $j$: a sum of vectors, no $(n, d)$ stack."""
        lo, hi = _bin_ends(edges, forecast)
        return sum(c[i] * (jnp.asarray(forecast.moment(k)).astype(lo.dtype) - _uniform_power_mean(lo, hi, k))
                   for i, k in enumerate(self.orders))

    def spike_values(self, x, forecast, edges, c, gammas):
        """Closed form: $\\mathbb E_{p'}y^k = (1-\\gamma)\\mathbb E_p y^k + \\gamma\\mathbb E_{U_j} y^k$ (linear in the mixture)."""
        if not _own_bins(forecast, edges):
            return super().spike_values(x, forecast, edges, c, gammas)
        lo, hi = _bin_ends(edges, forecast)
        g = jnp.asarray(gammas, lo.dtype)[:, None, None]
        out = 0
        for i, k in enumerate(self.orders):
            mu = _uniform_power_mean(lo, hi, k)
            mixed = (1 - g) * jnp.asarray(forecast.moment(k)).astype(lo.dtype) + g * mu[None, :, None]  # (G, n_j, 1)
            out = out + c[i] * (mixed - mu[None, None, :])
        return out

    def along_at(self, x, forecast, c, ys):
        ys = jnp.asarray(ys)
        return sum(c[i] * (jnp.asarray(forecast.moment(k)).astype(ys.dtype) - ys**k) for i, k in enumerate(self.orders))

    def expect_uniform(self, x, forecast, lo, hi):
        """$\\mathbb E_p y^k - \\frac{1}{k+1}\\sum_{j=0}^k lo^j hi^{k-j}$: exact (a polynomial in $y$)."""
        lo, hi = jnp.asarray(lo), jnp.asarray(hi)
        return jnp.stack(
            [jnp.asarray(forecast.moment(k)).astype(lo.dtype) - _uniform_power_mean(lo, hi, k) for k in self.orders], axis=-1
        )

    def bound(self) -> float:
        grid = np.linspace(self.lo, self.hi, 10001)
        grid = np.r_[grid, 0.0] if self.lo < 0 < self.hi else grid
        return float(sum((np.max(grid**k) - np.min(grid**k)) ** 2 for k in self.orders))


_LOSSES = ("crps", "mse")


class ExpertRegret(AbstractExpectations, AbstractIntervalPayoff):
    r"""$\pi_\ell(x, p, y) = \ell(p, y) - \ell(e(x), y)$ per loss $\ell$ (Marx et al. 2024, Eq. 6–7).

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
    lo: float = eqx.field(static=True, default=0.0, converter=Real(static=True).converter("lo"))
    hi: float = eqx.field(static=True, default=1.0, converter=Real(static=True).converter("hi"))

    def __check_init__(self):
        if not self.losses or any(name not in _LOSSES for name in self.losses):
            raise ValueError(f"losses must be a non-empty tuple from {_LOSSES}, got {self.losses!r}")
        check_range(self.lo, self.hi)

    @property
    def outcome_range(self) -> tuple[float, float]:
        return float(self.lo), float(self.hi)

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

    def __call__(self, x, forecast, y):
        e = self.expert_of(x)
        y = jnp.asarray(y)
        return jnp.stack([(self._loss(n, forecast, y) - self._loss(n, e, y)).astype(y.dtype) for n in self.losses])

    def _expected_loss(self, name, d, lo, hi, edges=None):
        r"""$\mathbb E_{y\sim U[lo_k, hi_k]}\,\ell(d, y)$, exact.

        Squared error: $(\mu_d - m_k)^2 + (hi_k - lo_k)^2/12$ with $m_k$ the midpoint. CRPS:
        :meth:`~jcalib.distributions.PiecewiseConstant.crps_bins` when the intervals are
        ``d``'s own bins (``edges``), else
        :meth:`~jcalib.distributions.PiecewiseConstant.crps_uniform`.
        """
        if name == "crps":
            out = d.crps_bins() if edges is not None and _own_bins(d, edges) else d.crps_uniform(lo, hi)
        else:
            out = (jnp.asarray(d.mean()).astype(lo.dtype) - (lo + hi) / 2) ** 2 + (hi - lo) ** 2 / 12
        return jnp.asarray(out).astype(lo.dtype)

    def _closed_form(self, p, e) -> bool:
        # CRPS in closed form needs piecewise-constant densities; the squared error any mean
        return "crps" not in self.losses or all(isinstance(d, PiecewiseConstant) and d.batch_shape == () for d in (p, e))

    def expect_uniform(self, x, forecast, lo, hi):
        """$\\mathbb E_{y\\sim U[lo_k, hi_k]}[\\ell(p, y) - \\ell(e, y)]$ in closed form (Gauss–Legendre for other distributions)."""
        e = self.expert_of(x)
        if not self._closed_form(forecast, e):
            return super().expect_uniform(x, forecast, lo, hi)
        lo, hi = jnp.asarray(lo), jnp.asarray(hi)
        return jnp.stack([self._expected_loss(n, forecast, lo, hi) - self._expected_loss(n, e, lo, hi) for n in self.losses], -1)

    def expect_bins(self, x, forecast, edges):
        """As :meth:`expect_uniform`, with the CRPS of each density on its own bins in $O(n)$.

        The expert's term does not depend on $p$: inside ORCA's Adam loop XLA computes it once
        per round (a loop invariant), not once per step.
        """
        e = self.expert_of(x)
        if not self._closed_form(forecast, e):
            return super().expect_bins(x, forecast, edges)
        lo, hi = _bin_ends(edges, forecast)
        return jnp.stack(
            [self._expected_loss(n, forecast, lo, hi, edges) - self._expected_loss(n, e, lo, hi, edges) for n in self.losses], -1
        )

    def expect_bins_along(self, x, forecast, edges, c):
        """:meth:`expect_bins` projected on $c$ as a sum of per-loss vectors (no $(n, d)$ stack)."""
        e = self.expert_of(x)
        if not self._closed_form(forecast, e):
            return super().expect_bins_along(x, forecast, edges, c)
        lo, hi = _bin_ends(edges, forecast)
        return sum(c[i] * (self._expected_loss(n, forecast, lo, hi, edges) - self._expected_loss(n, e, lo, hi, edges))
                   for i, n in enumerate(self.losses))

    def spike_values(self, x, forecast, edges, c, gammas):
        """Closed form: the CRPS by :meth:`~jcalib.distributions.PiecewiseConstant.crps_bins_spiked`,
        the squared error through the mixture's mean $(1-\\gamma)\\mu_p + \\gamma m_j$ (the bin
        variances $w_k^2/12$ cancel against the expert's)."""
        e = self.expert_of(x)
        if not (self._closed_form(forecast, e) and _own_bins(forecast, edges) and _own_bins(e, edges)):
            return super().spike_values(x, forecast, edges, c, gammas)
        lo, hi = _bin_ends(edges, forecast)
        mid = (lo + hi) / 2
        g = jnp.asarray(gammas, lo.dtype)[:, None, None]
        out = 0
        for i, name in enumerate(self.losses):
            if name == "crps":
                diff = forecast.crps_bins_spiked(gammas) - e.crps_bins().astype(lo.dtype)[None, None, :]
            else:
                mean = (1 - g) * jnp.asarray(forecast.mean()).astype(lo.dtype) + g * mid[None, :, None]  # (G, n_j, 1)
                diff = (mean - mid[None, None, :]) ** 2 - ((jnp.asarray(e.mean()).astype(lo.dtype) - mid) ** 2)[None, None, :]
            out = out + c[i] * diff
        return out

    def along_at(self, x, forecast, c, ys):
        """$\\sum_\\ell c_\\ell(\\ell(p, y_i) - \\ell(e, y_i))$ with each density's CRPS at all outcomes at once
        (:meth:`~jcalib.distributions.PiecewiseConstant.at_points`, $O(n + M)$)."""
        e = self.expert_of(x)
        if not self._closed_form(forecast, e):
            return super().along_at(x, forecast, c, ys)
        ys = jnp.asarray(ys)
        total = jnp.zeros_like(ys)
        for i, name in enumerate(self.losses):
            if name == "crps":
                diff = forecast.at_points(ys)[1] - e.at_points(ys.astype(e.dtype))[1].astype(ys.dtype)
            else:
                diff = (jnp.asarray(forecast.mean()).astype(ys.dtype) - ys) ** 2 - (jnp.asarray(e.mean()).astype(ys.dtype) - ys) ** 2
            total = total + c[i] * diff
        return total

    def bound(self) -> float:
        w = self.hi - self.lo
        return float(sum(w**2 if n == "crps" else w**4 for n in self.losses))

    @property
    def semi(self) -> np.ndarray:
        return np.ones(self.dim, bool)


@declare(n_levels=Int(1, MAX_GRID, bytes_per=8, what="its quantile levels"), lo=Real(static=True), hi=Real(static=True))
def experiment_payoff(n_levels: int = 99, lo: float = 0.0, hi: float = 1.0) -> DirectSum:
    r"""The payoff of Marx et al.'s experiments (§6.1), blocks normalised (Prop. 4.4).

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

    n_levels: int = size_field("n_levels", lambda n: n, what="its quantile levels", hi=MAX_GRID)

    def __check_init__(self):
        check_positive_int(self.n_levels, "n_levels")

    @property
    def dim(self) -> int:
        return self.n_levels

    def __call__(self, x, forecast, y):
        forecast = jnp.asarray(forecast)
        a = quantile_levels(self.n_levels, forecast.dtype)
        return (jnp.asarray(y) <= forecast).astype(forecast.dtype) - a

    def jumps(self, x, forecast):
        """The forecast quantiles $Q(a_j)$ themselves: $\\mathbb 1\\{y \\le Q(a)\\}$ steps there."""
        return jnp.asarray(forecast)

    def bound(self) -> float:
        return _sup_quantile_norm2(np.arange(1, self.n_levels + 1) / (self.n_levels + 1))


def _compositions(n_ticks: int, n_cells: int) -> np.ndarray:
    """All non-decreasing integer vectors $0 \\le s_1 \\le \\dots \\le s_{M-1} \\le N$ (cumulative pmf ticks),
    in lexicographic order: row $r$ is the vector of rank $r$ (:func:`_rank_compositions`)."""
    out = [[]]
    for _ in range(n_cells - 1):
        out = [v + [k] for v in out for k in range(v[-1] if v else 0, n_ticks + 1)]
    return np.asarray(out, np.int64).reshape(-1, n_cells - 1)


def _binomials(n_max: int, k_max: int) -> np.ndarray:
    """``C[n, k]`` = $\\binom{n}{k}$ for $0 \\le n \\le$ ``n_max``, $0 \\le k \\le$ ``k_max`` (int64)."""
    from math import comb

    return np.asarray([[comb(n, k) for k in range(k_max + 1)] for n in range(n_max + 1)], np.int64)


def _rank_compositions(s, n_ticks: int):
    r"""The lexicographic rank of non-decreasing vectors ``s[..., :k]`` with entries in $[0, N]$.

    Combinatorial number system, $O(k)$ per vector and no table of all vectors: the vectors
    that precede $s$ are, for each position $i$ and each smaller value $v \in [s_{i-1}, s_i)$ at
    $i$ (with $s_0 = 0$), the non-decreasing tails of length $r = k - i$ over $[v, N]$, of which
    there are $\binom{N - v + r}{r}$. By the hockey-stick identity the sum over $v$ is
    $\binom{N - s_{i-1} + r + 1}{r + 1} - \binom{N - s_i + r + 1}{r + 1}$.
    """
    k = s.shape[-1]
    # every entry read counts vectors of the grid, so it is at most the grid's size (checked to
    # fit int32 at construction); entries never read are clipped instead of overflowing
    C = jnp.asarray(np.minimum(_binomials(n_ticks + k, k), np.iinfo(np.int32).max), jnp.int32)
    prev = jnp.concatenate([jnp.zeros(s.shape[:-1] + (1,), s.dtype), s[..., :-1]], axis=-1)
    r1 = jnp.broadcast_to(jnp.arange(k, 0, -1, dtype=s.dtype), s.shape)  # r + 1 = k - i + 1 at position i
    terms = C[n_ticks - prev + r1, r1] - C[n_ticks - s + r1, r1]
    return terms.sum(-1)


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
    ``ValueError`` beyond ``max_dim`` coordinates (default $10^6$; at most $2^{31} - 1$). A
    vertex's index is its rank among the grid's vertices, computed in $O(M)$ operations by the
    combinatorial number system, so memory is that of the payoff vector itself (no table of the
    $(N+1)^{M-1}$ integer points). There is no practical oracle
    for $M > 2$ (App. C.2.3's fixed point needs a search over the simplices); use ORCA with it
    when the cells are unions of ORCA's bins (the payoff is then constant in $y$ on each bin).

    Attributes:
        cell_edges: static tuple of $M + 1$ increasing floats.
        n_ticks: $N$ (static).
        max_dim: the size limit (static).
    """

    cell_edges: tuple = eqx.field(static=True, converter=lambda e: float_tuple(e, "cell_edges"))
    n_ticks: int = size_field("n_ticks", lambda n: n + 1, what="its simplex grid", hi=MAX_GRID)
    max_dim: int = eqx.field(static=True, default=10**6, converter=Int(1, 2**31 - 1, what="coordinates").converter("max_dim"))

    def __check_init__(self):
        e = np.asarray(self.cell_edges, np.float64)
        if e.ndim != 1 or len(e) < 3 or not np.all(np.diff(e) > 0):
            raise ValueError("cell_edges must be a strictly increasing tuple of at least 3 floats")
        check_positive_int(self.n_ticks, "n_ticks")
        from math import comb

        size = (len(e) - 2) * comb(self.n_ticks + len(e) - 2, len(e) - 2)
        if size > self.max_dim or size >= 2**31:
            raise ValueError(
                f"n_ticks={self.n_ticks}: distribution calibration with M = {len(e) - 1} cells and N = n_ticks has "
                f"{size} coordinates (> max_dim = {min(self.max_dim, 2**31 - 1)}): the cost is exponential in M"
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

    def weights(self, forecast) -> tuple:
        """``(idx, w)``: the $M$ vertices (flat indices) and barycentric weights of ``p``'s cell masses."""
        F = jnp.asarray(forecast.cdf(jnp.asarray(self.cell_edges[1:-1], forecast.dtype)))  # (M-1,)
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
        # the vertices' ranks among all grid points, computed (no table of the whole grid)
        return _rank_compositions(verts, self.n_ticks), lam

    def __call__(self, x, forecast, y):
        z = jnp.asarray(self.cell_edges[1:-1], forecast.dtype)
        diff = jnp.asarray(forecast.cdf(z)) - (jnp.asarray(y).astype(forecast.dtype) <= z).astype(forecast.dtype)  # (M-1,)
        idx, lam = self.weights(forecast)
        W = jnp.zeros((self.n_vertices,), forecast.dtype).at[idx].add(lam)
        return (W[:, None] * diff[None, :]).reshape(-1)

    def jumps(self, x, forecast):
        """The interior cell edges: $F_{\\delta_y}(z) = \\mathbb 1\\{y \\le z\\}$ steps where $y$ crosses them."""
        return jnp.asarray(self.cell_edges[1:-1], forecast.dtype)

    def bound(self) -> float:
        return float(self.n_cells - 1)


_linearised_quantile = linearised_quantile.__wrapped__  # inside the payoffs' rounds: CDF values already checked
