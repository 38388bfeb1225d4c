r"""Kernel auditing and witness-based post-processing for weighted multi-class calibration
(paper 003: Gopalan, Hu, Rothblum 2024, *On Computationally Efficient Multi-Class Calibration*).

A distribution of predictions and labels $(v, y) \in \Delta_k \times E_k$ is
$(W, \alpha)$-calibrated when $CE_W = \sup_{w \in W} |E\langle y - v, w(v)\rangle| \le \alpha$
(Definition 2.2). For $W = B_\Gamma(r)^k$, the radius-$r$ ball of a reproducing-kernel Hilbert
space $\Gamma$ in every coordinate, the supremum has a closed form and Algorithm 2 finds its
witness with kernel evaluations only:

$$z_i = y_i - v_i,\qquad \lambda_\ell = \Big(\sum_{i,j} z_{i\ell} z_{j\ell}
\ker(v_i, v_j)\Big)^{1/2},\qquad w_\ell(v) = \frac{1}{\lambda_\ell s}\sum_i z_{i\ell}\ker(v_i, v)$$

($w_\ell = 0$ when $\lambda_\ell = 0$), with $s^2 \ge \sup_{v\in\Delta_k} \ker(v, v)$ so that
$|w_\ell| \le 1$ on the simplex. On the audited sample the witness's correlation is

$$\frac1n \sum_i \langle z_i, w(v_i)\rangle = \frac{1}{ns}\sum_\ell \lambda_\ell
= \frac{1}{rs}\, CE_{B_\Gamma(r)^k}(\hat D_n),$$

i.e. the audit computes the empirical RKHS-ball calibration error exactly (Cauchy–Schwarz; the
proof of Theorem 6.2), and Theorem 6.2 turns that into an $(\alpha, \alpha/(3rs))$ auditor for
the population with $n = O(k r^2 s^2 \alpha^{-2}\log(1/\delta))$ samples.

Everything is matrix algebra. The products $K Z$ and $\ker(U, V) C$ are formed in row tiles
(``lax.map`` over blocks of ``tile`` rows), so memory is $O(n\cdot\mathrm{tile} + nk)$ and an
$n\times n$ Gram matrix never exists; time is $O(n^2 k)$ per audit. The same code runs on CPU
and accelerators.

Contents:

* :func:`multinomial_kernel` — $\ker_d(v, v') = \sum_{i=0}^d (v\cdot v')^i$ (Definition 6.3).
* :func:`kernel_audit` — Algorithm 2, a metric living in :mod:`jcalib.metrics.kernel` and
  re-exported here (Algorithm 1 is its one-coordinate case, :func:`kernel_weak_learner`).
* :func:`kernel_calibration_fit` / :func:`kernel_calibration_apply` / :class:`KernelCalibrator`
  — post-processing by repeated auditing (Lemma 4.2, following GKSZ22 Lemma 33).
* :func:`projected_smooth_auditor`, :func:`sigmoid_auditor` — the auditors of Theorems 7.1
  and 7.9 with their degree (and guaranteed witness value) derived from $\alpha$ (and $L$).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, Float, Int, PRNGKeyArray
from tqdm.auto import tqdm

from .. import _kernels
from .._kernels import GaussianKernel, MultinomialKernel, gaussian_kernel, kernel_matmul, multinomial_kernel
from .._simplex import project_simplex
from .._validation import (
    check_key,
    check_multiclass_inputs,
    check_positive_int,
    check_simplex_probs,
    is_concrete,
)
from ..metrics.kernel import (
    KernelAudit,
    KernelWitness,
    audit_core as _audit_core,
    audit_inputs as _audit_inputs,
    kernel_audit,
    kernel_audit_jit as _kernel_audit_jit,
    kernel_scale as _resolve_scale,
)
from .base import Recalibrator

__all__ = [
    "MultinomialKernel",
    "multinomial_kernel",
    "GaussianKernel",
    "gaussian_kernel",
    "kernel_matmul",
    "KernelWitness",
    "KernelAudit",
    "kernel_audit",
    "kernel_weak_learner",
    "project_simplex",
    "KernelCalibrationParams",
    "kernel_calibration_fit",
    "kernel_calibration_apply",
    "KernelCalibrator",
    "TheoremAuditor",
    "projected_smooth_auditor",
    "sigmoid_auditor",
]

# The kernels, the tiled Gram product and the simplex projection live in modules shared with
# jcalib.metrics (which must not import this subpackage), and the audit itself — a metric, the
# RKHS-ball calibration error — lives in jcalib.metrics.kernel; they are re-exported here, next
# to the post-processing built on them.
Kernel = _kernels.Kernel
_DEFAULT_TILE = _kernels.DEFAULT_TILE


# --------------------------------------------------------------------------------------------
# Algorithm 2 (and Algorithm 1)


def kernel_weak_learner(
    points: Float[Array, "n k"],
    targets: Float[Array, " n"],
    kernel: Kernel | None = None,
    *,
    s: float | None = None,
    tile: int = _DEFAULT_TILE,
) -> tuple[Float[Array, ""], KernelWitness]:
    r"""Algorithm 1 of paper 003: weak agnostic learner for an RKHS ball.

    Given $(v_i, z_i) \in \Delta_k\times[-1, 1]$, returns $w(v) = \frac{1}{\lambda s}\sum_i
    z_i\ker(v_i, v)$ with $\lambda = (\sum_{i,j} z_i z_j \ker(v_i, v_j))^{1/2}$, and its
    correlation $\frac1n\sum_i z_i w(v_i) = \lambda/(ns)$ (**normalised**). Theorem 6.1: an
    $(\alpha, \alpha/(3rs))$ agnostic learner for $B_\Gamma(r)$ with
    $n = O(r^2 s^2\alpha^{-2}\log(1/\delta))$. It is Algorithm 2 for one coordinate.

    Returns:
        ``(correlation, witness)``; ``witness(u)`` has shape ``(m, 1)``.
    """
    kernel = multinomial_kernel(2) if kernel is None else kernel
    v = check_simplex_probs(points, "points")
    z = jnp.asarray(targets, v.dtype)
    if z.shape != (v.shape[0],):
        raise ValueError(f"targets must have shape ({v.shape[0]},), got {tuple(z.shape)}")
    if is_concrete(z) and (not bool(jnp.all(jnp.isfinite(z))) or bool(jnp.any(jnp.abs(z) > 1))):
        raise ValueError("targets must be finite and lie in [-1, 1]")
    s_ = _resolve_scale(kernel, s)
    tile = check_positive_int(tile, "tile")
    value, _, _, coef, _ = _audit_core(kernel, s_, tile, v, z[:, None])
    return value, KernelWitness(v, coef, kernel, tile)


# --------------------------------------------------------------------------------------------
# Post-processing (Lemma 4.2 / GKSZ22 Lemma 33)


class KernelCalibrationParams(eqx.Module):
    r"""Fitted post-processing: the witnesses of every step, replayed in order at apply time.

    Step $t$ maps $u \mapsto \Pi_\Delta(u + \eta_t w_t(u))$ with
    $w_t(u) = \ker(u, V_t)\,C_t$. Steps with $\eta_t = 0$ are inactive (the audit's value was
    below $\beta$) and are skipped.

    Memory: ``support`` and ``coef`` are ``(T, n, k)`` each, i.e. $2Tnk$ floats
    (e.g. $T = 50$, $n = 10^4$, $k = 10$: 40 MB in float32); applying to $m$ points costs
    $O(Tmnk)$ time and $O(\mathrm{tile}\cdot n)$ extra memory.

    Attributes:
        support: ``(T, n, k)`` the training predictions at the start of each step.
        coef: ``(T, n, k)`` witness coefficients $z_{i\ell}/(\lambda_\ell s)$ of each step.
        eta: ``(T,)`` step sizes (0 for inactive steps).
        audit_value: ``(T,)`` the audit's value (normalised witness correlation) before step t.
        sq_loss: ``(T + 1,)`` mean squared loss $\frac1n\sum_i\|v_i - y_i\|_2^2$ before step
            t, and after the last step.
        kernel: kernel (static).
        tile: rows per Gram block (static).
    """

    support: Float[Array, "T n k"]
    coef: Float[Array, "T n k"]
    eta: Float[Array, " T"]
    audit_value: Float[Array, " T"]
    sq_loss: Float[Array, " T1"]
    kernel: Kernel = eqx.field(static=True)
    tile: int = eqx.field(static=True, default=_DEFAULT_TILE)

    @property
    def n_active(self) -> Array:
        """Number of steps that changed the predictions."""
        return jnp.sum(self.eta > 0)


def _sq_loss(v, onehot):
    return jnp.mean(jnp.sum((v - onehot) ** 2, axis=1))


def _fit_steps(kernel, s, tile, v, onehot, beta, eta, n_steps):
    """``n_steps`` audit-and-update steps from predictions v; returns (v_final, per-step arrays)."""

    def step(v, _):
        value, _, _, coef, w = _audit_core(kernel, s, tile, v, onehot - v)
        active = value >= beta
        if eta is None:
            # Minimiser of the bound  L(v') ≤ L(v) − 2η·value + η²·E‖w‖²  (GKSZ22 Lemma 33):
            # guarantees a decrease of value²/E‖w‖² ≥ β²/k per active step.
            norm2 = jnp.mean(jnp.sum(w**2, axis=1))
            step_size = value / jnp.where(norm2 > 0, norm2, 1.0)
        else:
            step_size = jnp.asarray(eta, v.dtype)
        step_size = jnp.where(active, step_size, 0.0)
        v_new = jnp.where(active, project_simplex(v + step_size * w), v)
        return v_new, (v, coef, step_size, value, _sq_loss(v, onehot))

    return lax.scan(step, v, None, length=n_steps)


@functools.partial(jax.jit, static_argnames=("kernel", "s", "tile", "eta_none", "n_steps"))
def _fit_jit(v, y, beta, eta, *, kernel, s, tile, eta_none, n_steps):
    onehot = jax.nn.one_hot(y, v.shape[1], dtype=v.dtype)
    v_final, (supp, coef, etas, values, losses) = _fit_steps(
        kernel, s, tile, v, onehot, jnp.asarray(beta, v.dtype), None if eta_none else eta, n_steps
    )
    return v_final, supp, coef, etas, values, jnp.append(losses, _sq_loss(v_final, onehot))


def _fit_settings(kernel, beta, eta, max_steps, tile, s):
    kernel = multinomial_kernel(2) if kernel is None else kernel
    if not callable(kernel):
        raise ValueError(f"kernel must be callable ker(A, B) -> Gram block, got {type(kernel).__name__}")
    if is_concrete(beta) and not float(beta) >= 0:
        raise ValueError(f"beta must be a non-negative number, got {beta!r}")
    if eta is not None and is_concrete(eta) and not float(eta) > 0:
        raise ValueError(f"eta must be positive or None (adaptive), got {eta!r}")
    return kernel, _resolve_scale(kernel, s), check_positive_int(max_steps, "max_steps"), check_positive_int(tile, "tile")


def kernel_calibration_fit(
    key: PRNGKeyArray | None,
    probs: Float[Array, "n k"],
    labels: Int[Array, " n"],
    *,
    kernel: Kernel | None = None,
    beta: float = 0.01,
    eta: float | None = None,
    max_steps: int = 50,
    tile: int = _DEFAULT_TILE,
    s: float | None = None,
) -> KernelCalibrationParams:
    r"""Post-process predictions until the kernel auditor finds no witness reaching ``beta``.

    Lemma 4.2 (following GKSZ22 Lemma 33): repeat for ``max_steps`` steps (fixed, one
    ``lax.scan``): audit the current training predictions with :func:`kernel_audit`; if its
    witness $w'$ has correlation $E_n\langle y - v, w'(v)\rangle \ge \beta$, update

    $$v \leftarrow \Pi_\Delta\big(v + \eta\, w'(v)\big)$$

    (Euclidean projection onto the simplex), otherwise leave $v$ unchanged (all later steps are
    then inactive too). Because $y \in \Delta$ and $\Pi_\Delta$ is non-expansive,
    $\|v' - y\|^2 \le \|v - y\|^2 - 2\eta\langle y - v, w'\rangle + \eta^2\|w'\|^2$, so each
    active step lowers the mean squared loss by at least $2\eta\beta - \eta^2 E_n\|w'\|^2$.
    With ``eta=None`` (default) $\eta = \text{value}/E_n\|w'\|_2^2$, the minimiser of that
    bound, which lowers the loss by $\text{value}^2/E_n\|w'\|^2 \ge \beta^2/k$ (as
    $|w'_\ell| \le 1$). A fixed ``eta`` keeps the loss non-increasing when
    $\eta \le 2\beta/k$ (the paper's Lemma 4.2 fixes no step size; $\eta \approx \beta/k$ is
    a safe fixed choice). The squared loss starts
    $\le 2$, so at most $2k/\beta^2$ steps can be active: with
    ``max_steps`` $\ge 2k/\beta^2$ the final audit value is $< \beta$, i.e. (audit exactness)
    $CE_{B_\Gamma(r)^k}(\hat D_n) < r s\beta$ on the training sample.

    Args:
        key: unused (the procedure is deterministic); kept first for the common
            ``fit(key, probs, labels)`` signature. ``None`` is accepted.
        probs: ``(n, k)`` training predictions.
        labels: ``(n,)`` integer labels.
        kernel: as in :func:`kernel_audit` (static); default multinomial of degree 2.
        beta: stop threshold on the audit's (normalised) witness correlation; may be traced
            (vmap over it).
        eta: fixed step size, or ``None`` for the adaptive step above (static choice).
        max_steps: number of audit steps (static).
        tile: rows per Gram block (static).
        s: kernel scale (see :func:`kernel_audit`).

    Returns:
        :class:`KernelCalibrationParams`; apply with :func:`kernel_calibration_apply`.

    References:
        Gopalan, Hu, Rothblum (2024), Lemma 4.2, Definition 4.1; Gopalan, Kalai, Sharan,
        Wieder (2022, GKSZ22), Lemma 33.
    """
    check_key(key, optional=True)  # deterministic: None or a key
    del key  # deterministic
    kernel, s_, n_steps, tile = _fit_settings(kernel, beta, eta, max_steps, tile, s)
    v, y = _audit_inputs(probs, labels)
    _, supp, coef, etas, values, losses = _fit_jit(
        v, y, beta, 0.0 if eta is None else eta,
        kernel=kernel, s=s_, tile=tile, eta_none=eta is None, n_steps=n_steps,
    )
    return KernelCalibrationParams(supp, coef, etas, values, losses, kernel, tile)


def _apply_core(params: KernelCalibrationParams, u):
    def step(u, xs):
        supp, coef, eta = xs
        w = kernel_matmul(params.kernel, u, supp, coef, params.tile)
        return jnp.where(eta > 0, project_simplex(u + eta * w), u), None

    u, _ = lax.scan(step, u, (params.support, params.coef, params.eta.astype(u.dtype)))
    return u


_apply_jit = jax.jit(_apply_core)


def kernel_calibration_apply(params: KernelCalibrationParams, probs: Float[Array, "m k"]) -> Float[Array, "m k"]:
    r"""Replay the fitted witnesses on new predictions: $u \leftarrow \Pi_\Delta(u + \eta_t
    w_t(u))$ for every active step $t$ in order. On the training predictions this reproduces
    the fitted trajectory (up to float round-off)."""
    u = check_simplex_probs(probs)
    if u.shape[1] != params.support.shape[-1]:
        raise ValueError(f"params are for {params.support.shape[-1]} classes, got probs with {u.shape[1]}")
    return _apply_jit(params, u.astype(params.coef.dtype))


class KernelCalibrator(Recalibrator):
    r"""Scikit-learn-style wrapper of :func:`kernel_calibration_fit` (paper 003, Lemma 4.2).

    Fits in chunks of ``chunk`` steps with a tqdm progress bar (audit value and squared loss
    in the postfix) and stops at the first chunk boundary after the audit value falls below
    ``beta`` (every later step would be inactive); the stored parameters keep only the active
    steps, so ``predict_proba`` replays exactly those.

    Args:
        kernel: positive-definite kernel (default multinomial, degree 2).
        beta: stop threshold on the audit's witness correlation.
        eta: fixed step size or ``None`` (adaptive, see :func:`kernel_calibration_fit`).
        max_steps: maximum number of audit steps.
        tile: rows per Gram block.
        s: kernel scale (default from ``kernel.diag_bound``).
        chunk: steps per compiled chunk between progress updates.
        progress: show the progress bar.

    Attributes:
        params_: :class:`KernelCalibrationParams` of the active steps.
        history_: dict with ``sq_loss`` (steps + 1,) and ``audit_value`` (steps,) as NumPy
            arrays, including the final (inactive) audit when the fit converged.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> v = jax.nn.softmax(2 * jax.random.normal(jax.random.key(0), (200, 3)), axis=1)
        >>> y = jax.random.categorical(jax.random.key(1), jnp.log(v ** 0.5))
        >>> cal = KernelCalibrator(beta=0.02, max_steps=20, progress=False).fit(v, y)
        >>> cal.predict_proba(v).shape
        (200, 3)
    """

    def __init__(
        self,
        kernel: Kernel | None = None,
        beta: float = 0.01,
        eta: float | None = None,
        max_steps: int = 100,
        tile: int = _DEFAULT_TILE,
        s: float | None = None,
        chunk: int = 10,
        progress: bool = True,
    ):
        self.kernel, self.s, self.max_steps, self.tile = _fit_settings(kernel, beta, eta, max_steps, tile, s)
        self.beta = float(beta)
        self.eta = eta
        self.chunk = check_positive_int(chunk, "chunk")
        self.progress = progress

    def _fit(self, key, probs, labels):
        v = probs
        parts, done, converged = [], 0, False
        with tqdm(total=self.max_steps, disable=not self.progress, desc="kernel calibration") as bar:
            while done < self.max_steps:
                n = min(self.chunk, self.max_steps - done)
                v, supp, coef, etas, values, losses = _fit_jit(
                    v, labels, self.beta, 0.0 if self.eta is None else self.eta,
                    kernel=self.kernel, s=self.s, tile=self.tile, eta_none=self.eta is None, n_steps=n,
                )
                active = np.asarray(etas) > 0
                parts.append((supp, coef, etas, values, losses))
                done += n
                bar.update(n)
                bar.set_postfix(audit=f"{float(values[-1]):.4f}", sq_loss=f"{float(losses[-1]):.4f}")
                if not active[-1]:
                    converged = True
                    break
        supp = jnp.concatenate([p[0] for p in parts])
        coef = jnp.concatenate([p[1] for p in parts])
        etas = jnp.concatenate([p[2] for p in parts])
        values = jnp.concatenate([p[3] for p in parts])
        losses = jnp.concatenate([p[4][:-1] for p in parts] + [parts[-1][4][-1:]])
        n_act = int(np.sum(np.asarray(etas) > 0))  # active steps form a prefix (see _fit_steps)
        self.history_ = {
            "sq_loss": np.asarray(losses[: n_act + 1]),
            "audit_value": np.asarray(values[: n_act + converged]),
        }
        self.converged_ = converged
        return KernelCalibrationParams(
            supp[:n_act], coef[:n_act], etas[:n_act], values[:n_act], losses[: n_act + 1], self.kernel, self.tile
        )

    def _apply(self, params, probs):
        if params.eta.shape[0] == 0:
            return probs
        return _apply_jit(params, probs.astype(params.coef.dtype))


# --------------------------------------------------------------------------------------------
# Ready-made auditors (Theorems 7.1 and 7.9)


class TheoremAuditor(NamedTuple):
    r"""An auditor with parameters derived from a theorem of paper 003.

    Calling it runs :func:`kernel_audit` with its kernel. Decision rule of Definition 4.1: if
    the population error exceeds ``alpha``, the witness's correlation is at least
    ``beta`` $= 10^{\texttt{log10\_beta}}$ (w.h.p., given ``n`` $\gtrsim$ the theorem's sample
    size); so ``audit.value < beta`` certifies error $\le$ ``alpha``. The theorem's $\beta$ is
    astronomically small for moderate ``alpha`` (it is a worst case over all Lipschitz
    functions), which is why it is kept as a base-10 logarithm; in practice the witness value
    is compared with a chosen threshold, as in :class:`KernelCalibrator`.

    Attributes:
        kernel: :class:`MultinomialKernel` of the derived degree.
        degree: $d$.
        alpha: target error.
        log10_beta: $\log_{10}$ of the guaranteed witness correlation $\beta$.
        log10_radius: $\log_{10} r$, the RKHS radius containing the approximating polynomials.
        theorem: which statement the parameters come from.
    """

    kernel: MultinomialKernel
    degree: int
    alpha: float
    log10_beta: float
    log10_radius: float
    theorem: str

    def __call__(self, probs, labels, *, tile: int = _DEFAULT_TILE) -> KernelAudit:
        return kernel_audit(probs, labels, self.kernel, tile=tile)


def _check_alpha(alpha):
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)) or not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be a number in (0, 1/2), got {alpha!r}")
    return float(alpha)


def projected_smooth_auditor(alpha: float, m: float = 2.0, degree: int | None = None) -> TheoremAuditor:
    r"""Kernel auditor for $m$-projected smooth calibration (paper 003, Theorem 7.1).

    Theorem 7.1: for $\alpha, \delta \in (0, 1/2)$ and $m \in [2, k]$ there is an
    $(\alpha, 1/m^{O(1/\alpha)})$ auditor for $m$-projected smooth calibration (hence also for
    $m$-subset smooth calibration) with $n = O(k\,m^{O(1/\alpha)}\log(1/\delta))$ samples and
    time $\mathrm{poly}(n, k, 1/\alpha)$. It is Algorithm 2 with the multinomial kernel of
    degree $d = O(1/\alpha)$: every $\phi(\langle a, v\rangle)$, $\phi$ 1-Lipschitz, is within
    $\alpha/4$ of a degree-$d$ polynomial $p(\langle a, v\rangle)$ with
    $\|p_a\|_\Gamma \le r$, so $CE_{B_\Gamma(r)^k} \ge \alpha/2$ whenever
    $psCE_m \ge \alpha$, and Theorem 6.2 gives $\beta = (\alpha/2)/(3rs)$.

    Constants made explicit here (the paper leaves them in $O(\cdot)$):

    * degree: Jackson's theorem, $E_d(\phi) \le \pi/(2(d+1))$ for 1-Lipschitz $\phi$ on
      $[-1, 1]$; Lemma 7.5 needs $E_d \le \alpha/8$ (then rescales to $\alpha/4$), so
      $d = \lceil 4\pi/\alpha\rceil - 1$.
    * radius: Lemma 7.2 (Sherstov's $\sum|\eta_i| \le 4^d$ with GKKT17 Lemma 2.7),
      $r = \max(4, 4\|a\|_2)^d \le (4\max(1, \sqrt m))^d$; $s = \sqrt{d+1}$.

    Args:
        alpha: target error in $(0, 1/2)$.
        m: bound on $\|a\|_2^2$ (subset size for subset smooth calibration), $\ge 1$.
        degree: override the derived degree (e.g. a cheaper practical choice).

    Returns:
        :class:`TheoremAuditor`.

    References:
        Gopalan, Hu, Rothblum (2024), Theorem 7.1, Lemmas 7.2–7.5, Corollary 7.6, Lemma 6.4.
    """
    alpha = _check_alpha(alpha)
    if not float(m) >= 1:
        raise ValueError(f"m must be >= 1, got {m!r}")
    d = max(0, math.ceil(4 * math.pi / alpha) - 1) if degree is None else int(degree)
    log10_r = d * math.log10(4 * max(1.0, math.sqrt(float(m))))
    log10_beta = math.log10(alpha / 6.0) - log10_r - 0.5 * math.log10(d + 1)
    return TheoremAuditor(multinomial_kernel(d), d, alpha, log10_beta, log10_r, "Theorem 7.1")


def _tanh_interpolants(L: float, d: int) -> tuple[float, float]:
    """Worst sup-error on [−1, 1] of the degree-d Chebyshev interpolant of tanh(L t + b) over a
    grid of offsets b, and log10 of Lemma 7.3's radius Σ_i η_i² ‖a‖^{2i} (‖a‖ = 1) for it.

    The offsets cover [−(L + 4), L + 4]; beyond that tanh is flat to < 1e-3 on the interval."""
    t = np.cos(np.linspace(0.0, np.pi, 4001))
    worst, log10_r2 = -1.0, 0.0
    for b in np.linspace(-(L + 4.0), L + 4.0, 81):
        cheb = np.polynomial.chebyshev.Chebyshev.interpolate(lambda u: np.tanh(L * u + b), d)
        err = float(np.max(np.abs(cheb(t) - np.tanh(L * t + b))))
        if err > worst:
            eta = np.abs(np.polynomial.chebyshev.cheb2poly(cheb.coef))
            big = float(np.max(eta))
            worst, log10_r2 = err, 2 * math.log10(big) + math.log10(float(np.sum((eta / big) ** 2)))
    return worst, log10_r2


def _tanh_degree(alpha: float, L: float, max_degree: int = 1024) -> int:
    """Smallest degree (searched on a geometric-ish grid) whose interpolants reach α/8."""
    d = 1
    while d <= max_degree:
        if _tanh_interpolants(L, d)[0] <= alpha / 8:
            return d
        d = d + max(1, d // 8)
    raise ValueError(f"no degree <= {max_degree} approximates tanh({L} t + b) to within {alpha / 8}")


def sigmoid_auditor(alpha: float, L: float, k: int | None = None, degree: int | None = None) -> TheoremAuditor:
    r"""Kernel auditor for sigmoid calibration $\Sigma_L^k$ (paper 003, Definition 7.7, Theorem 7.9).

    $\Sigma_L = \{v \mapsto \tanh(L\langle a, v\rangle + b): a \in [-1,1]^k, b\in\mathbb R\}$.
    Theorem 7.9: for $\alpha\in(0,1/2)$, $L > 1$ there is an $(\alpha, \beta)$ auditor for
    $\Sigma_L^k$ with $\beta = \alpha/k^{O(L\log(L/\alpha))}$ and time and sample complexity
    $k^{O(L\log(L/\alpha))}$: Algorithm 2 with the multinomial kernel of degree
    $d = O(L\log(L/\alpha))$ (Lemma 7.8: a degree-$d$ polynomial within $\varepsilon$ of
    $\tanh(Lt + b)$ on $[-1, 1]$).

    Constants made explicit here: the degree is computed numerically as the smallest $d$ whose
    Chebyshev interpolant of $\tanh(Lt + b)$ is within $\alpha/8$ on $[-1,1]$ for all offsets
    $b$ on a grid of $[-(L+4), L+4]$ (beyond it $\tanh$ is flat to $< 10^{-3}$ on the interval)
    — a stand-in for Lemma 7.8's $O(L\log(L/\alpha))$, same growth. The radius follows
    Lemma 7.3 with the interpolant's actual monomial coefficients $\eta_i$:
    $r^2 = \max(1, \|a\|_2)^{2d}\sum_i \eta_i^2$ with $\|a\|_2^2 \le k$ (if ``k`` is given,
    else 1);
    $\beta = (\alpha/2)/(3r\sqrt{d+1})$.

    Args:
        alpha: target error in $(0, 1/2)$.
        L: slope $L \ge 1$.
        k: number of classes (enters the radius bound through $\|a\|_2 \le \sqrt k$).
        degree: override the derived degree.

    Returns:
        :class:`TheoremAuditor`.

    References:
        Gopalan, Hu, Rothblum (2024), Definition 7.7, Lemma 7.8 (after GKK20, SSS11),
        Theorem 7.9, Lemma 7.3.
    """
    alpha = _check_alpha(alpha)
    if isinstance(L, bool) or not isinstance(L, (int, float, np.floating)) or not 1 <= L < float("inf"):
        raise ValueError(f"L must be a finite number >= 1, got {L!r}")
    a2 = 1.0 if k is None else float(check_positive_int(k, "k"))
    d = _tanh_degree(alpha, float(L)) if degree is None else int(degree)
    _, log10_r2 = _tanh_interpolants(float(L), d)
    # Lemma 7.3: ‖p_a‖² ≤ Σ_i η_i² ‖a‖^{2i} ≤ ‖a‖^{2d} Σ_i η_i² for ‖a‖ ≥ 1 (‖a‖² ≤ k)
    log10_r = 0.5 * (log10_r2 + d * math.log10(max(a2, 1.0)))
    log10_beta = math.log10(alpha / 6.0) - log10_r - 0.5 * math.log10(d + 1)
    return TheoremAuditor(multinomial_kernel(d), d, alpha, log10_beta, log10_r, "Theorem 7.9")
