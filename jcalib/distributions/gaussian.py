r"""Gaussian forecasts $\mathcal N(\mu, \sigma^2)$, and their binning onto fixed edges.

The experiments of Marx, Kuleshov, Ermon et al. (2024, *Calibrated Probabilistic Forecasts for
Arbitrary Sequences*, §6.1) feed ORCA expert forecasts on 50 bins; how the experts (River
regressors) emit distributions is not stated, and jcalib models them as Gaussians (running mean
squared residual as variance) binned with :meth:`Gaussian.to_piecewise`.

Closed forms, with $z = (y - \mu)/\sigma$, $\Phi$ and $\varphi$ the standard normal cdf and
density:

- CRPS (Gneiting and Raftery 2007, eq. 5):
  $\sigma\,[z(2\Phi(z) - 1) + 2\varphi(z) - 1/\sqrt\pi]$;
- moments $\mathbb E[Y^k] = \sum_{j \text{ even}} \binom{k}{j} \mu^{k-j} \sigma^j (j-1)!!$;
- expectations by Gauss–Hermite quadrature, exact for polynomials of degree
  $\le 2\,n_\text{points} - 1$.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr, ndtri
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._validation import as_float_array, check_key
from .base import AbstractDistribution, _check_static_int, _jit
from .piecewise import PiecewiseConstant, check_edges

__all__ = ["Gaussian"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


class Gaussian(AbstractDistribution):
    r"""A batch of normal distributions $\mathcal N(\mu, \sigma^2)$.

    Attributes:
        loc: mean $\mu$, any shape (the batch shape).
        scale: standard deviation $\sigma > 0$, broadcast to ``loc``'s shape at construction
            (both become arrays of the common shape and float dtype).

    Example:
        >>> g = Gaussian(0.0, 1.0)
        >>> round(float(g.cdf(1.96)), 4), round(float(g.crps(0.0)), 6)
        (0.975, 0.233695)
    """

    loc: Float[Array, "..."]
    scale: Float[Array, "..."]

    def __init__(self, loc: ArrayLike, scale: ArrayLike):
        raw = (loc, scale)
        for name, v in (("loc", loc), ("scale", scale)):
            if isinstance(v, (bool, np.bool_)) or getattr(getattr(v, "dtype", None), "kind", "") == "b":
                raise TypeError(f"{name} must be a real number or array, got a bool")
        loc = as_float_array(loc, "loc")
        scale = as_float_array(scale, "scale")
        if loc.dtype != scale.dtype:
            # a Python number takes the other argument's dtype; two typed arrays the wider one
            typed = [a.dtype for x, a in zip(raw, (loc, scale)) if not isinstance(x, (int, float))]
            dt = typed[0] if len(typed) == 1 else np.promote_types(*typed)
            dt = jax.dtypes.canonicalize_dtype(dt)
            loc, scale = loc.astype(dt), scale.astype(dt)
        try:
            shape = jnp.broadcast_shapes(loc.shape, scale.shape)
        except ValueError as e:
            raise ValueError(f"loc {loc.shape} and scale {scale.shape} do not broadcast") from e
        self.loc = jnp.broadcast_to(loc, shape)
        self.scale = jnp.broadcast_to(scale, shape)

    def __check_init__(self):
        for name in ("loc", "scale"):
            v = getattr(self, name)
            if isinstance(v, jax.core.Tracer):
                continue
            v = np.asarray(v)
            if not np.all(np.isfinite(v)):
                raise ValueError(f"{name} contains NaN or infinite values")
            if name == "scale" and np.any(v <= 0):
                raise ValueError(f"scale must be > 0; found {float(v.min())!r}")

    def value_rules(self) -> list[tuple[Array, str]]:
        return [(~jnp.all(jnp.isfinite(self.loc)), "loc contains NaN or infinite values"),
                (~jnp.all(jnp.isfinite(self.scale)), "scale contains NaN or infinite values"),
                (jnp.any(self.scale <= 0), "scale must be > 0")]

    @property
    def dtype(self) -> jnp.dtype:
        return self.loc.dtype

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return tuple(self.loc.shape)

    def _z(self, y):
        y = self._y(y)
        return (y - jnp.broadcast_to(self.loc, y.shape)) / jnp.broadcast_to(self.scale, y.shape)

    @_jit
    def cdf(self, y: ArrayLike) -> Float[Array, "..."]:
        r"""$\Phi((y - \mu)/\sigma)$."""
        return ndtr(self._z(y))

    @_jit
    def quantile(self, alpha: ArrayLike) -> Float[Array, "..."]:
        r"""$\mu + \sigma\,\Phi^{-1}(\alpha)$: $-\infty$ at 0, $+\infty$ at 1, NaN outside $[0, 1]$."""
        alpha = self._y(alpha)
        return jnp.broadcast_to(self.loc, alpha.shape) + jnp.broadcast_to(self.scale, alpha.shape) * ndtri(alpha)

    def mean(self) -> Float[Array, "..."]:
        r"""$\mu$."""
        return self.loc

    def variance(self) -> Float[Array, "..."]:
        r"""$\sigma^2$."""
        return self.scale**2

    @_jit(static_argnames=("k",))
    def moment(self, k: int) -> Float[Array, "..."]:
        r"""$\mathbb E[Y^k] = \sum_{j \text{ even} \le k} \binom{k}{j} \mu^{k-j}\sigma^j (j-1)!!$.

        Args:
            k: a Python int $\ge 0$ (static).
        """
        k = _check_static_int(k, "k")
        out = jnp.zeros_like(self.loc)
        for j in range(0, k + 1, 2):
            dfact = math.prod(range(j - 1, 0, -2))  # (j-1)!!, 1 for j = 0
            out = out + math.comb(k, j) * dfact * self.loc ** (k - j) * self.scale**j
        return out

    @_jit(static_argnames=("fn", "n_points"))
    def expect(self, fn, n_points: int = 32) -> Float[Array, "..."]:
        r"""$\mathbb E[f(Y)] \approx \pi^{-1/2}\sum_j h_j f(\mu + \sqrt2\sigma x_j)$ (Gauss–Hermite).

        Exact for polynomials of degree $\le 2\,n_\text{points} - 1$; for smooth $f$ the error
        falls fast with ``n_points``, for kinked or discontinuous $f$ slowly.

        Args:
            fn: vectorised function of an array of nodes of shape ``batch_shape + (n_points,)``.
            n_points: Python int $\ge 1$ (static).
        """
        n_points = _check_static_int(n_points, "n_points", low=1)
        x, h = np.polynomial.hermite.hermgauss(n_points)
        nd = len(self.batch_shape)
        xs = jnp.asarray(math.sqrt(2) * x, self.dtype).reshape((1,) * nd + (n_points,))
        nodes = self.loc[..., None] + self.scale[..., None] * xs
        out = jnp.asarray(fn(nodes)).astype(self.dtype)
        return out @ jnp.asarray(h / math.sqrt(math.pi), self.dtype)

    @_jit
    def crps(self, y: ArrayLike) -> Float[Array, "..."]:
        r"""$\sigma\,[z(2\Phi(z) - 1) + 2\varphi(z) - 1/\sqrt\pi]$, $z = (y - \mu)/\sigma$."""
        z = self._z(y)
        pdf = jnp.exp(-0.5 * z**2 - _LOG_SQRT_2PI)
        scale = jnp.broadcast_to(self.scale, z.shape)
        return scale * (z * (2 * ndtr(z) - 1) + 2 * pdf - 1 / math.sqrt(math.pi))

    @_jit
    def log_prob(self, y: ArrayLike) -> Float[Array, "..."]:
        r"""$-z^2/2 - \log\sigma - \log\sqrt{2\pi}$."""
        z = self._z(y)
        return -0.5 * z**2 - jnp.log(jnp.broadcast_to(self.scale, z.shape)) - _LOG_SQRT_2PI

    def sample(self, shape: tuple[int, ...] = (), *, key: PRNGKeyArray) -> Float[Array, "..."]:
        """Draws of shape ``shape + batch_shape`` (reparameterised: $\\mu + \\sigma\\varepsilon$)."""
        eps = jax.random.normal(check_key(key), tuple(shape) + self.batch_shape, self.dtype)
        return jnp.broadcast_to(self.loc, eps.shape) + jnp.broadcast_to(self.scale, eps.shape) * eps

    def entropy(self) -> Float[Array, "..."]:
        r"""$\tfrac12 \log(2\pi e \sigma^2)$."""
        return jnp.log(self.scale) + (_LOG_SQRT_2PI + 0.5)

    def to_piecewise(self, edges: Sequence[float]) -> PiecewiseConstant:
        r"""Bin onto ``edges``: $p_i = \Phi(z_{i+1}) - \Phi(z_i)$, tails folded into the end bins.

        The mass below $e_0$ goes to the first bin and the mass above $e_n$ to the last
        ($p_0 = \Phi(z_1)$, $p_{n-1} = 1 - \Phi(z_{n-1})$), so the masses sum to 1 and the
        binned density keeps the Gaussian's probability of every inner bin; its mean moves
        towards the range when the tails are heavy. The paper does not say how its experts'
        forecasts were binned: folding is jcalib's choice, and the docs say so.

        Masses are differences of $\Phi$ on the lower half and of $1 - \Phi$ (computed as
        $\Phi(-z)$) on the upper half, so far tails keep relative precision; negative round-off
        is clipped to 0.

        Returns:
            a :class:`PiecewiseConstant` with batch shape ``batch_shape`` and masses
            ``batch_shape + (n,)``.
        """
        edges = check_edges(edges)
        return PiecewiseConstant._trusted(self._binned(edges), edges)

    @_jit(static_argnames=("edges",))
    def _binned(self, edges: tuple[float, ...]) -> Float[Array, "... n"]:
        """The masses of :meth:`to_piecewise` (``edges`` already checked, static)."""
        inner = np.asarray(edges[1:-1], np.float64)
        nd = len(self.batch_shape)
        e = jnp.asarray(inner, self.dtype).reshape((1,) * nd + inner.shape)
        z = (e - self.loc[..., None]) / self.scale[..., None]  # batch + (n-1,)
        lower = ndtr(z)  # F at the inner edges
        upper = ndtr(-z)  # 1 - F at the inner edges
        zero = jnp.zeros_like(self.loc[..., None])
        one = jnp.ones_like(zero)
        F = jnp.concatenate([zero, lower, one], axis=-1)
        S = jnp.concatenate([one, upper, zero], axis=-1)
        # a bin wholly below the mean: F[i+1] - F[i]; otherwise S[i] - S[i+1] (same value, exact
        # in the tail that each form resolves)
        left_bins = jnp.concatenate([z, jnp.full_like(zero, jnp.inf)], axis=-1) <= 0
        p = jnp.where(left_bins, F[..., 1:] - F[..., :-1], S[..., :-1] - S[..., 1:])
        return jnp.maximum(p, 0)
