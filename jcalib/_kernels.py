r"""Positive-definite kernels on the simplex and tiled Gram products (shared by the metrics and
the recalibrators of Gopalan et al. 2024).

Gopalan, Hu, Rothblum (2024), *On Computationally Efficient Multi-Class Calibration*: the
multinomial kernel (Definition 6.3) is what both the low-degree calibration error's upper bound
(:func:`jcalib.metrics.low_degree_calibration_error`, ``method="kernel"``) and Algorithm 2's
auditor (:func:`jcalib.recalibration.kernel_audit`) evaluate. It lives here, below both
subpackages, so that ``jcalib.metrics`` never imports ``jcalib.recalibration``. The public names
are re-exported (and documented) from :mod:`jcalib.recalibration.kernel`.
"""

from __future__ import annotations

import abc
from typing import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, Float

from ._validation import Int

__all__ = [
    "DEFAULT_TILE",
    "GaussianKernel",
    "LaplacianKernel",
    "Kernel",
    "MultinomialKernel",
    "gaussian_kernel",
    "kernel_matmul",
    "laplacian_kernel",
    "multinomial_kernel",
]

Kernel = Callable[[Array, Array], Array]

DEFAULT_TILE = 512  # rows per Gram block
_UNROLL_DEGREE = 32


class MultinomialKernel(eqx.Module):
    r"""The degree-$d$ multinomial kernel $\ker_d(v, v') = \sum_{i=0}^{d} (v\cdot v')^i$.

    It is $\psi(v)\cdot\psi(v')$ for the feature map $\psi$ whose coordinates are all ordered
    monomials $v_{t_1}\cdots v_{t_i}$, $t \in [k]^i$, $i \le d$ ($1 + k + \dots + k^d$ of them;
    Gopalan et al. 2024, Definition 6.3, after GKKT17). Evaluated by Horner's rule on the block of inner
    products, $O(d)$ element-wise operations per entry.

    ``diag_bound`` is $s^2 = \sup_{v\in\Delta_k}\ker_d(v, v) = d + 1$ (attained at the
    vertices, where $\|v\|_2 = 1$). The paper's Lemma 6.4 writes $\le d$; the sum has $d+1$
    terms, so $d+1$ is the bound used here.

    Attributes:
        degree: $d \ge 0$ (static).
    """

    degree: int = eqx.field(static=True, converter=Int(0, 2**20, what="terms of the kernel's sum").converter("degree"))

    @property
    def diag_bound(self) -> float:
        # departs from Lemma 6.4's "≤ d": Σ_{i=0..d} ‖v‖^{2i} has d + 1 terms, = d + 1 at a vertex
        return float(self.degree + 1)

    def __call__(self, u: Float[Array, "a k"], v: Float[Array, "b k"]) -> Float[Array, "a b"]:
        g = jnp.matmul(u, v.T, precision=lax.Precision.HIGHEST)
        # Horner: 1 + g(1 + g(1 + ...)), d multiplications. Unrolled for moderate d so XLA fuses
        # the chain into one pass over the Gram block (a loop would write it d times).
        return lax.fori_loop(
            0, self.degree, lambda _, acc: 1.0 + g * acc, jnp.ones_like(g), unroll=self.degree <= _UNROLL_DEGREE
        )


def multinomial_kernel(degree: int) -> MultinomialKernel:
    r"""The degree-``degree`` multinomial kernel $\sum_{i=0}^d (v\cdot v')^i$ (Gopalan et al. 2024, Def. 6.3).

    Examples:
        >>> import jax.numpy as jnp
        >>> ker = multinomial_kernel(2)
        >>> v = jnp.array([[0.5, 0.5], [1.0, 0.0]])
        >>> ker(v, v).tolist()
        [[1.75, 1.75], [1.75, 3.0]]
        >>> ker.diag_bound
        3.0
    """
    if isinstance(degree, bool) or not isinstance(degree, (int, np.integer)):
        raise ValueError(f"degree must be a non-negative integer, got {degree!r}")
    return MultinomialKernel(int(degree))


def _bandwidth(b):
    """A positive finite static bandwidth as a Python float (NumPy scalars and 0-d arrays too)."""
    if not isinstance(b, (bool, np.bool_, jax.core.Tracer)) and np.ndim(b) == 0:
        v = np.asarray(b)
        if v.dtype.kind in "iuf" and 0 < v < np.inf:
            return float(v)
    raise ValueError(f"bandwidth must be a positive finite number (static), got {b!r}")


class _AbstractBandwidthKernel(eqx.Module):
    r"""A translation-invariant kernel with $\ker(v, v) = 1$ and a positive static bandwidth."""

    bandwidth: float = eqx.field(static=True, converter=_bandwidth)

    @property
    def diag_bound(self) -> float:
        return 1.0

    @abc.abstractmethod
    def __call__(self, u: Float[Array, "a k"], v: Float[Array, "b k"]) -> Float[Array, "a b"]:
        raise NotImplementedError  # abstract


class GaussianKernel(_AbstractBandwidthKernel):
    r"""The Gaussian kernel $\ker(v, v') = \exp(-\|v - v'\|_2^2 / (2\sigma^2))$, $s^2 = 1$.

    Not in Gopalan et al. (2024), which needs the multinomial kernel for its polynomial-approximation
    guarantees; provided as a local, universal alternative: its RKHS ball contains functions
    that vary on the scale $\sigma$, so small bandwidths audit close to canonical calibration
    (at the sample cost Theorem 3.4 predicts).

    Attributes:
        bandwidth: $\sigma > 0$ (static).
    """

    def __call__(self, u: Float[Array, "a k"], v: Float[Array, "b k"]) -> Float[Array, "a b"]:
        g = jnp.matmul(u, v.T, precision=lax.Precision.HIGHEST)
        d2 = jnp.sum(u**2, axis=1)[:, None] + jnp.sum(v**2, axis=1)[None, :] - 2.0 * g
        return jnp.exp(-jnp.maximum(d2, 0.0) / (2.0 * self.bandwidth**2))


def gaussian_kernel(bandwidth: float) -> GaussianKernel:
    r"""Gaussian kernel of bandwidth $\sigma$ (see :class:`GaussianKernel`); $s = 1$."""
    return GaussianKernel(float(bandwidth) if isinstance(bandwidth, (int, float, np.floating)) and not isinstance(bandwidth, bool) else bandwidth)


def _row_blocks(u, tile):
    m = u.shape[0]
    tile = max(1, min(tile, m))
    nb = -(-m // tile)
    up = jnp.pad(u, ((0, nb * tile - m), (0, 0)))
    return up.reshape(nb, tile, u.shape[1]), m


def kernel_matmul(
    kernel: Kernel,
    u: Float[Array, "m k"],
    v: Float[Array, "n k"],
    c: Float[Array, "n c"],
    tile: int = DEFAULT_TILE,
) -> Float[Array, "m c"]:
    r"""$\ker(U, V)\,C$ computed in blocks of ``tile`` rows of $U$.

    Each block forms a ``(tile, n)`` Gram block and multiplies it by $C$, so peak memory is
    $O(\mathrm{tile}\cdot n + n c + m c)$; the ``(m, n)`` Gram matrix is never materialised.
    Rows of $U$ are zero-padded to a multiple of ``tile``; padded outputs are discarded.

    Args:
        kernel: ``ker(A, B) -> (len(A), len(B))`` Gram block.
        u: ``(m, k)`` query points.
        v: ``(n, k)`` support points.
        c: ``(n, c)`` coefficients.
        tile: rows per block (static).

    Returns:
        ``(m, c)`` array.
    """
    blocks, m = _row_blocks(u, int(tile))

    @jax.checkpoint  # reverse mode keeps each block's input and recomputes its Gram block
    def one(ub):
        return jnp.matmul(kernel(ub, v), c, precision=lax.Precision.HIGHEST)

    out = lax.map(one, blocks)
    return out.reshape(-1, c.shape[1])[:m]


class LaplacianKernel(_AbstractBandwidthKernel):
    r"""Laplacian kernel $\ker(u, u') = \exp(-\|u - u'\|_1 / \omega)$; $\ker(u, u) = 1$.

    MMCE's kernel (Kumar et al. 2018 use $\omega = 0.4$ on confidences in $[0, 1]$).

    Attributes:
        bandwidth: $\omega > 0$ (static).
    """

    def __call__(self, u: Float[Array, "a d"], v: Float[Array, "b d"]) -> Float[Array, "a b"]:
        dist = jnp.sum(jnp.abs(u[:, None, :] - v[None, :, :]), axis=2)
        return jnp.exp(-dist / self.bandwidth)


def laplacian_kernel(bandwidth: float = 0.4) -> LaplacianKernel:
    r"""Laplacian kernel of bandwidth $\omega$ (see :class:`LaplacianKernel`).

    Examples:
        >>> import jax.numpy as jnp
        >>> round(float(laplacian_kernel(0.5)(jnp.array([[0.0]]), jnp.array([[0.5]]))[0, 0]), 4)
        0.3679
    """
    if isinstance(bandwidth, bool) or not isinstance(bandwidth, (int, float, np.floating)):
        raise ValueError(f"bandwidth must be a positive number, got {bandwidth!r}")
    return LaplacianKernel(float(bandwidth))
