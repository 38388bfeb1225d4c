r"""The kernel audit as a metric: the RKHS-ball calibration error of Gopalan et al. (2024, Algorithm 2).

For predictions and labels $(v_i, y_i)$, residuals $z_i = e_{y_i} - v_i$ and a kernel with
$s^2 \ge \sup_{v\in\Delta_k}\ker(v, v)$, the per-class norms
$\lambda_\ell = (\sum_{i,j} z_{i\ell} z_{j\ell}\ker(v_i, v_j))^{1/2}$ give the empirical
calibration error over the ball $B_\Gamma(1/s)^k$ exactly, $\sum_\ell \lambda_\ell/(ns)$
(**normalised**, in $[0, 2]$), with the witness that attains it. :func:`kernel_quadratic` is
the one quadratic form $\sum_{i,j} c_{i\ell} c_{j\ell}\ker(x_i, x_j)$ that the audit, the
post-processing of :mod:`jcalib.recalibration.kernel` and the training loss
:func:`jcalib.losses.kernel_calibration_loss` share, and :func:`kernel_scale` their one scale.

Input checks: concrete inputs at the Python boundary (``ValueError`` naming the argument);
under ``jit``, rows of predictions non-negative and summing to 1 (no NaN) and labels in
$[0, k)$ are checked in the graph with ``eqx.error_if`` (see :mod:`jcalib.config`).

References:
    Gopalan, Hu, Rothblum (2024), *On Computationally Efficient Multi-Class Calibration*,
    Algorithm 2, Theorem 6.2.
"""

from __future__ import annotations

import functools
import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .. import _kernels
from .._kernels import GaussianKernel, LaplacianKernel, MultinomialKernel, kernel_matmul
from .._validation import ClassLabels, Custom, Integer, Optional, SimplexProbs, check_hyper, declare

# The kernels live in a module shared with jcalib.losses, jcalib.stats and
# jcalib.recalibration; they are public here, next to the audit that takes them.
__all__ = ["GaussianKernel", "KernelAudit", "KernelWitness", "LaplacianKernel", "MultinomialKernel", "kernel_audit"]

Kernel = _kernels.Kernel
_DEFAULT_TILE = _kernels.DEFAULT_TILE


def kernel_quadratic(kernel: Kernel, points: Float[Array, "n d"], coef: Float[Array, "n m"], tile: int = _DEFAULT_TILE):
    r"""$\big(\sum_{i,j} c_{i\ell} c_{j\ell} \ker(x_i, x_j)\big)_\ell$ and the products $K C$.

    Returns ``(quad, KC)`` with ``quad`` of shape ``(m,)`` and ``KC`` $= \ker(X, X)\,C$ of
    shape ``(n, m)``, through ``kernel_matmul`` (row tiles of
    ``tile``, each block rematerialised in reverse mode), so value and gradient need
    $O(\mathrm{tile}\cdot n + nm)$ memory, never $n \times n$.
    """
    kc = kernel_matmul(kernel, points, points, coef, tile)
    return jnp.sum(coef * kc, axis=0), kc


def kernel_scale(kernel: Kernel, s) -> float:
    r"""The scale $s$ with $s^2 \ge \sup_v \ker(v, v)$: ``s`` itself (a positive finite number),
    or ``sqrt(kernel.diag_bound)``; ``ValueError`` otherwise."""
    if s is not None:
        if isinstance(s, jax.core.Tracer):
            raise ValueError("s must be a static positive finite number (a Python float), not a traced value")
        try:
            value = float(check_hyper(s, "s"))
        except TypeError:
            value = float("nan")
        if not value > 0 or not math.isfinite(value):
            raise ValueError(f"s must be a positive finite number, got {s!r}")
        return value
    bound = getattr(kernel, "diag_bound", None)
    if bound is None:
        raise ValueError(
            "pass s with s**2 >= sup_v ker(v, v) on the simplex: the kernel has no diag_bound attribute"
        )
    return math.sqrt(float(bound))


class KernelWitness(eqx.Module):
    r"""The witness $w(u) = \ker(u, V)\,C$ returned by the audit, callable on predictions.

    Memory: the support points $V$ and coefficients $C$, both ``(n, k)``; evaluating on ``m``
    points costs $O(mnk)$ time and $O(\mathrm{tile}\cdot n)$ extra memory.

    Attributes:
        support: ``(n, k)`` audited predictions $v_i$.
        coef: ``(n, k)`` $z_{i\ell} / (\lambda_\ell s)$ (0 for classes with $\lambda_\ell = 0$).
        kernel: the kernel (static).
        tile: rows per Gram block (static).
    """

    support: Float[Array, "n k"]
    coef: Float[Array, "n k"]
    kernel: Kernel = eqx.field(static=True)
    tile: int = eqx.field(static=True, default=_DEFAULT_TILE)

    @declare(probs=SimplexProbs())
    def __call__(self, probs: Float[Array, "m k"]) -> Float[Array, "m k"]:
        if probs.shape[1] != self.support.shape[-1]:
            raise ValueError(f"witness is for {self.support.shape[-1]} classes, got probs with {probs.shape[1]}")
        return kernel_matmul(self.kernel, probs.astype(self.coef.dtype), self.support, self.coef, self.tile)


class KernelAudit(eqx.Module):
    r"""Result of :func:`kernel_audit` (Algorithm 2).

    Attributes:
        value: $\frac1n\sum_i\langle y_i - v_i, w(v_i)\rangle = \sum_\ell\lambda_\ell/(ns)$, the
            witness's correlation on the audited sample (**normalised**, in $[0, 2]$ since
            $|w_\ell| \le 1$). Equals $CE_{B_\Gamma(1/s)^k}$ of the empirical distribution.
        per_class: ``(k,)`` $\lambda_\ell / (ns) = \frac1n\sum_i z_{i\ell} w_\ell(v_i)$.
        lam: ``(k,)`` $\lambda_\ell$ of Algorithm 2 (unnormalised sums over $n^2$ pairs, as in
            the paper).
        s: the scale $s$ (with $s^2 \ge \sup_v \ker(v, v)$).
        witness: :class:`KernelWitness`, callable on ``(m, k)`` predictions.
    """

    value: Float[Array, ""]
    per_class: Float[Array, " k"]
    lam: Float[Array, " k"]
    s: Float[Array, ""]
    witness: KernelWitness


def audit_core(kernel, s, tile, v, z):  # shared with jcalib.recalibration.kernel
    """Algorithm 2 on residuals z (n, k); returns (value, per_class, lam, coef, w_at_v)."""
    n = v.shape[0]
    lam2, kz = kernel_quadratic(kernel, v, z, tile)  # kz (n, k): Σ_j ker(v_i, v_j) z_jℓ
    pos = lam2 > 0
    lam = jnp.where(pos, jnp.sqrt(jnp.where(pos, lam2, 1.0)), 0.0)  # safe sqrt: finite gradient at λ = 0
    inv = jnp.where(pos, 1.0 / (jnp.where(pos, lam, 1.0) * s), 0.0)  # degenerate λ_ℓ = 0 → w_ℓ = 0
    per_class = lam / (n * s)
    return jnp.sum(per_class), per_class, lam, z * inv[None, :], kz * inv[None, :]


def _callable_kernel(kernel, name, bound):
    if not callable(kernel):
        raise ValueError(f"{name} must be callable ker(A, B) -> Gram block, got {type(kernel).__name__}")
    return kernel


@functools.partial(jax.jit, static_argnames=("kernel", "s", "tile"))
def kernel_audit_jit(v, y, *, kernel, s, tile):
    z = jax.nn.one_hot(y, v.shape[1], dtype=v.dtype) - v
    value, per_class, lam, coef, _ = audit_core(kernel, s, tile, v, z)
    return KernelAudit(value, per_class, lam, jnp.asarray(s, v.dtype), KernelWitness(v, coef, kernel, tile))


@declare(probs=SimplexProbs(), labels=ClassLabels(),
         kernel=Optional(Custom(_callable_kernel, "a callable ker(A, B) -> Gram block")),
         tile=Integer(1, 2**20, what="rows per Gram block"))
def kernel_audit(
    probs: Float[Array, "n k"],
    labels: Int[Array, " n"],
    kernel: Kernel | None = None,
    *,
    s: float | None = None,
    tile: int = _DEFAULT_TILE,
) -> KernelAudit:
    r"""Algorithm 2 of Gopalan et al. (2024): audit multi-class calibration against an RKHS ball.

    With $z_i = e_{y_i} - v_i$:
    $\lambda_\ell = (\sum_{i,j} z_{i\ell}z_{j\ell}\ker(v_i,v_j))^{1/2}$ and
    $w_\ell(v) = \frac{1}{\lambda_\ell s}\sum_i z_{i\ell}\ker(v_i, v)$ ($0$ if $\lambda_\ell = 0$).
    The witness satisfies $|w_\ell(v)| \le 1$ on the simplex and lies in $B_\Gamma(1/s)^k$.

    Guarantee (Theorem 6.2): if some $w^\ast \in B_\Gamma(r)^k$ has
    $E\langle y - v, w^\ast(v)\rangle \ge \alpha$ and $n = O(k r^2 s^2 \alpha^{-2}\log(1/\delta))$,
    then with probability $1-\delta$ the returned witness has population correlation
    $\ge \alpha/(3rs)$. On the audited sample itself the bound is exact and deterministic:
    ``value`` $\ge \frac{1}{rs}\frac1n\sum_i\langle z_i, w^\ast(v_i)\rangle$ for every
    $w^\ast \in B_\Gamma(r)^k$, with equality for the best one.

    Args:
        probs: ``(n, k)`` predictions on the simplex.
        labels: ``(n,)`` integer labels in ``[0, k)``.
        kernel: positive-definite kernel ``ker(A, B) -> (len(A), len(B))`` Gram block;
            default :class:`MultinomialKernel` of degree 2. A kernel object may carry
            ``diag_bound`` ($\sup_{v\in\Delta_k} \ker(v,v)$); a plain function needs ``s``.
        s: scale with $s^2 \ge \sup_{v\in\Delta_k}\ker(v, v)$; default
            ``sqrt(kernel.diag_bound)`` ($\sqrt{d+1}$ for the multinomial kernel).
        tile: rows per Gram block (static): memory $O(\mathrm{tile}\cdot n + nk)$.

    Returns:
        :class:`KernelAudit` with ``value`` (normalised correlation of the witness),
        ``per_class``, ``lam`` and ``witness`` (callable on predictions).

    Raises:
        ValueError: predictions off the simplex or non-finite, labels out of range, length
            mismatch, a kernel without ``diag_bound`` and no ``s``, or a non-positive ``tile``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> v = jnp.array([[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.6, 0.4]])
        >>> res = kernel_audit(v, jnp.array([1, 1, 0, 1]), MultinomialKernel(1))
        >>> bool(res.value > 0), res.witness(v).shape
        (True, (4, 2))

    References:
        Gopalan, Hu, Rothblum (2024), Algorithm 2, Theorem 6.2, Lemma 6.4.
    """
    kernel = MultinomialKernel(2) if kernel is None else kernel
    return kernel_audit_jit(probs, labels, kernel=kernel, s=kernel_scale(kernel, s), tile=tile)
