r"""Finite mixtures $\sum_k w_k P_k$ of stacked distributions of one class.

The components are one :class:`PiecewiseConstant` or :class:`Gaussian` whose leaves have a
leading axis of length $k$ (the layout of a :class:`jcalib.core.Mixture`'s support, so
:meth:`MixtureDistribution.from_mixture` views a published mixed strategy as one distribution).
Marx, Kuleshov, Ermon et al. (2024, *Calibrated Probabilistic Forecasts for Arbitrary
Sequences*) use both: ORCA's nature family is a mixture of the 50 uniform-on-bin components
(§6.1), and its forecast family may be a Gaussian mixture (§5.1).

Linear functionals (cdf, moments, expectations) are the weighted sums of the components';
the density's log is a log-sum-exp. The CRPS is not linear in the distribution:

- piecewise-constant components with shared edges: the mixture *is* the piecewise-constant
  density with masses $\sum_k w_k p_k$ (:meth:`MixtureDistribution.to_piecewise`), whose
  closed form applies; the quantile likewise, exactly;
- Gaussian components: $\mathrm{CRPS}(F, y) = \mathbb E|X - y| - \tfrac12\mathbb E|X - X'|$
  (Gneiting and Raftery 2007, eq. 21) with $\mathbb E|\mathcal N(m, s^2)| = A(m, s) =
  s\,[2\varphi(m/s) + (m/s)(2\Phi(m/s) - 1)]$:

  $$\mathrm{CRPS} = \sum_k w_k A(\mu_k - y, \sigma_k) - \tfrac12 \sum_{k,l} w_k w_l
  A\big(\mu_k - \mu_l, \sqrt{\sigma_k^2 + \sigma_l^2}\big)$$

  (Grimit et al. 2006), $O(k^2)$ per outcome; the quantile by bisection on
  $[\min_k Q_k(\alpha), \max_k Q_k(\alpha)]$ (which contains it) with a fixed number of steps
  (no while loop, so it vmaps), plus one Newton step through which gradients flow by the
  implicit function theorem.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._threefry import split_into
from .._validation import as_float_array, check_key, in_graph
from ..core.types import Mixture
from .base import AbstractDistribution, _check_static_int, _jit
from .gaussian import Gaussian
from .piecewise import PiecewiseConstant, probs_atol

__all__ = ["MixtureDistribution"]


def _abs_normal_mean(m, s):
    r"""$\mathbb E|\mathcal N(m, s^2)| = s\,[2\varphi(m/s) + (m/s)(2\Phi(m/s) - 1)]$."""
    z = m / s
    return s * (2 * jnp.exp(-0.5 * z**2) / math.sqrt(2 * math.pi) + z * (2 * ndtr(z) - 1))


def _weight_rules(w: Array) -> list[tuple[Array, str]]:
    """The value rules of mixture weights ``w`` (``(k,)``) as ``(bad, message)`` pairs."""
    atol = probs_atol(max(w.size, 1), w.dtype)
    return [(~jnp.all(jnp.isfinite(w)), "weights contains NaN or infinite values"),
            (jnp.any(w < 0), "weights must be non-negative"),
            (jnp.abs(jnp.sum(w) - 1) > atol, f"weights must sum to 1 (to {atol:.3g})")]


class MixtureDistribution(AbstractDistribution):
    r"""The mixture $\sum_k w_k P_k$ of stacked components (module docstring).

    Attributes:
        components: a :class:`PiecewiseConstant` or :class:`Gaussian` with batch shape
            ``(k, *batch_shape)``.
        weights: ``(k,)`` non-negative weights summing to 1 (to
            :func:`~jcalib.distributions.probs_atol`), cast to the components' dtype.

    Example:
        >>> g = Gaussian(jnp.asarray([-1.0, 1.0]), jnp.asarray([0.5, 0.5]))
        >>> m = MixtureDistribution(g, jnp.asarray([0.5, 0.5]))
        >>> round(float(m.cdf(0.0)), 6), round(float(m.quantile(0.75)), 5)
        (0.5, 1.00004)
    """

    components: AbstractDistribution
    weights: Float[Array, " k"]

    def __init__(self, components: AbstractDistribution, weights: ArrayLike):
        if not isinstance(components, (PiecewiseConstant, Gaussian)):
            raise ValueError(
                f"components must be a stacked PiecewiseConstant or Gaussian, got {type(components).__name__}"
            )
        self.components = components
        weights = as_float_array(weights, "weights").astype(components.dtype)
        if isinstance(weights, jax.core.Tracer):  # concrete weights: __check_init__
            for bad, message in _weight_rules(weights):
                weights = in_graph(weights, bad, message)
        self.weights = weights

    def __check_init__(self):
        w = self.weights
        if w.ndim != 1:
            raise ValueError(f"weights must have shape (k,), got {tuple(w.shape)}")
        bs = self.components.batch_shape
        if not bs or bs[0] != w.shape[0]:
            raise ValueError(
                f"components must have a leading batch axis of length k = {w.shape[0]} (the weights'), "
                f"got batch shape {bs}"
            )
        if isinstance(w, jax.core.Tracer):
            return
        v = np.asarray(w, np.float64)
        if not np.all(np.isfinite(v)):
            raise ValueError("weights contains NaN or infinite values")
        if np.any(v < 0):
            raise ValueError(f"weights must be non-negative; found {float(v.min())!r}")
        atol = probs_atol(v.size, w.dtype)
        if abs(v.sum() - 1) > atol:
            raise ValueError(f"weights must sum to 1 (off by {abs(v.sum() - 1):.3g} > {atol:.3g})")

    def value_rules(self) -> list[tuple[Array, str]]:
        return self.components.value_rules() + _weight_rules(self.weights)

    @classmethod
    def from_mixture(cls, mixture: Mixture) -> MixtureDistribution:
        """View a :class:`jcalib.core.Mixture` whose support is stacked distributions as one."""
        return cls(mixture.support, mixture.probs)

    @property
    def n_components(self) -> int:
        return self.weights.shape[0]

    @property
    def dtype(self) -> jnp.dtype:
        return self.components.dtype

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return tuple(self.components.batch_shape[1:])

    def _avg(self, vals: Array, axis: int = 0) -> Array:
        """$\\sum_k w_k v_k$ over the component axis ``axis``."""
        return jnp.tensordot(self.weights, jnp.moveaxis(vals, axis, 0), axes=1)

    def _lead(self, y: ArrayLike) -> tuple[Array, int]:
        """``y`` broadcast to ``E + batch_shape`` and given a component axis: ``E + (1,) + batch``.

        The components (batch ``(k,) + batch_shape``) evaluated there give ``E + (k,) + batch``;
        the returned int is the component axis, ``len(E)``.
        """
        y = self._y(y)
        ax = y.ndim - len(self.batch_shape)
        return jnp.expand_dims(y, ax), ax

    def to_piecewise(self, edges: Sequence[float] | None = None) -> PiecewiseConstant:
        r"""The mixture as one piecewise-constant density.

        Piecewise-constant components: masses $\sum_k w_k p_k$ on their edges (exact; ``edges``
        must be ``None`` or the same). Gaussian components: each binned onto ``edges`` by
        :meth:`Gaussian.to_piecewise` (tails folded into the end bins), then averaged.
        """
        c = self.components
        if isinstance(c, PiecewiseConstant):
            if edges is not None and tuple(float(e) for e in edges) != c.edges:
                raise ValueError("edges must be None or the components' edges")
            return PiecewiseConstant._trusted(self._avg(c.probs), c.edges)
        if edges is None:
            raise ValueError("edges are needed to bin Gaussian components")
        return PiecewiseConstant._trusted(self._avg(c.to_piecewise(edges).probs), edges)

    @_jit
    def cdf(self, y: ArrayLike) -> Float[Array, "..."]:
        r"""$\sum_k w_k F_k(y)$."""
        y, ax = self._lead(y)
        return self._avg(self.components.cdf(y), ax)

    @_jit
    def mean(self) -> Float[Array, "..."]:
        r"""$\sum_k w_k \mu_k$."""
        return self._avg(self.components.mean())

    @_jit(static_argnames=("k",))
    def moment(self, k: int) -> Float[Array, "..."]:
        r"""$\sum_k w_k \mathbb E_k[Y^k]$ (``k`` a static Python int)."""
        k = _check_static_int(k, "k")
        return self._avg(self.components.moment(k))

    @_jit
    def variance(self) -> Float[Array, "..."]:
        r"""$\sum_k w_k(\sigma_k^2 + (\mu_k - \mu)^2)$ (law of total variance)."""
        mu_k = self.components.mean()
        return self._avg(self.components.variance() + (mu_k - self._avg(mu_k)[None]) ** 2)

    @_jit(static_argnames=("fn", "n_points"))
    def expect(self, fn, n_points: int | None = None) -> Float[Array, "..."]:
        r"""$\sum_k w_k \mathbb E_k[f(Y)]$ with each component's quadrature (default points if ``None``)."""
        if n_points is None:
            return self._avg(self.components.expect(fn))
        return self._avg(self.components.expect(fn, n_points=n_points))

    @_jit
    def log_prob(self, y: ArrayLike) -> Float[Array, "..."]:
        r"""$\log \sum_k w_k\, p_k(y)$ by log-sum-exp."""
        y, ax = self._lead(y)
        lp = self.components.log_prob(y)
        w = self.weights.reshape((-1,) + (1,) * (lp.ndim - ax - 1))
        return jax.nn.logsumexp(lp, axis=ax, b=jnp.broadcast_to(w, lp.shape))

    @_jit
    def crps(self, y: ArrayLike) -> Float[Array, "..."]:
        r"""Closed form (module docstring): via :meth:`to_piecewise` or the Gaussian-mixture formula."""
        c = self.components
        if isinstance(c, PiecewiseConstant):
            return self.to_piecewise().crps(y)
        y = self._y(y)
        nd = y.ndim
        shape = (self.n_components,) + y.shape
        # (k, *B) -> (k, 1, ..., 1, *B) -> (k, *S): the batch shape B aligns right in S
        k, bshape = self.n_components, self.batch_shape
        lift = (k,) + (1,) * (nd - len(bshape)) + bshape
        mu = jnp.broadcast_to(c.loc.reshape(lift), shape)
        sd = jnp.broadcast_to(c.scale.reshape(lift), shape)
        e_xy = self._avg(_abs_normal_mean(mu - y[None], sd))
        pair = _abs_normal_mean(c.loc[:, None] - c.loc[None, :], jnp.sqrt(c.scale[:, None] ** 2 + c.scale[None, :] ** 2))
        e_xx = jnp.tensordot(self.weights, jnp.tensordot(self.weights, pair, axes=1), axes=1)
        return e_xy - 0.5 * jnp.broadcast_to(e_xx, e_xy.shape)

    @_jit(static_argnames=("n_iter",))
    def quantile(self, alpha: ArrayLike, n_iter: int = 64) -> Float[Array, "..."]:
        r"""$\inf\{y : F(y) \ge \alpha\}$.

        Piecewise-constant components: exact, through :meth:`to_piecewise` (same convention as
        :meth:`PiecewiseConstant.quantile`). Otherwise ``n_iter`` bisection steps on
        $[\min_k Q_k(\alpha), \max_k Q_k(\alpha)]$ over components of positive weight (each
        step halves the bracket: 64 reach adjacent floats in float64), then one Newton step
        $q - (F(q) - \alpha)/f(q)$ with $q$ held fixed, so the value's gradient is the
        implicit one, $-\partial_\theta F / f$. Gaussian mixtures give $\mp\infty$ at
        $\alpha \in \{0, 1\}$ and NaN outside $[0, 1]$.

        Args:
            alpha: levels, broadcast against the batch shape.
            n_iter: bisection steps (Python int, static).
        """
        if isinstance(self.components, PiecewiseConstant):
            return self.to_piecewise().quantile(alpha)
        n_iter = _check_static_int(n_iter, "n_iter", low=1)
        alpha_k, ax = self._lead(alpha)
        alpha = jnp.squeeze(alpha_k, ax)
        qk = self.components.quantile(alpha_k)  # E + (k,) + batch
        pos = jnp.broadcast_to((self.weights > 0).reshape((-1,) + (1,) * (qk.ndim - ax - 1)), qk.shape)
        lo0 = jax.lax.stop_gradient(jnp.min(jnp.where(pos, qk, jnp.inf), axis=ax))
        hi0 = jax.lax.stop_gradient(jnp.max(jnp.where(pos, qk, -jnp.inf), axis=ax))
        a = jax.lax.stop_gradient(alpha)
        fixed = jax.lax.stop_gradient(self)

        def step(_, bracket):
            lo, hi = bracket
            mid = 0.5 * (lo + hi)
            up = fixed.cdf(mid) >= a
            return jnp.where(up, lo, mid), jnp.where(up, mid, hi)

        finite = jnp.isfinite(lo0) & jnp.isfinite(hi0)
        lo_s, hi_s = jnp.where(finite, lo0, 0), jnp.where(finite, hi0, 0)
        _, q = jax.lax.fori_loop(0, n_iter, step, (lo_s, hi_s))
        q = jnp.where(finite, q, jnp.where(alpha <= 0, lo0, hi0))
        dens = fixed.prob(q)
        ok = finite & (dens > 0)
        newton = q - (self.cdf(q) - alpha) / jnp.where(ok, dens, 1)
        # the Newton step only refines within the bracket (it cannot leave it by more than
        # round-off after n_iter steps); outside it keep the bisection's value
        out = jnp.where(ok, jnp.clip(newton, lo0, hi0), q)
        return jnp.where((alpha >= 0) & (alpha <= 1), out, jnp.nan)

    def sample(self, shape: tuple[int, ...] = (), *, key: PRNGKeyArray) -> Float[Array, "..."]:
        """Draws of shape ``shape + batch_shape``: a component by ``weights``, then a draw from it."""
        k_comp, k_draw = split_into(check_key(key))
        shape = tuple(shape)
        draws = self.components.sample(shape, key=k_draw)  # shape + (k,) + batch
        logw = jnp.log(self.weights)
        idx = jax.random.categorical(k_comp, logw, shape=shape + self.batch_shape)
        idx = jnp.expand_dims(idx, len(shape))
        return jnp.squeeze(jnp.take_along_axis(draws, idx, axis=len(shape)), len(shape))
