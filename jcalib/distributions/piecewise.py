r"""Piecewise-constant densities on fixed bins: ORCA's forecast family (Marx et al. 2024).

A density on $[e_0, e_n]$ with edges $e_0 < e_1 < \dots < e_n$ and bin masses
$p_0, \dots, p_{n-1}$ ($p_i \ge 0$, $\sum_i p_i = 1$) is constant, $p_i / w_i$, on bin $i = [e_i,
e_{i+1})$ of width $w_i = e_{i+1} - e_i$. Marx, Kuleshov, Ermon et al.'s ORCA (Algorithm 2, §6.1)
forecasts with 50 equal bins of the rescaled outcome range $[0, 1]$ and parametrises the masses by
logits $\theta$, $p = \mathrm{softmax}(\theta)$ (the logits are jcalib's choice; the paper does not
say how it parametrises the masses); its nature family is the 50 uniform-on-bin components (one-hot
masses).

With $C_i = \sum_{j<i} p_j$ (so $C_0 = 0$, $C_n = 1$) and $D_i = 1 - C_i = \sum_{j \ge i} p_j$,
everything is in closed form:

- CDF, piecewise linear: $F(y) = \sum_i p_i\, \mathrm{clip}((y - e_i)/w_i, 0, 1)$; 0 below
  $e_0$, 1 above $e_n$.
- Moments, per bin exactly: $\mathbb E[Y^k] = \sum_i p_i\, \frac{e_{i+1}^{k+1} - e_i^{k+1}}
  {(k+1) w_i} = \sum_i p_i\, \frac{1}{k+1}\sum_{j=0}^{k} e_i^j e_{i+1}^{k-j}$ (the second form
  has no cancellation for narrow bins). Variance by the law of total variance,
  $\sum_i p_i (w_i^2/12 + (m_i - \mu)^2)$ with $m_i$ the bin midpoints.
- CRPS, $\int (F(z) - 1[y \le z])^2 dz$. $F$ is linear on each bin, and a linear function
  going from $A$ to $B$ over a length $L$ has $\int f^2 = L (A^2 + AB + B^2)/3$. With
  $\bar y = \mathrm{clip}(y, e_0, e_n)$, $s_i = \mathrm{clip}(\bar y, e_i, e_{i+1})$,
  $u_i = F(s_i) = C_i + p_i (s_i - e_i)/w_i$ and $v_i = 1 - u_i = D_{i+1} + p_i(e_{i+1} - s_i)/w_i$:

  $$\mathrm{CRPS}(F, y) = |y - \bar y| + \sum_i \Big[\frac{s_i - e_i}{3}\big(C_i^2 + C_i u_i
  + u_i^2\big) + \frac{e_{i+1} - s_i}{3}\big(v_i^2 + v_i D_{i+1} + D_{i+1}^2\big)\Big].$$

  The first term is the part of the integral outside $[e_0, e_n]$ (where the integrand is 1
  between $y$ and the support), the sum the part of each bin left and right of $y$. $O(n)$
  per outcome, exact, and linear-quadratic in $p$, so gradients through logits are exact.
- Quantile, the generalised inverse $Q(\alpha) = \inf\{y : F(y) \ge \alpha\}$ for
  $\alpha \in (0, 1]$, and $Q(0) = $ the left end of the first bin of positive mass (the limit
  $\alpha \downarrow 0$; the infimum itself is $-\infty$). $F$ is continuous, so $F(Q(\alpha)) =
  \alpha$; where $F$ is flat (bins of zero mass) $Q$ jumps, and at a level $\alpha = C_i$ of
  a flat stretch it takes the stretch's *left* end (the right end of the last positive-mass
  bin before it). For $\alpha$ strictly inside $(C_i, C_{i+1})$ it lies in bin $i$, which
  then has positive mass: $Q(\alpha) = e_i + w_i(\alpha - C_i)/p_i$.

The edges are a *static* field (a tuple of Python floats): densities with the same edges have
the same pytree structure, so they stack, vmap, and average in a :class:`jcalib.core.Mixture`
(whose ``mean()`` averages the masses, which is the mixture density). Bin constants (widths,
midpoints, per-bin moments, quadrature nodes) are computed in float64 NumPy from the edges and
cast to the masses' dtype.

References:
    Marx, Kuleshov, Ermon et al. (2024), *Calibrated Probabilistic Forecasts for Arbitrary
    Sequences* (TMLR),
    Algorithm 2 and §6.1.
    T. Gneiting and A. E. Raftery (2007), *Strictly proper scoring rules, prediction, and
    estimation*, JASA 102:359–378 (CRPS).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._validation import Custom, Real, as_float_array, check_key, declare, in_graph, shown
from ..config import checks
from .base import ARG_NAME, SIZE, AbstractDistribution, _batched, _check_static_int, _jit

__all__ = ["PiecewiseConstant", "uniform_edges", "check_edges", "probs_atol"]


def _above_low(high, name, bound) -> float:
    high = Real(static=True).check(high, name, bound)
    low = bound["low"]
    if not low < high:
        raise ValueError(f"low must be < {name}, got low={low!r}, {name}={high!r}")
    return high


@declare(n=SIZE, low=Real(static=True), high=Custom(_above_low, "a finite real number > low"))
def uniform_edges(n: int, low: float = 0.0, high: float = 1.0) -> tuple[float, ...]:
    """The ``n + 1`` edges of ``n`` equal bins of ``[low, high]``, as a tuple of Python floats.

    Computed in float64 as ``low + (high - low) * i / n`` with the last edge exactly ``high``.

    Example:
        >>> uniform_edges(4)
        (0.0, 0.25, 0.5, 0.75, 1.0)
    """
    return tuple(low + (high - low) * i / n for i in range(n)) + (high,)


def _edges(edges, name: str = "edges", bound=None) -> tuple[float, ...]:
    """:func:`check_edges` without the declaration's binding (the constructors' path)."""
    if isinstance(edges, jax.core.Tracer):
        raise ValueError(f"{name} must be concrete (a tuple of floats): they are a static field")
    try:
        e = np.asarray(edges)
        if e.dtype.kind not in "biuf" or e.dtype.kind == "b":
            raise TypeError(e.dtype)
        e = e.astype(np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a sequence of real numbers, got {shown(edges)}") from err
    if e.ndim != 1 or e.size < 2:
        raise ValueError(f"{name} must be a 1-D sequence of at least 2 floats, got shape {e.shape}")
    if not np.all(np.isfinite(e)):
        raise ValueError(f"{name} must be finite")
    if not np.all(np.diff(e) > 0):
        raise ValueError(f"{name} must be strictly increasing")
    return tuple(float(v) for v in e)


@declare(name=ARG_NAME, edges=Custom(lambda e, _, bound: _edges(e, bound["name"]),
                                     "at least 2 finite, strictly increasing floats (static)"))
def check_edges(edges: Sequence[float], name: str = "edges") -> tuple[float, ...]:
    """Bin edges as a tuple of Python floats: at least 2, finite, strictly increasing.

    Raises ``ValueError`` naming ``name`` otherwise (traced arrays are refused: edges are
    static, fixed at construction).
    """
    return edges  # checked and converted by the declaration


_TRIANGULAR_MAX = 256  # bins up to which a cumulative sum is a product with a triangular matrix


def _cumsum(x: Array, reverse: bool = False) -> Array:
    """Cumulative sums over the last axis (from the right with ``reverse``).

    Up to 256 bins this is a product with a constant triangular 0/1 matrix: XLA lowers
    ``jnp.cumsum`` on a CPU to a reduce-window, which costs $O(n^2)$ scalar additions per row
    without vectorisation and was most of an ORCA step (9 of them, 55% of the time at B = 64;
    ``benchmarks/profile_orca.py --trace``), while the product is one vectorised matrix multiply
    for the whole batch. Precision ``HIGHEST``: accelerators would otherwise multiply in reduced
    precision. More bins fall back to ``jnp.cumsum`` ($n^2$ would grow too large).
    """
    n = x.shape[-1]
    if n > _TRIANGULAR_MAX:
        return jnp.flip(jnp.cumsum(jnp.flip(x, -1), axis=-1), -1) if reverse else jnp.cumsum(x, axis=-1)
    tri = np.tril(np.ones((n, n))) if reverse else np.triu(np.ones((n, n)))  # tri[j, k] = 1{j >= k} / 1{j <= k}
    return jnp.matmul(x, jnp.asarray(tri, x.dtype), precision=jax.lax.Precision.HIGHEST)


def _float_eps(dtype, name, bound) -> float:
    """The machine epsilon of a floating ``dtype`` (a ``ValueError`` naming ``name`` otherwise)."""
    try:
        with warnings.catch_warnings():  # NumPy warns on deprecated aliases before refusing them
            warnings.simplefilter("ignore", DeprecationWarning)
            return float(jnp.finfo(dtype).eps)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a floating dtype, got {dtype!r}") from None


def _atol(n_bins: int, eps: float) -> float:
    return max(1e-5, n_bins * eps)


@declare(n_bins=SIZE, dtype=Custom(_float_eps, "a floating dtype"))
def probs_atol(n_bins: int, dtype) -> float:
    """The tolerance on $|\\sum_i p_i - 1|$ accepted at construction.

    $\\max(10^{-5}, n\\,\\varepsilon)$ with $\\varepsilon$ the dtype's machine epsilon: 1e-5 in
    float32 for up to ~80 bins (a softmax's sum is off by a few ulps per term), the same in
    float64, and looser for half precision.
    """
    return _atol(n_bins, dtype)  # the declaration turned dtype into its machine epsilon


def _mass_rules(v: Array, n: int) -> list[tuple[Array, str]]:
    """The value rules of ``n`` bin masses ``v`` (``(..., n)``) as ``(bad, message)`` pairs."""
    atol = _atol(n, float(jnp.finfo(v.dtype).eps))  # n and the dtype come from an array: valid
    return [(~jnp.all(jnp.isfinite(v)), "probs contains NaN or infinite values"),
            (jnp.any(v < 0), "probs must be non-negative"),
            (jnp.any(jnp.abs(jnp.sum(v, axis=-1) - 1) > atol), f"probs must sum to 1 over the last axis (to {atol:.3g})")]


class PiecewiseConstant(AbstractDistribution):
    r"""A batch of piecewise-constant densities on shared bins (see the module docstring).

    Attributes:
        probs: ``(..., n)`` bin masses, non-negative and summing to 1 over the last axis (to
            :func:`probs_atol`; checked at construction when concrete). Leading axes are the
            batch shape.
        edges: static tuple of ``n + 1`` strictly increasing Python floats.

    Example:
        >>> d = PiecewiseConstant.uniform(4)
        >>> round(float(d.cdf(0.3)), 6), float(d.quantile(0.5)), round(float(d.crps(0.5)), 6)
        (0.3, 0.5, 0.083333)
    """

    probs: Float[Array, "... n"]
    edges: tuple[float, ...] = eqx.field(static=True)

    def __init__(self, probs: ArrayLike, edges: Sequence[float]):
        self.edges = _edges(edges)
        probs = as_float_array(probs, "probs")
        if isinstance(probs, jax.core.Tracer) and probs.ndim >= 1:  # concrete masses: __check_init__
            for bad, message in _mass_rules(probs, len(self.edges) - 1):
                probs = in_graph(probs, bad, message)
        self.probs = probs

    def __check_init__(self):
        n = len(self.edges) - 1
        if self.probs.ndim < 1 or self.probs.shape[-1] != n:
            raise ValueError(
                f"probs must have shape (..., {n}) for {n + 1} edges, got {tuple(self.probs.shape)}"
            )
        if isinstance(self.probs, jax.core.Tracer):
            return  # values are checked where concrete; traced masses are the caller's contract
        v = np.asarray(self.probs, np.float64)
        if not np.all(np.isfinite(v)):
            raise ValueError("probs contains NaN or infinite values")
        if np.any(v < 0):
            raise ValueError(f"probs must be non-negative; found {float(v.min())!r}")
        if v.size:
            err = float(np.max(np.abs(v.sum(axis=-1) - 1)))
            atol = _atol(n, float(jnp.finfo(self.probs.dtype).eps))
            if err > atol:
                raise ValueError(f"probs must sum to 1 over the last axis (off by {err:.3g} > {atol:.3g})")

    def value_rules(self) -> list[tuple[Array, str]]:
        return _mass_rules(self.probs, len(self.edges) - 1)

    @classmethod
    def _trusted(cls, probs: ArrayLike, edges: Sequence[float]) -> PiecewiseConstant:
        """Masses valid by construction (a softmax, normalised counts, another distribution's
        bins): no in-graph check, for the forecasters' inner loops."""
        with checks(False):
            return cls(probs, edges)

    # ----------------------------------------------------------------------------- constructors
    @classmethod
    def from_logits(cls, logits: ArrayLike, edges: Sequence[float]) -> PiecewiseConstant:
        r"""Masses $p = \mathrm{softmax}(\theta)$ over the last axis (ORCA's parametrisation).

        ``jax.nn.softmax`` subtracts the maximum, so large logits do not overflow; a logit of
        $-\infty$ gives a bin of zero mass.
        """
        logits = as_float_array(logits, "logits")
        if not isinstance(logits, jax.core.Tracer) and np.any(np.isnan(np.asarray(logits))):
            raise ValueError("logits contains NaN")
        return cls._trusted(jax.nn.softmax(logits, axis=-1), edges)

    @classmethod
    def uniform(cls, n: int, low: float = 0.0, high: float = 1.0) -> PiecewiseConstant:
        """The uniform density on ``[low, high]``, as ``n`` equal bins of mass ``1/n``."""
        edges = uniform_edges(n, low, high)
        return cls(jnp.full((n,), 1.0 / n, jnp.result_type(float)), edges)

    # ------------------------------------------------------------------------------- properties
    @property
    def n_bins(self) -> int:
        return len(self.edges) - 1

    @property
    def low(self) -> float:
        return self.edges[0]

    @property
    def high(self) -> float:
        return self.edges[-1]

    @property
    def dtype(self) -> jnp.dtype:
        return self.probs.dtype

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return tuple(self.probs.shape[:-1])

    @property
    def widths(self) -> Float[Array, " n"]:
        """Bin widths $w_i = e_{i+1} - e_i$, in the masses' dtype."""
        return jnp.asarray(np.diff(self._e), self.dtype)

    @property
    def midpoints(self) -> Float[Array, " n"]:
        """Bin midpoints $(e_i + e_{i+1})/2$, in the masses' dtype."""
        return jnp.asarray(self._mid, self.dtype)

    @property
    def _e(self) -> np.ndarray:
        return np.asarray(self.edges, np.float64)

    @property
    def _mid(self) -> np.ndarray:
        e = self._e
        return 0.5 * (e[:-1] + e[1:])

    def _c(self, arr: np.ndarray, ndim: int) -> Array:
        """A float64 NumPy bin constant of shape ``(n,)``, cast and reshaped to rank ``ndim + 1``."""
        return jnp.asarray(arr, self.dtype).reshape((1,) * ndim + arr.shape)

    def _cums(self, shape):
        """Masses broadcast to ``shape + (n,)``, with $C_i$ (mass left of bin i) and $D_{i+1}$ (right)."""
        p = self.probs
        c_hi = _cumsum(p)  # once per density, then broadcast: not once per outcome
        c_lo = jnp.concatenate([jnp.zeros_like(p[..., :1]), c_hi[..., :-1]], axis=-1)
        d_lo = _cumsum(p, reverse=True)
        d_hi = jnp.concatenate([d_lo[..., 1:], jnp.zeros_like(p[..., :1])], axis=-1)
        return tuple(_batched(a, shape) for a in (p, c_lo, c_hi, d_hi))

    # ---------------------------------------------------------------------------------- methods
    @_jit
    def cdf(self, y: ArrayLike) -> Float[Array, "..."]:
        r"""$F(y) = \sum_i p_i\,\mathrm{clip}((y - e_i)/w_i, 0, 1)$: 0 below ``low``, 1 above ``high``."""
        y = self._y(y)
        e = self._e
        p = _batched(self.probs, y.shape)
        t = jnp.clip((y[..., None] - self._c(e[:-1], y.ndim)) / self._c(np.diff(e), y.ndim), 0, 1)
        return jnp.sum(p * t, axis=-1)

    @_jit
    def cdf_at_edges(self) -> Float[Array, "... n+1"]:
        r"""$F(e_0), \dots, F(e_n)$, i.e. $0, C_1, \dots, C_n$ (the cumulative masses; $C_n = \sum_i p_i$)."""
        return jnp.concatenate([jnp.zeros_like(self.probs[..., :1]), _cumsum(self.probs)], axis=-1)

    @_jit
    def quantile(self, alpha: ArrayLike) -> Float[Array, "..."]:
        r"""The generalised inverse $Q(\alpha) = \inf\{y : F(y) \ge \alpha\}$ (module docstring).

        $Q(0)$ is the left end of the first bin of positive mass; at the level of a flat
        stretch of $F$ (bins of zero mass) $Q$ is the stretch's left end. ``alpha`` outside
        $[0, 1]$ gives NaN. The masses are treated as normalised by their sum, so
        $Q(1)$ is the right end of the last bin of positive mass even when the sum is off by
        round-off.
        """
        alpha = self._y(alpha)
        p, c_lo, c_hi, _ = self._cums(alpha.shape)
        target = alpha * c_hi[..., -1]
        # bin i = the first whose upper cumulative mass reaches the target; "<= 0" skips
        # leading bins of zero mass when alpha = 0. For alpha > 0 the bin found has p_i > 0.
        below = (c_hi < target[..., None]) | (c_hi <= 0)
        i = jnp.minimum(jnp.sum(below, axis=-1), self.n_bins - 1)[..., None]
        p_i = jnp.take_along_axis(p, i, axis=-1)[..., 0]
        c_i = jnp.take_along_axis(c_lo, i, axis=-1)[..., 0]
        e = self._e
        a_i = jnp.take(jnp.asarray(e[:-1], self.dtype), i[..., 0])
        w_i = jnp.take(jnp.asarray(np.diff(e), self.dtype), i[..., 0])
        pos = p_i > 0
        frac = jnp.where(pos, (target - c_i) / jnp.where(pos, p_i, 1), 0)
        q = a_i + w_i * jnp.clip(frac, 0, 1)
        return jnp.where((alpha >= 0) & (alpha <= 1), q, jnp.nan)

    @_jit
    def mean(self) -> Float[Array, "..."]:
        r"""$\sum_i p_i (e_i + e_{i+1})/2$."""
        return self.probs @ jnp.asarray(self._mid, self.dtype)

    @_jit(static_argnames=("k",))
    def moment(self, k: int) -> Float[Array, "..."]:
        r"""$\mathbb E[Y^k] = \sum_i p_i \frac{1}{k+1} \sum_{j=0}^k e_i^j e_{i+1}^{k-j}$, exact.

        Args:
            k: a Python int $\ge 0$ (static).
        """
        k = _check_static_int(k, "k")
        e = self._e
        a, b = e[:-1], e[1:]
        m = sum(a**j * b ** (k - j) for j in range(k + 1)) / (k + 1)
        return self.probs @ jnp.asarray(m, self.dtype)

    @_jit
    def variance(self) -> Float[Array, "..."]:
        r"""$\sum_i p_i\,(w_i^2/12 + (m_i - \mu)^2)$ (law of total variance; no cancellation)."""
        nb = len(self.batch_shape)
        mid = self._c(self._mid, nb)
        within = jnp.asarray(np.diff(self._e) ** 2 / 12, self.dtype)
        dev = (mid - self.mean()[..., None]) ** 2
        return self.probs @ within + jnp.sum(self.probs * dev, axis=-1)

    @_jit(static_argnames=("fn", "n_points"))
    def expect(self, fn, n_points: int = 8) -> Float[Array, "..."]:
        r"""$\mathbb E[f(Y)]$ by ``n_points``-point Gauss–Legendre quadrature on every bin.

        $\sum_i p_i \sum_j \tfrac{g_j}{2} f(m_i + \tfrac{w_i}{2} t_j)$ with nodes $t_j$ and
        weights $g_j$ on $[-1, 1]$: exact when $f$ is a polynomial of degree
        $\le 2\,n_\text{points} - 1$ on each bin (so also for piecewise polynomials whose
        breakpoints are edges).

        Args:
            fn: vectorised function of an ``(n, n_points)`` array of nodes; its output may have
                extra leading axes ``(..., n, n_points)`` that broadcast against the batch shape.
            n_points: quadrature points per bin (Python int $\ge 1$).
        """
        n_points = _check_static_int(n_points, "n_points", low=1)
        t, g = np.polynomial.legendre.leggauss(n_points)
        e = self._e
        nodes = self._mid[:, None] + 0.5 * np.diff(e)[:, None] * t[None, :]
        out = jnp.asarray(fn(jnp.asarray(nodes, self.dtype)))
        out = out.astype(self.dtype)
        v = out @ jnp.asarray(0.5 * g, self.dtype)  # (..., n)
        shape = jnp.broadcast_shapes(v.shape, self.probs.shape)
        return jnp.sum(jnp.broadcast_to(self.probs, shape) * jnp.broadcast_to(v, shape), axis=-1)

    @_jit
    def crps(self, y: ArrayLike) -> Float[Array, "..."]:
        r"""$\int (F(z) - 1[y \le z])^2 dz$ in closed form (module docstring); any real ``y``."""
        y = self._y(y)
        e = self._e
        nd = y.ndim
        a, b, w = self._c(e[:-1], nd), self._c(e[1:], nd), self._c(np.diff(e), nd)
        ycl = jnp.clip(y, self.low, self.high)
        s = jnp.clip(ycl[..., None], a, b)
        p, c_lo, _, d_hi = self._cums(y.shape)
        u = c_lo + p * ((s - a) / w)  # F(s_i)
        v = d_hi + p * ((b - s) / w)  # 1 - F(s_i)
        left = (s - a) * (c_lo**2 + c_lo * u + u**2)
        right = (b - s) * (v**2 + v * d_hi + d_hi**2)
        return jnp.sum(left + right, axis=-1) / 3 + jnp.abs(y - ycl)

    @_jit
    def crps_bins(self) -> Float[Array, "... n"]:
        r"""$\mathbb E_{y\sim U[e_k, e_{k+1}]}\,\mathrm{CRPS}(F, y)$ for every bin $k$ of this density's own edges.

        With $C_j$, $D_j = 1 - C_j$ as in the module docstring, the bins left of $k$ contribute
        their whole $\int F^2$, the bins right of it their whole $\int (1 - F)^2$ (a linear
        function from $A$ to $B$ over $L$ has $\int f^2 = L(A^2 + AB + B^2)/3$), and bin $k$
        itself, averaged over $y = e_k + w_k t$, $t \sim U[0, 1]$,
        $w_k\int_0^1 (1 - t)(C_k + p_k t)^2 dt + w_k\int_0^1 (1 - t)(D_{k+1} + p_k t)^2 dt$:

        $$G_k + w_k\Big(\frac{C_k^2 + D_{k+1}^2}{2} + \frac{(C_k + D_{k+1})\,p_k}{3}
        + \frac{p_k^2}{6}\Big) + H_k,\quad G_k = \sum_{j<k}\frac{w_j}{3}(C_j^2 + C_jC_{j+1} +
        C_{j+1}^2),\; H_k = \sum_{j>k}\frac{w_j}{3}(D_j^2 + D_jD_{j+1} + D_{j+1}^2).$$

        Exact, $O(n)$ for all $n$ bins together (two cumulative sums), and free of cancellation.
        The expected CRPS of ORCA's nature components (Marx et al., §6.1).
        """
        p, c_lo, c_hi, d_hi = self._cums(self.batch_shape)
        d_lo = d_hi + p
        w = self._c(np.diff(self._e), len(self.batch_shape))
        left = w * (c_lo**2 + c_lo * c_hi + c_hi**2) / 3  # whole bin j, left of y
        right = w * (d_lo**2 + d_lo * d_hi + d_hi**2) / 3  # whole bin j, right of y
        zero = jnp.zeros_like(p[..., :1])
        g = jnp.concatenate([zero, _cumsum(left)[..., :-1]], axis=-1)  # sum over j < k
        h = jnp.concatenate([_cumsum(right, reverse=True)[..., 1:], zero], axis=-1)  # sum over j > k
        within = w * ((c_lo**2 + d_hi**2) / 2 + (c_lo + d_hi) * p / 3 + p**2 / 6)
        return g + within + h

    def _bin_of(self, y: Array) -> Array:
        """The bin $i$ with $e_i \\le y < e_{i+1}$ of each ``y`` in $[e_0, e_n]$ (the last bin closed), int32.

        Equal edges: $\\lfloor (y - e_0)/w\\rfloor$ corrected by one comparison with each
        neighbouring edge ($O(1)$ per outcome, the same answer as comparing with every edge);
        other edges: the count of inner edges $\\le y$ ($O(n)$).
        """
        e = self._e
        n = self.n_bins
        inner = jnp.asarray(e[1:-1], self.dtype)
        w = np.diff(e)
        if not np.allclose(w, w[0], rtol=1e-9, atol=0):
            return jnp.sum(y[..., None] >= inner.reshape((1,) * y.ndim + inner.shape), axis=-1).astype(jnp.int32)
        i = jnp.clip(jnp.floor((y - e[0]) * (1 / w[0])), 0, n - 1).astype(jnp.int32)
        padded = jnp.concatenate([jnp.full((1,), -jnp.inf, self.dtype), inner, jnp.full((1,), jnp.inf, self.dtype)])
        return i - (y < padded[i]).astype(jnp.int32) + (y >= padded[i + 1]).astype(jnp.int32)

    @_jit
    def at_points(self, y: ArrayLike) -> tuple[Float[Array, " M"], Float[Array, " M"]]:
        r"""$F(y_i)$ and $\mathrm{CRPS}(F, y_i)$ at many outcomes ``y`` ``(M,)`` in $O(n + M)$ (unbatched density).

        :meth:`cdf` and :meth:`crps` cost $O(n)$ per outcome. Here the bin $i$ of each $y$ is
        found once, and with $s = \mathrm{clip}(y, e_i, e_{i+1})$, $u = C_i + p_i(s - e_i)/w_i$,
        $v = D_{i+1} + p_i(e_{i+1} - s)/w_i$ and the exclusive prefix / suffix sums $G_i$, $H_i$
        of :meth:`crps_bins` (whole bins left and right of $y$),

        $$F(y) = u,\qquad \mathrm{CRPS}(F, y) = G_i + \frac{(s - e_i)(C_i^2 + C_iu + u^2) +
        (e_{i+1} - s)(v^2 + vD_{i+1} + D_{i+1}^2)}{3} + H_i + |y - \mathrm{clip}(y, e_0, e_n)|,$$

        the same terms as :meth:`crps`, summed by bins (equal to round-off). ORCA's pointwise
        certificate evaluates the payoff at about 600 outcomes per round through this.
        """
        if self.batch_shape != () or jnp.ndim(y) != 1:
            raise ValueError(
                f"at_points needs an unbatched density and y of shape (M,), got {self.batch_shape} and {jnp.shape(y)}"
            )
        y = self._y(y)
        e = self._e
        p, c_lo, c_hi, d_hi = self._cums(())
        d_lo = d_hi + p
        w = jnp.asarray(np.diff(e), self.dtype)
        a = jnp.asarray(e[:-1], self.dtype)
        left = w * (c_lo**2 + c_lo * c_hi + c_hi**2) / 3  # whole bin j, left of y
        right = w * (d_lo**2 + d_lo * d_hi + d_hi**2) / 3  # whole bin j, right of y
        zero = jnp.zeros_like(p[:1])
        g = jnp.concatenate([zero, _cumsum(left)[:-1]])  # sum over j < i
        h = jnp.concatenate([_cumsum(right, reverse=True)[1:], zero])  # sum over j > i
        ycl = jnp.clip(y, self.low, self.high)
        i = self._bin_of(ycl)
        ai, wi, pi = a[i], w[i], p[i]
        s = jnp.clip(ycl, ai, ai + wi)
        u = c_lo[i] + pi * ((s - ai) / wi)
        v = d_hi[i] + pi * ((ai + wi - s) / wi)
        mid = ((s - ai) * (c_lo[i] ** 2 + c_lo[i] * u + u**2) + (ai + wi - s) * (v**2 + v * d_hi[i] + d_hi[i] ** 2)) / 3
        return u, g[i] + mid + h[i] + jnp.abs(y - ycl)  # u is 0 below e_0 and sum(p) above e_n

    def crps_bins_spiked(self, gammas: tuple) -> Float[Array, "G n n"]:
        r"""$\mathbb E_{y\sim U[e_k, e_{k+1}]}\,\mathrm{CRPS}((1-\gamma)F + \gamma H_j, y)$ for every $\gamma$ in ``gammas``, bin $j$ and bin $k$.

        $H_j$ is the CDF of the uniform density on bin $j$ (ORCA's spiked starts, a jcalib addition
        to the paper's ORCA: :meth:`jcalib.forecasters.ORCA.best_start`). With $G_k = H_k$,
        $\mathbb E_{y\sim U_k}\mathrm{CRPS}(F', y) = \int F'^2 - 2\int F' G_k + \int G_k$ (over
        $[e_0, e_n]$), and every integral is one of five $O(n)$ vectors:
        $\int F^2$, $I_k = \int F G_k = w_k(C_k/2 + p_k/3) + \sum_{i>k} w_i(C_i + C_{i+1})/2$,
        $\Gamma_k = \int G_k = w_k/2 + e_n - e_{k+1}$, $\int G_k^2 = w_k/3 + e_n - e_{k+1}$, and
        $\int H_j G_k$, which is $\Gamma_k$ for $j < k$ and $\Gamma_j$ for $j > k$. So
        ``[g, j, k]`` $= (1-\gamma)^2\int F^2 + 2\gamma(1-\gamma) I_j + \gamma^2\int G_j^2
        - 2(1-\gamma) I_k + \Gamma_k - 2\gamma\int H_jG_k$: dense, $O(Gn^2)$, no cumulative sum
        per mixture. Equal to :meth:`crps_bins` of each mixture up to round-off (the sum above
        cancels to the CRPS's scale: about $10^{-7}(e_n - e_0)$ absolute in float32).
        """
        if self.batch_shape != ():
            raise ValueError(f"crps_bins_spiked needs an unbatched density, got batch shape {self.batch_shape}")
        e = self._e
        p, c_lo, c_hi, _ = self._cums(())
        w = jnp.asarray(np.diff(e), self.dtype)
        tail = jnp.asarray(e[-1] - e[1:], self.dtype)  # e_n - e_{k+1}
        iff = jnp.sum(w * (c_lo**2 + c_lo * c_hi + c_hi**2)) / 3
        after = jnp.concatenate([_cumsum(w * (c_lo + c_hi) / 2, reverse=True)[1:], jnp.zeros_like(p[:1])])
        ifg = w * (c_lo / 2 + p / 3) + after
        gam, gam2 = w / 2 + tail, w / 3 + tail
        g = jnp.asarray(gammas, self.dtype)[:, None]  # (G, 1)
        x = (1 - g) ** 2 * iff + 2 * g * (1 - g) * ifg[None, :] + g**2 * gam2[None, :]  # (G, n) over j
        y = -2 * (1 - g) * ifg[None, :] + gam[None, :]  # (G, n) over k
        n = self.n_bins
        j, k = np.arange(n)[:, None], np.arange(n)[None, :]
        cross = jnp.where(j < k, gam[None, :], jnp.where(j > k, gam[:, None], gam2[None, :]))
        return x[:, :, None] + y[:, None, :] - 2 * g[:, :, None] * cross[None]

    @_jit
    def crps_uniform(self, lo: ArrayLike, hi: ArrayLike) -> Float[Array, "..."]:
        r"""$\mathbb E_{y\sim U[lo, hi]}\,\mathrm{CRPS}(F, y)$ in closed form, for any real $lo \le hi$.

        $\frac{d}{dy}\mathrm{CRPS}(F, y) = F(y)^2 - (1 - F(y))^2 = 2F(y) - 1$, so with
        $I_1(y) = \int_{e_0}^y F$ and $I_2(y) = \int_{e_0}^y I_1$ (0 below $e_0$),
        $\mathrm{CRPS}(F, y) = \mathrm{CRPS}(F, e_0) + 2 I_1(y) - (y - e_0)$ for every real $y$
        and

        $$\mathbb E_{y\sim U[lo, hi]}\mathrm{CRPS}(F, y) = \mathrm{CRPS}(F, e_0)
        + 2\,\frac{I_2(hi) - I_2(lo)}{hi - lo} - \Big(\frac{lo + hi}{2} - e_0\Big).$$

        $F$ is piecewise linear, so $I_2$ is a piecewise cubic: at the edges it is a cumulative
        sum, $I_2(e_{j+1}) = I_2(e_j) + w_j I_1(e_j) + w_j^2 (C_j/2 + p_j/6)$, and inside bin
        $i$, at $t = y - e_i$, $I_2(y) = I_2(e_i) + I_1(e_i) t + C_i t^2/2 + p_i t^3/(6 w_i)$
        (beyond $e_n$, $F = 1$). Exact; $hi = lo$ gives $\mathrm{CRPS}(F, lo)$. The difference
        of $I_2$ loses about $\log_{10}((e_n - e_0)/(hi - lo))$ digits; :meth:`crps_bins` has
        no such loss on the density's own bins.

        Args:
            lo, hi: interval ends (broadcast against each other and the batch shape).
        """
        lo, hi = self._y(lo), self._y(hi)
        shape = jnp.broadcast_shapes(lo.shape, hi.shape)
        lo, hi = jnp.broadcast_to(lo, shape), jnp.broadcast_to(hi, shape)
        e = self._e
        p, c_lo, c_hi, d_hi = self._cums(shape)
        w = self._c(np.diff(e), len(shape))
        zero = jnp.zeros_like(p[..., :1])
        i1_next = _cumsum(w * (c_lo + c_hi) / 2)  # I1(e_{j+1})
        i1 = jnp.concatenate([zero, i1_next[..., :-1]], axis=-1)  # I1(e_j)
        i2_next = _cumsum(w * i1 + w**2 * (c_lo / 2 + p / 6))
        i2 = jnp.concatenate([zero, i2_next[..., :-1]], axis=-1)  # I2(e_j)
        d_lo = d_hi + p
        crps0 = jnp.sum(w * (d_lo**2 + d_lo * d_hi + d_hi**2), axis=-1) / 3  # CRPS(F, e_0)
        inner = self._c(e[1:-1], len(shape))
        e_lo, wd = jnp.asarray(e[:-1], self.dtype), jnp.asarray(np.diff(e), self.dtype)

        def integral2(y):  # I2(y)
            i = jnp.sum(y[..., None] >= inner, axis=-1)[..., None]  # bin of y (0 below, n-1 above)
            at = lambda a: jnp.take_along_axis(a, i, axis=-1)[..., 0]  # noqa: E731
            wi = jnp.take(wd, i[..., 0])
            t = jnp.clip(y - jnp.take(e_lo, i[..., 0]), 0, wi)
            s = jnp.maximum(y - e[-1], 0)
            val = at(i2) + at(i1) * t + at(c_lo) * t**2 / 2 + at(p) * t**3 / (6 * wi)
            return val + i1_next[..., -1] * s + s**2 / 2

        width = hi - lo
        safe = jnp.where(width != 0, width, 1)
        mean = crps0 + 2 * (integral2(hi) - integral2(lo)) / safe - ((lo + hi) / 2 - e[0])
        return jnp.where(width != 0, mean, self.crps(lo))

    @_jit
    def bin_fraction_below(self, alpha: ArrayLike) -> Float[Array, "... n m"]:
        r"""The fraction of each bin on which $F \le \alpha$, for levels ``alpha`` of shape ``(m,)``: ``(..., n, m)``.

        $F$ rises linearly from $C_i$ to $C_{i+1}$ on bin $i$, so the fraction is
        $\mathrm{clip}((\alpha - C_i)/p_i, 0, 1)$, and $\mathbb 1\{C_i \le \alpha\}$ on a bin of
        zero mass. It is $P(F(y) \le \alpha)$ for $y$ uniform on bin $i$: the expected quantile
        payoff of ORCA's nature components (Marx et al., §6.1), one dense expression of the
        cumulative masses with no search for the quantiles. The masses are treated as
        normalised by their sum, as in :meth:`quantile`.
        """
        alpha = jnp.asarray(alpha).astype(self.dtype)
        if alpha.ndim != 1:
            raise ValueError(f"alpha must have shape (m,), got {alpha.shape}")
        p, c_lo, c_hi, _ = self._cums(self.batch_shape)
        alpha = alpha.reshape((1,) * p.ndim + alpha.shape)
        num = alpha * c_hi[..., -1:, None] - c_lo[..., :, None]  # (..., n, m)
        pos = p > 0
        inv = 1 / jnp.where(pos, p, 1)
        ratio = jnp.clip(num * inv[..., None], 0, 1)
        return jnp.where(pos[..., None], ratio, (num >= 0).astype(self.dtype))

    @_jit
    def log_prob(self, y: ArrayLike) -> Float[Array, "..."]:
        r"""$\log(p_i / w_i)$ for $y$ in bin $i = [e_i, e_{i+1})$ (the last bin closed).

        $-\infty$ outside $[e_0, e_n]$ and in bins of zero mass (gradients there are not
        meaningful).
        """
        y = self._y(y)
        e = self._e
        i = jnp.clip(jnp.searchsorted(jnp.asarray(e, self.dtype), y, side="right") - 1, 0, self.n_bins - 1)
        p = _batched(self.probs, y.shape)
        p_i = jnp.take_along_axis(p, i[..., None], axis=-1)[..., 0]
        w_i = jnp.take(jnp.asarray(np.diff(e), self.dtype), i)
        ok = (y >= self.low) & (y <= self.high) & (p_i > 0)
        return jnp.where(ok, jnp.log(jnp.where(ok, p_i, 1)) - jnp.log(w_i), -jnp.inf)

    def sample(self, shape: tuple[int, ...] = (), *, key: PRNGKeyArray) -> Float[Array, "..."]:
        """Draws of shape ``shape + batch_shape`` by inversion, ``quantile(U)``, $U \\sim U[0, 1)$.

        Reparameterised: the draws are differentiable in the masses.
        """
        u = jax.random.uniform(check_key(key), tuple(shape) + self.batch_shape, self.dtype)
        return self.quantile(u)

    @_jit
    def entropy(self) -> Float[Array, "..."]:
        r"""Differential entropy $-\sum_i p_i \log(p_i / w_i)$ (with $0 \log 0 = 0$)."""
        p = self.probs
        pos = p > 0
        logw = jnp.asarray(np.log(np.diff(self._e)), self.dtype)
        return -jnp.sum(jnp.where(pos, p * jnp.log(jnp.where(pos, p, 1)), 0), axis=-1) + p @ logw
