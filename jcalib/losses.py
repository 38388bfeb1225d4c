r"""Differentiable calibration losses for training: penalties to add to a cross-entropy objective.

Every function maps (logits or probabilities, labels, optional sample weights) to a scalar that
``jax.grad`` differentiates, that runs under ``jit`` and ``vmap`` (a batch of models, seeds or
penalty weights), and that is stable in float32. Each is a calibration **metric** of
``jcalib.metrics`` / ``jcalib.recalibration.kernel`` evaluated with a stated smoothing, not a
re-implementation of it:

| loss | metric it differentiates | smoothing |
| --- | --- | --- |
| :func:`smooth_ece_loss` | `jcalib.metrics.smooth_ece` (binary) | the kernel's own; weights at unit mass (float32) |
| :func:`confidence_smooth_ece_loss` | `smooth_ece` of the top-label confidence | as above; the correctness indicator is held fixed |
| :func:`kernel_calibration_loss` | `jcalib.metrics.kernel_audit` (Gopalan et al. 2024, Alg. 2) | squared (default) — no $\sqrt{\cdot}$ kink |
| :func:`mmce_loss` | MMCE of Kumar, Sarawagi, Jain (2018) | Laplacian kernel (their choice) |
| :func:`decision_calibration_loss` | `jcalib.metrics.decision.decision_objective` (Zhao et al. 2021, Eq. 9) | softmax cells of temperature $\tau$ |
| :func:`quantile_calibration_loss` | mean absolute coverage gap (MACE) of regression quantiles; not the QCE of Marx et al. (2024) | sigmoid coverage of temperature $\tau$ |

Logits go through ``jax.nn.softmax`` / ``jax.nn.sigmoid`` (log-sum-exp inside), so no clipping
is needed anywhere: probabilities 0 and 1 are legal inputs and give finite gradients. Square
roots use a safe form ($\sqrt{x}$ with gradient 0 at $x = 0$). Inputs are validated at the
Python boundary with ``ValueError``; on traced inputs (inside the user's ``jit``/``grad``)
non-finite logits, probabilities outside $[0, 1]$ or rows not summing to 1, labels outside
their classes and negative weights raise through ``eqx.error_if``, unless
``jcalib.config.checks(False)`` was in force when the loss was traced.

Every value is **normalised** (weighted means over samples, weights normalised to sum to 1);
each docstring states its range and its paper.
"""

from __future__ import annotations

import functools
from typing import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, Float, Int

from ._validation import (
    BinaryLabels,
    BinaryProbs,
    Bool,
    Choice,
    ClassLabels,
    Custom,
    Int,
    Optional,
    Real,
    RealArray,
    SimplexProbs,
    Weights,
    declare,
    in_graph,
    is_concrete,
)
from .metrics import smooth_ece
from .metrics.smooth import smooth_ece_at_bandwidth
from .metrics.decision import check_loss_matrices, decision_objective
from .metrics.kernel import kernel_quadratic, kernel_scale
from ._kernels import LaplacianKernel, MultinomialKernel

__all__ = [
    "smooth_ece_loss",
    "confidence_smooth_ece_loss",
    "kernel_calibration_loss",
    "mmce_loss",
    "decision_calibration_loss",
    "quantile_calibration_loss",
]

Kernel = Callable[[Array, Array], Array]

_DEFAULT_TILE = 512


# --------------------------------------------------------------------------------------------
# Input handling


def _binary_or_logits(inputs, name, bound):
    """Binary forecasts ``(n,)`` in [0, 1], or (``from_logits``) finite logits through a sigmoid."""
    if bound["from_logits"]:
        return jax.nn.sigmoid(RealArray().check(inputs, f"logits in {name}", bound))
    return BinaryProbs().check(inputs, name, bound)


def _simplex_or_logits(inputs, name, bound):
    """Rows on the simplex ``(n, C)``, or (``from_logits``) finite logits ``(n, C)``, C >= 2,
    through a softmax (log-sum-exp inside: exact 0/1 at most, never NaN)."""
    if bound["from_logits"]:
        z = RealArray(ndim=2).check(inputs, f"logits in {name}", bound)
        if z.shape[1] < 2:
            raise ValueError(f"logits in {name} must have shape (n, C) with C >= 2, got {tuple(z.shape)}")
        return jax.nn.softmax(z, axis=1)
    return SimplexProbs().check(inputs, name, bound)


# The declared inputs of the classification losses (``from_logits`` first: it says what
# ``probs`` holds); weights are ones by default (smooth ECE reads them as multiplicities).
_BINARY = dict(from_logits=Bool(), probs=Custom(_binary_or_logits, "binary forecasts, or logits"),
               labels=BinaryLabels(length_of="probs"), sample_weight=Weights(length_of="probs", fill=True))
_MULTICLASS = dict(from_logits=Bool(), probs=Custom(_simplex_or_logits, "rows on the simplex, or logits"),
                   labels=ClassLabels(), sample_weight=Weights(length_of="probs", fill=True))
_TILE = Int(1, 2**20, what="rows per Gram block")
_TEMPERATURE = Real(0, open_lo=True)


def _multiclass(inputs, labels, sample_weight, from_logits: bool):
    """The declared multi-class inputs (already checked and converted), as a triple."""
    return inputs, labels, sample_weight


@jax.jit
def _smece_loss(p, labels, w):
    """smECE at the metric's own bandwidth σ*, differentiated at fixed σ*.

    ``smooth_ece`` finds σ* by bisection (11 evaluations); the value it returns is the
    evaluation at σ*, and σ* is piecewise constant in the forecasts. Differentiating through the
    bisection would carry all 11 evaluations into the backward pass; here σ* comes from the
    metric without gradient and only the evaluation at σ* (``smooth_ece_at_bandwidth``) is
    differentiated: the same value and the same gradient, at about a third of the cost."""
    y = labels.astype(p.dtype)
    _, sigma = smooth_ece(lax.stop_gradient(p), labels, sample_weight=lax.stop_gradient(w), return_bandwidth=True)
    return smooth_ece_at_bandwidth(p, p - y, lax.stop_gradient(sigma), sample_weight=w)


def _unit_mass(w):
    """Weights rescaled to total mass 1, for ``smooth_ece`` (see :func:`smooth_ece_loss`)."""
    return w / jnp.sum(w)


def _safe_sqrt(x):
    # √x with a zero (not infinite) gradient at x = 0; x is a sum of squares up to round-off.
    pos = x > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, x, 1.0)), 0.0)


# --------------------------------------------------------------------------------------------
# Smooth ECE (Błasiok–Nakkiran 2023)


@declare(**_BINARY)
def smooth_ece_loss(
    probs: Float[Array, " n"],
    labels: Int[Array, " n"],
    *,
    sample_weight: Float[Array, " n"] | None = None,
    from_logits: bool = False,
) -> Float[Array, ""]:
    r"""SmoothECE of binary forecasts as a loss, **normalised**, in $[0, 1]$.

    The metric :func:`jcalib.metrics.smooth_ece` (Błasiok & Nakkiran 2023; ``relplot``'s
    discretisation), with the weights at unit mass (below): the reflected-Gaussian kernel regression of the residuals $p_i - y_i$ at
    the fixed-point bandwidth $\sigma^\ast$, integrated against the smoothed density,
    $$\mathrm{smECE} = \int_0^1 |\hat r_{\sigma^\ast}(t)|\,\hat\delta_{\sigma^\ast}(t)\,dt .$$
    The kernel is the smoothing; no further one is added. The gradient is that of
    $\mathrm{smECE}_\sigma$ at the selected $\sigma^\ast$: the bisection's choice is piecewise
    constant in the forecasts (a dyadic bandwidth), so this is the exact derivative almost
    everywhere; it is computed at fixed $\sigma^\ast$ (the metric's bisection runs without
    gradient), which is the same derivative at a third of the cost. Masses are split linearly
    between grid points of spacing $\approx\sigma/10$, so the value is piecewise smooth in ``probs`` with kinks only where a forecast crosses a grid
    point (and where a smoothed residual crosses 0).

    Departure from the metric: the weights are rescaled to total mass 1 before the call (the
    metric reads them as multiplicities, total mass $n$ by default). The metric adds a density
    floor of $10^{-4}$ (relplot's), which is absolute, so with mass 1 it is $n$ times larger
    relative to the data; the value changes by about $10^{-4}$ relative (tested to $10^{-3}$).
    The reason is float32: the smoothed density is an FFT convolution whose round-off is about
    $6\cdot10^{-8}$ of its peak. With mass $n = 1078$ and $\sigma = 2^{-9}$ we measured a
    smoothed density of $-1.4\cdot10^{-2}$ where there is no data, far below the floor, and
    training with unscaled weights ended in NaN parameters (the derivative of
    $|r/\delta|\,\delta$ is inf − inf where the floored density reaches 0). With mass 1 the
    round-off is below $3\cdot 10^{-5}$, under the floor, for every bandwidth the metric
    evaluates.

    Args:
        probs: forecasts in $[0, 1]$ (or logits with ``from_logits=True``), shape ``(n,)``.
        labels: outcomes in $\{0, 1\}$, shape ``(n,)``.
        sample_weight: optional non-negative weights (multiplicities), shape ``(n,)``.
        from_logits: ``probs`` are logits; the forecast is $\mathrm{sigmoid}$ of them.

    Returns:
        Scalar, normalised.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> p, y = jnp.array([0.2, 0.7, 0.9, 0.4]), jnp.array([0, 1, 0, 1])
        >>> jax.grad(smooth_ece_loss)(p, y).shape
        (4,)

    References:
        Błasiok, Nakkiran (2023), *Smooth ECE: Principled reliability diagrams via kernel
        smoothing*.
    """
    p, y, w = probs, labels, sample_weight
    return _smece_loss(p, y, _unit_mass(w.astype(p.dtype)))


@declare(**_MULTICLASS)
def confidence_smooth_ece_loss(
    probs: Float[Array, "n C"],
    labels: Int[Array, " n"],
    *,
    sample_weight: Float[Array, " n"] | None = None,
    from_logits: bool = False,
) -> Float[Array, ""]:
    r"""SmoothECE of the top-label confidence, as a loss, **normalised**, in $[0, 1]$.

    With confidence $c_i = \max_\ell v_{i\ell}$ and correctness
    $a_i = \mathbb 1[\arg\max_\ell v_{i\ell} = y_i]$, the value is
    :func:`jcalib.metrics.smooth_ece` $(c, a)$: the smooth estimate of confidence calibration
    $E[y_{\ell_v} \mid v_{\ell_v}] = v_{\ell_v}$ (Gopalan et al. 2024, §2; Guo et al. 2017), pooled over
    predicted classes like ``jcalib.metrics.confidence_ece``. The correctness $a_i$ is piecewise
    constant in the inputs, so the gradient flows through the confidences only (the arg-max is
    held fixed, as in every confidence-based penalty). Weights at unit mass and the gradient at
    the metric's bandwidth, as in :func:`smooth_ece_loss`.

    Args:
        probs: ``(n, C)`` predictions on the simplex, or logits with ``from_logits=True``
            (softmax by log-sum-exp).
        labels: ``(n,)`` integer labels in ``[0, C)``.
        sample_weight: optional ``(n,)`` non-negative weights.
        from_logits: ``probs`` are logits.

    Returns:
        Scalar, normalised.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> z = jax.random.normal(jax.random.key(0), (50, 3))
        >>> y = jnp.arange(50) % 3
        >>> jax.grad(confidence_smooth_ece_loss)(z, y, from_logits=True).shape
        (50, 3)

    References:
        Błasiok, Nakkiran (2023); Guo, Pleiss, Sun, Weinberger (2017), §2 (confidence
        calibration).
    """
    v, y, w = _multiclass(probs, labels, sample_weight, from_logits)
    conf = jnp.max(v, axis=1)
    correct = (jnp.argmax(v, axis=1).astype(y.dtype) == y).astype(jnp.int32)
    return _smece_loss(conf, correct, _unit_mass(w))


# --------------------------------------------------------------------------------------------
# Kernel quadratic form, tiled and rematerialised


def _kernel_diagonal(kernel: Kernel, points):
    """$\\ker(x_i, x_i)$ for every row, shape ``(n,)``."""
    return jax.vmap(lambda x: kernel(x[None, :], x[None, :])[0, 0])(points)


def _per_column_sq(kernel, points, coef, weights, tile, unbiased):
    """Per-column squared RKHS norm of the weighted residual embedding (V- or U-statistic)."""
    cw = weights[:, None] * coef
    quad, _ = kernel_quadratic(kernel, points, cw, tile)
    if not unbiased:
        return quad
    diag = jnp.sum(cw**2 * _kernel_diagonal(kernel, points)[:, None], axis=0)
    # U-statistic: drop i = j; with weights ω summing to 1 the off-diagonal mass is 1 − Σω²
    # (0 with fewer than two positive weights: no pair, the value is NaN, not ±inf).
    off = 1.0 - jnp.sum(weights**2)
    return (quad - diag) / jnp.where(off > 0, off, jnp.nan)


def _two_positive_weights(w):
    """``w`` after checking that two samples have positive weight (the U-statistic has a pair)."""
    msg = "unbiased=True needs at least two samples with positive weight (the U-statistic averages pairs i != j)"
    if is_concrete(w):
        if int(np.sum(np.asarray(w) > 0)) < 2:
            raise ValueError(msg)
        return w
    return in_graph(w, jnp.sum(w > 0) < 2, msg)


def _check_flags(squared, unbiased):
    squared, unbiased = Bool().check(squared, "squared", {}), Bool().check(unbiased, "unbiased", {})
    if unbiased and not squared:
        raise ValueError("unbiased=True needs squared=True (the U-statistic can be negative; it has no square root)")


@functools.partial(jax.jit, static_argnames=("kernel", "s", "tile", "squared", "unbiased"))
def _kce(v, y, w, *, kernel, s, tile, squared, unbiased):
    z = jax.nn.one_hot(y, v.shape[1], dtype=v.dtype) - v
    lam2 = _per_column_sq(kernel, v, z, w / jnp.sum(w), tile, unbiased) / s**2  # (λ_ℓ / (n s))² for unit weights
    return jnp.sum(lam2) if squared else jnp.sum(_safe_sqrt(lam2))


def _callable_kernel(kernel, name, bound):
    if not callable(kernel):
        raise ValueError(f"{name} must be callable ker(A, B) -> Gram block, got {type(kernel).__name__}")
    return kernel


@declare(**_MULTICLASS, kernel=Optional(Custom(_callable_kernel, "a callable ker(A, B) -> Gram block")),
         squared=Bool(), unbiased=Bool(), s=Optional(Real(0, open_lo=True, static=True)), tile=_TILE)
def kernel_calibration_loss(
    probs: Float[Array, "n C"],
    labels: Int[Array, " n"],
    *,
    sample_weight: Float[Array, " n"] | None = None,
    kernel: Kernel | None = None,
    squared: bool = True,
    unbiased: bool = False,
    s: float | None = None,
    tile: int = _DEFAULT_TILE,
    from_logits: bool = False,
) -> Float[Array, ""]:
    r"""Kernel calibration error of Gopalan et al. (2024) (RKHS-ball weighted calibration) as a loss.

    With residuals $z_i = e_{y_i} - v_i$, normalised weights $\omega_i = w_i / \sum_j w_j$ and
    $s^2 \ge \sup_{v\in\Delta_k}\ker(v, v)$, Algorithm 2's per-class norms are
    $$\Lambda_\ell^2 = \frac{1}{s^2}\sum_{i,j}\omega_i\omega_j\, z_{i\ell} z_{j\ell}\,\ker(v_i, v_j)
    \qquad(= (\lambda_\ell / (ns))^2 \text{ for unit weights}),$$
    the squared RKHS norm of the kernel mean embedding of the class-$\ell$ residual — the
    squared-MMD form of the kernel calibration error (Widmann, Lindsten, Zachariah 2019, SKCE
    with the matrix kernel $\ker\cdot I$). Returned:

    * ``squared=True`` (default): $\sum_\ell \Lambda_\ell^2$, a quadratic form, smooth
      everywhere (the recommended training loss); in $[0, 4]$.
    * ``squared=False``: $\sum_\ell \Lambda_\ell = CE_{B_\Gamma(1/s)^k}$, exactly the audit
      value ``kernel_audit(...).value`` (Gopalan et al. 2024, Algorithm 2 and the proof of Theorem 6.2);
      in $[0, 2]$. Its square root has a kink at $\Lambda_\ell = 0$ (gradient set to 0 there,
      and large near it).
    * ``unbiased=True`` (with ``squared=True``): the U-statistic, $i \ne j$ only, divided by
      $1 - \sum_i\omega_i^2$ (= $n(n-1)/n^2$ for unit weights); unbiased for the population
      value, may be negative. It needs two samples with positive weight ($\sum_i\omega_i^2 < 1$):
      with fewer there is no pair $i \ne j$, and a ``ValueError`` is raised (under ``jit``, an
      ``eqx.error_if`` failure; with ``jcalib.config.checks(False)`` the value is NaN).

    Tiled: Gram products go through ``kernel_matmul`` in blocks of ``tile`` rows inside a
    rematerialised ``lax.scan``, so value and gradient need $O(\mathrm{tile}\cdot n + nk)$
    memory ($n = 10^5$, $k = 10$: well under 1 GB) and $O(n^2 k)$ time.

    Args:
        probs: ``(n, k)`` predictions on the simplex, or logits with ``from_logits=True``.
        labels: ``(n,)`` integer labels in ``[0, k)``.
        sample_weight: optional ``(n,)`` non-negative weights.
        kernel: a kernel ``ker(A, B) -> Gram block``; default
            ``jcalib.metrics.MultinomialKernel(2)`` (Definition 6.3), or e.g.
            ``jcalib.metrics.GaussianKernel(σ)``. Must be hashable (the kernel objects are).
        squared: return $\sum_\ell\Lambda_\ell^2$ instead of $\sum_\ell\Lambda_\ell$.
        unbiased: drop the diagonal (U-statistic); needs ``squared``.
        s: kernel scale (default ``sqrt(kernel.diag_bound)``, $\sqrt{d+1}$ for the multinomial
            kernel, as ``kernel_audit``).
        tile: rows per Gram block (static).
        from_logits: ``probs`` are logits.

    Returns:
        Scalar, normalised.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> z = jax.random.normal(jax.random.key(0), (100, 4))
        >>> y = jnp.arange(100) % 4
        >>> g = jax.grad(kernel_calibration_loss)(z, y, from_logits=True)
        >>> g.shape, bool(jnp.all(jnp.isfinite(g)))
        ((100, 4), True)

    References:
        Gopalan, Hu, Rothblum (2024), Algorithm 2, Definition 6.3, Theorem 6.2; Widmann,
        Lindsten, Zachariah (2019), *Calibration tests in multi-class classification: a
        unifying framework* (SKCE); Kumar, Sarawagi, Jain (2018) (the kernel penalty idea).
    """
    kernel = MultinomialKernel(2) if kernel is None else kernel
    _check_flags(squared, unbiased)
    v, y, w = _multiclass(probs, labels, sample_weight, from_logits)
    if unbiased:
        w = _two_positive_weights(w)
    return _kce(
        v, y, w, kernel=kernel, s=kernel_scale(kernel, s), tile=tile,
        squared=bool(squared), unbiased=bool(unbiased),
    )


# --------------------------------------------------------------------------------------------
# MMCE (Kumar, Sarawagi, Jain 2018)


@functools.partial(jax.jit, static_argnames=("bandwidth", "tile", "squared"))
def _mmce(v, y, w, *, bandwidth, tile, squared):
    conf = jnp.max(v, axis=1)
    correct = (jnp.argmax(v, axis=1).astype(y.dtype) == y).astype(v.dtype)
    sq = _per_column_sq(LaplacianKernel(bandwidth), conf[:, None], (correct - conf)[:, None], w / jnp.sum(w), tile, False)[0]
    return sq if squared else _safe_sqrt(sq)


@declare(**_MULTICLASS, bandwidth=Real(0, open_lo=True, static=True), squared=Bool(), tile=_TILE)
def mmce_loss(
    probs: Float[Array, "n C"],
    labels: Int[Array, " n"],
    *,
    sample_weight: Float[Array, " n"] | None = None,
    bandwidth: float = 0.4,
    squared: bool = False,
    tile: int = _DEFAULT_TILE,
    from_logits: bool = False,
) -> Float[Array, ""]:
    r"""Maximum mean calibration error (Kumar, Sarawagi, Jain 2018), **normalised**.

    With confidence $r_i = \max_\ell v_{i\ell}$, correctness
    $c_i = \mathbb 1[\arg\max_\ell v_{i\ell} = y_i]$ and normalised weights $\omega_i$,
    $$\mathrm{MMCE}^2 = \sum_{i,j}\omega_i\omega_j\,(c_i - r_i)(c_j - r_j)\,
      \exp(-|r_i - r_j|/\omega),$$
    their Eq. (2)'s biased estimator ($\omega_i = 1/m$) with the Laplacian kernel of bandwidth
    $\omega = 0.4$ they use. Returns $\sqrt{\mathrm{MMCE}^2}$ (their training penalty; gradient
    0 where the value is exactly 0) or, with ``squared=True``, $\mathrm{MMCE}^2$. It is
    :func:`kernel_calibration_loss`'s quadratic form in one dimension: the RKHS-ball
    calibration error (Gopalan et al. 2024) of the *confidence*, with a universal kernel. The arg-max
    $c_i$ is held fixed; the gradient flows through $r_i$. Their re-weighted variant
    MMCE$_w$ is not provided. Tiled like :func:`kernel_calibration_loss`.

    Args:
        probs: ``(n, C)`` predictions, or logits with ``from_logits=True``.
        labels: ``(n,)`` integer labels.
        sample_weight: optional ``(n,)`` non-negative weights.
        bandwidth: Laplacian kernel width $\omega$ (static).
        squared: return $\mathrm{MMCE}^2$.
        tile: rows per Gram block (static).
        from_logits: ``probs`` are logits.

    Returns:
        Scalar in $[0, 1]$, normalised.

    Examples:
        >>> import jax.numpy as jnp
        >>> v = jnp.array([[0.9, 0.1], [0.8, 0.2]])
        >>> round(float(mmce_loss(v, jnp.array([1, 0]), squared=True)), 4)
        0.1424

    References:
        Kumar, Sarawagi, Jain (2018), *Trainable calibration measures for neural networks from
        kernel mean embeddings*, ICML, §3 (Eq. 1–2).
    """
    v, y, w = _multiclass(probs, labels, sample_weight, from_logits)
    return _mmce(v, y, w, bandwidth=bandwidth, tile=tile, squared=squared)


# --------------------------------------------------------------------------------------------
# Decision calibration (Zhao et al. 2021)


def _loss_matrices(losses, name, bound):
    return check_loss_matrices(losses, bound["probs"].shape[1], name)


@declare(**_MULTICLASS, losses=Custom(_loss_matrices, "loss matrices (M, K, C)"),
         temperature=Real(0, open_lo=True, as_array=True), reduction=Choice("mean", "max"), squared=Bool())
def decision_calibration_loss(
    probs: Float[Array, "n C"],
    labels: Int[Array, " n"],
    losses: Float[Array, "M K C"],
    *,
    sample_weight: Float[Array, " n"] | None = None,
    temperature: float = 0.1,
    reduction: str = "mean",
    squared: bool = False,
    from_logits: bool = False,
) -> Float[Array, ""]:
    r"""Soft decision-calibration objective of Zhao et al. (2021) for a given family of loss functions.

    A loss $\ell(y, a) = L_{a,y}$ with $K$ actions has the Bayes rule
    $\delta_L(q) = \arg\min_a \langle L_a, q\rangle$ (Definition 1), i.e. the linear partition
    $b_w$ with $w = -L$ (Eq. 6). Its softmax relaxation (§4.4) at temperature $\tau$,
    $\bar b(q, a) = \mathrm{softmax}_a(-\langle L_a, q\rangle/\tau)$, gives the Eq. (9) summand
    $$D_L = \sum_{a=1}^K \big\| E_\omega[(Y - \hat p)\,\bar b(\hat p, a)] \big\|_2$$
    (computed by ``jcalib.metrics.decision.decision_objective`` at $w = -L/\tau$). As
    $\tau \to 0$, $D_L$ tends to the hard Eq. (8) summand, which bounds the loss gap of Eq. (10)
    for $L$: $|E\langle L_{\delta_L}, \hat p\rangle - E L_{\delta_L, Y}| \le \max_a\|L_a\|_2\,D_L$.
    The loss reduces $D_{L_m}$ over the family $\{L_1, \dots, L_M\}$ by their mean (default) or
    max. For the whole class $\mathcal L^K$ (Prop. 2), take the worst partition $w$ from
    ``jcalib.metrics.decision_calibration_error`` (with ``jax.lax.stop_gradient``; Danskin's
    theorem) and pass ``-w`` with ``temperature=1``.

    Smoothing: softmax cells of temperature ``temperature`` (relative to the scale of
    $\langle L_a, q\rangle$); $\|\cdot\|_2$ uses a safe square root (gradient 0 at an exactly
    empty cell). ``squared=True`` sums $\|\cdot\|_2^2$ instead (smooth everywhere).

    Args:
        probs: ``(n, C)`` predictions on the simplex, or logits with ``from_logits=True``.
        labels: ``(n,)`` integer labels.
        losses: ``(M, K, C)`` (or one ``(K, C)``) loss matrices $L_{a,y}$ (the loss of action
            a under outcome y; K ≥ 2, finite), as in
            :func:`jcalib.metrics.decision_calibration_error`'s ``losses``.
        sample_weight: optional ``(n,)`` non-negative weights.
        temperature: $\tau > 0$ of the softmax cells (may be traced).
        reduction: ``"mean"`` or ``"max"`` over the loss matrices.
        squared: squared cell norms.
        from_logits: ``probs`` are logits.

    Returns:
        Scalar, normalised (sample means); in $[0, \sqrt 2]$ per loss matrix.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> z = jax.random.normal(jax.random.key(0), (64, 3))
        >>> L = jax.random.normal(jax.random.key(1), (8, 2, 3))
        >>> g = jax.grad(decision_calibration_loss)(z, jnp.arange(64) % 3, L, from_logits=True)
        >>> g.shape
        (64, 3)

    References:
        Zhao, Kim, Sahoo, Ma, Ermon (2021), Definitions 1 and 4, Eq. (6), (8)–(10),
        Propositions 2 and 3.
    """
    v, y, w = _multiclass(probs, labels, sample_weight, from_logits)
    return _dcl(v, y, w, losses.astype(v.dtype), temperature.astype(v.dtype), reduction=reduction, squared=squared)


@functools.partial(jax.jit, static_argnames=("reduction", "squared"))
def _dcl(v, y, w, L, tau, *, reduction, squared):
    residual = jax.nn.one_hot(y, v.shape[1], dtype=v.dtype) - v
    vals = jax.vmap(lambda Lm: decision_objective(-Lm / tau, v, residual, w / jnp.sum(w), squared=squared))(L)
    return jnp.mean(vals) if reduction == "mean" else jnp.max(vals)


# --------------------------------------------------------------------------------------------
# Quantile calibration (regression)


def _levels_of_quantiles(levels, name, bound):
    """Levels in (0, 1), one per column of ``quantiles``."""
    a = RealArray(lo=0, hi=1).check(levels, name, bound)
    if a.shape != (bound["quantiles"].shape[1],):
        raise ValueError(f"{name} must have shape ({bound['quantiles'].shape[1]},) (one per column of quantiles), "
                         f"got {tuple(a.shape)}")
    if is_concrete(a) and not bool(np.all((np.asarray(a) > 0) & (np.asarray(a) < 1))):
        raise ValueError(f"{name} must lie in (0, 1) (open: a level of 0 or 1 has no finite quantile)")
    return a


@declare(quantiles=RealArray(ndim=2), targets=RealArray(length_of="quantiles"),
         levels=Custom(_levels_of_quantiles, "levels in (0, 1), one per column of quantiles"),
         sample_weight=Weights(length_of="quantiles", fill=True), temperature=Real(0, open_lo=True, as_array=True))
def quantile_calibration_loss(
    quantiles: Float[Array, "n J"],
    targets: Float[Array, " n"],
    levels: Float[Array, " J"],
    *,
    sample_weight: Float[Array, " n"] | None = None,
    temperature: float = 0.01,
) -> Float[Array, ""]:
    r"""Smoothed mean absolute coverage gap (MACE) of regression quantiles, **normalised**, in $[0, 1]$.

    A model predicting the $\alpha_j$-quantiles $\hat q_{ij}$ is quantile calibrated (Kuleshov,
    Fenner, Ermon 2018) when the coverage $P(Y \le \hat q_j(X))$ equals $\alpha_j$ for every
    level. The mean absolute coverage gap of a sample (the "mean absolute calibration error" of
    Chung et al. 2021) is
    $$\mathrm{MACE} = \frac1J\sum_{j=1}^J \Big|\sum_i \omega_i\,\mathbb 1[y_i \le \hat q_{ij}]
      - \alpha_j\Big| .$$
    It is not the QCE of Marx et al. (2024), a **sum** of **squared** gaps over 99 levels
    (:func:`jcalib.metrics.quantile_calibration_error` with its default ``form="sum"``); the
    same metric with ``form="mean_abs"`` computes this gap from PIT values, where this loss
    reads predicted quantiles. Smoothing: the indicator becomes
    $\mathrm{sigmoid}((\hat q_{ij} - y_i)/\tau)$, so the coverage is differentiable in the
    quantiles; $\tau$ = ``temperature`` is in the units of the targets (scale it with them). As
    $\tau \to 0$ the value tends to the hard gap (tested against the tests' reference).

    Args:
        quantiles: ``(n, J)`` predicted quantiles.
        targets: ``(n,)`` observed outcomes.
        levels: ``(J,)`` quantile levels in $(0, 1)$.
        sample_weight: optional ``(n,)`` non-negative weights.
        temperature: $\tau > 0$ (may be traced).

    Returns:
        Scalar, normalised.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> y = jnp.linspace(-1.0, 1.0, 5)
        >>> q = jnp.stack([y - 0.5, y + 0.5], axis=1)
        >>> round(float(quantile_calibration_loss(q, y, jnp.array([0.1, 0.9]))), 4)
        0.1

    References:
        Kuleshov, Fenner, Ermon (2018), *Accurate uncertainties for deep learning using
        calibrated regression*, ICML; Chung, Neiswanger, Char, Schneider (2021), *Beyond
        pinball loss: quantile methods for calibrated uncertainty quantification*, NeurIPS.
    """
    q, y, a, w = quantiles, targets, levels, sample_weight.astype(quantiles.dtype)
    return _qce(q, y.astype(q.dtype), a.astype(q.dtype), w / jnp.sum(w), temperature.astype(q.dtype))


@jax.jit
def _qce(q, y, a, w, tau):
    covered = jax.nn.sigmoid((q - y[:, None]) / tau)  # smoothed 1[y ≤ q]
    coverage = jnp.sum(w[:, None] * covered, axis=0)
    return jnp.mean(jnp.abs(coverage - a))
