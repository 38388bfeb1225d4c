r"""Kernel auditing and witness-based post-processing for weighted multi-class calibration
(Gopalan, Hu, Rothblum 2024, *On Computationally Efficient Multi-Class Calibration*).

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

* :class:`jcalib.metrics.MultinomialKernel` — $\ker_d(v, v') = \sum_{i=0}^d (v\cdot v')^i$
  (Definition 6.3), and :func:`jcalib.metrics.kernel_audit` — Algorithm 2, a metric, in
  :mod:`jcalib.metrics.kernel` (Algorithm 1 is its one-coordinate case,
  :func:`kernel_weak_learner`, here).
* :class:`KernelCalibration` / :class:`FittedKernelCalibration` — post-processing by repeated
  auditing (Lemma 4.2, following GKSZ22 Lemma 33).
* :func:`projected_smooth_auditor`, :func:`sigmoid_auditor` — the auditors of Theorems 7.1
  and 7.9 with their degree (and guaranteed witness value) derived from $\alpha$ (and $L$).
"""

from __future__ import annotations

import functools
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, Float, Int
from tqdm.auto import tqdm

from .. import _kernels
from .._kernels import MultinomialKernel, kernel_matmul
from .._simplex import project_simplex
from .._validation import (
    STEPS,
    Bool,
    ClassLabels,
    Custom,
    Integer,
    Optional,
    Real,
    RealArray,
    SimplexProbs,
    Weights,
    as_int,
    check_fields,
    declare,
)
from .._weights import normalised_weights
from ..metrics.kernel import (
    KernelAudit,
    KernelWitness,
    audit_core as _audit_core,
    kernel_audit,
    kernel_scale as _resolve_scale,
)
from .base import AbstractFittedRecalibrator, AbstractRecalibrator

__all__ = [
    "FittedKernelCalibration",
    "KernelCalibration",
    "TheoremAuditor",
    "kernel_weak_learner",
    "projected_smooth_auditor",
    "sigmoid_auditor",
]

# The kernels, the tiled Gram product and the simplex projection live in modules shared with
# jcalib.metrics (which must not import this subpackage); the audit itself — a metric, the
# RKHS-ball calibration error — lives in jcalib.metrics.kernel, with the kernels.
Kernel = _kernels.Kernel
_DEFAULT_TILE = _kernels.DEFAULT_TILE


# --------------------------------------------------------------------------------------------
# Algorithm 1


def _callable_kernel(kernel, name, bound):
    if not callable(kernel):
        raise ValueError(f"{name} must be callable ker(A, B) -> Gram block, got {type(kernel).__name__}")
    return kernel


_KERNEL = Custom(_callable_kernel, "a callable ker(A, B) -> Gram block")
_TILE = Integer(1, 2**20, what="rows per Gram block")
# fit's inputs: sample_weight=None stays None (unweighted means), given weights need a positive sum
_FIT_INPUTS = dict(probs=SimplexProbs(), labels=ClassLabels(), sample_weight=Weights(length_of="probs"))


@declare(points=SimplexProbs(), targets=RealArray(lo=-1, hi=1, length_of="points"),
         kernel=Optional(_KERNEL), tile=_TILE)
def kernel_weak_learner(
    points: Float[Array, "n k"],
    targets: Float[Array, " n"],
    kernel: Kernel | None = None,
    *,
    s: float | None = None,
    tile: int = _DEFAULT_TILE,
) -> tuple[Float[Array, ""], KernelWitness]:
    r"""Algorithm 1 of Gopalan et al. (2024): weak agnostic learner for an RKHS ball.

    Given $(v_i, z_i) \in \Delta_k\times[-1, 1]$, returns $w(v) = \frac{1}{\lambda s}\sum_i
    z_i\ker(v_i, v)$ with $\lambda = (\sum_{i,j} z_i z_j \ker(v_i, v_j))^{1/2}$, and its
    correlation $\frac1n\sum_i z_i w(v_i) = \lambda/(ns)$ (**normalised**). Theorem 6.1: an
    $(\alpha, \alpha/(3rs))$ agnostic learner for $B_\Gamma(r)$ with
    $n = O(r^2 s^2\alpha^{-2}\log(1/\delta))$. It is Algorithm 2 for one coordinate.

    Returns:
        ``(correlation, witness)``; ``witness(u)`` has shape ``(m, 1)``.
    """
    kernel = MultinomialKernel(2) if kernel is None else kernel
    v = points
    z = targets.astype(v.dtype)
    s_ = _resolve_scale(kernel, s)
    value, _, _, coef, _ = _audit_core(kernel, s_, tile, v, z[:, None])
    return value, KernelWitness(v, coef, kernel, tile)


# --------------------------------------------------------------------------------------------
# Post-processing (Lemma 4.2 / GKSZ22 Lemma 33)


class FittedKernelCalibration(AbstractFittedRecalibrator):
    r"""Fitted post-processing: the witnesses of every step, replayed in order when called.

    Step $t$ maps $u \mapsto \Pi_\Delta(u + \eta_t w_t(u))$ with
    $w_t(u) = \ker(u, V_t)\,C_t$. Steps with $\eta_t = 0$ are inactive (the audit's value was
    below $\beta$) and are skipped. On the training predictions, calling it reproduces the
    fitted trajectory (up to float round-off).

    Memory: ``support`` and ``coef`` are ``(T, n, k)`` each, i.e. $2Tnk$ floats
    (e.g. $T = 50$, $n = 10^4$, $k = 10$: 40 MB in float32); applying to $m$ points costs
    $O(Tmnk)$ time and $O(\mathrm{tile}\cdot n)$ extra memory.

    Attributes:
        support: ``(T, n, k)`` the training predictions at the start of each step.
        coef: ``(T, n, k)`` witness coefficients $\omega_i n z_{i\ell}/(\lambda_\ell s)$ of
            each step ($z_{i\ell}/(\lambda_\ell s)$ without sample weights).
        eta: ``(T,)`` step sizes (0 for inactive steps).
        audit_value: ``(T,)`` the audit's value (normalised witness correlation) before step t.
        sq_loss: ``(T + 1,)`` mean squared loss $\sum_i\omega_i\|v_i - y_i\|_2^2$ before step
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

    @declare(probs=SimplexProbs())
    def __call__(self, probs: Float[Array, "m k"]) -> Float[Array, "m k"]:
        r"""Replay the fitted witnesses on new predictions: $u \leftarrow \Pi_\Delta(u + \eta_t
        w_t(u))$ for every active step $t$ in order.

        Args:
            probs: ``(m, k)`` predictions on the simplex.

        Returns:
            ``(m, k)`` post-processed predictions on the simplex.
        """
        u = probs
        if u.shape[1] != self.support.shape[-1]:
            raise ValueError(f"probs must have {self.support.shape[-1]} columns (the classes seen in fit), got {u.shape[1]}")
        if self.eta.shape[0] == 0:
            return u
        return _apply_jit(self, u.astype(self.coef.dtype))


def _apply_core(fitted: FittedKernelCalibration, u):
    def step(u, xs):
        supp, coef, eta = xs
        w = kernel_matmul(fitted.kernel, u, supp, coef, fitted.tile)
        return jnp.where(eta > 0, project_simplex(u + eta * w), u), None

    u, _ = lax.scan(step, u, (fitted.support, fitted.coef, fitted.eta.astype(u.dtype)))
    return u


_apply_jit = jax.jit(_apply_core)


def _mean(x, weights):
    return jnp.mean(x) if weights is None else jnp.sum(weights * x)


def _fit_steps(kernel, s, tile, v, onehot, weights, beta, eta, n_steps):
    """``n_steps`` audit-and-update steps from predictions v; returns (v_final, per-step arrays).

    ``weights``: ``None`` (plain means) or normalised sample weights ω (weighted means)."""
    n = v.shape[0]

    def step(v, _):
        z = onehot - v
        # The weighted audit is the plain one on n·ω·z: λ_ℓ and the witness then carry ω.
        zw = z if weights is None else (n * weights)[:, None] * z
        value, _, _, coef, w = _audit_core(kernel, s, tile, v, zw)
        active = value >= beta
        if eta is None:
            # Minimiser of the bound  L(v') ≤ L(v) − 2η·value + η²·E‖w‖²  (GKSZ22 Lemma 33):
            # guarantees a decrease of value²/E‖w‖² ≥ β²/k per active step.
            norm2 = _mean(jnp.sum(w**2, axis=1), weights)
            step_size = value / jnp.where(norm2 > 0, norm2, 1.0)
        else:
            step_size = jnp.asarray(eta, v.dtype)
        step_size = jnp.where(active, step_size, 0.0)
        v_new = jnp.where(active, project_simplex(v + step_size * w), v)
        return v_new, (v, coef, step_size, value, _mean(jnp.sum(z**2, axis=1), weights))

    return lax.scan(step, v, None, length=n_steps)


@functools.partial(jax.jit, static_argnames=("kernel", "s", "tile", "n_steps"))
def _fit_jit(v, y, weights, beta, eta, *, kernel, s, tile, n_steps):
    onehot = jax.nn.one_hot(y, v.shape[1], dtype=v.dtype)
    v_final, (supp, coef, etas, values, losses) = _fit_steps(
        kernel, s, tile, v, onehot, weights, jnp.asarray(beta, v.dtype), eta, n_steps
    )
    last = _mean(jnp.sum((v_final - onehot) ** 2, axis=1), weights)
    return v_final, supp, coef, etas, values, jnp.append(losses, last)


class KernelCalibration(AbstractRecalibrator):
    r"""Post-processing until the kernel auditor finds no witness reaching ``beta`` (Gopalan et al.
    2024, Lemma 4.2, following GKSZ22 Lemma 33).

    Repeat for ``max_steps`` steps (fixed, one ``lax.scan``): audit the current training
    predictions with :func:`jcalib.metrics.kernel_audit`; if its witness $w'$ has correlation
    $E_n\langle y - v, w'(v)\rangle \ge \beta$, update

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
    $CE_{B_\Gamma(r)^k}(\hat D_n) < r s\beta$ on the training sample. With sample weights
    $\omega$ every mean $E_n$ is the weighted one.

    The procedure is deterministic: ``fit`` takes no key.

    Attributes:
        kernel: as in :func:`jcalib.metrics.kernel_audit` (static); default
            :class:`jcalib.metrics.MultinomialKernel` of degree 2.
        beta: stop threshold on the audit's (normalised) witness correlation; a leaf (vmap
            over it).
        eta: fixed step size, or ``None`` for the adaptive step above.
        max_steps: number of audit steps (static).
        tile: rows per Gram block (static).
        s: kernel scale, $s^2 \ge \sup_v \ker(v, v)$ (static; default from
            ``kernel.diag_bound``).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> v = jax.nn.softmax(2 * jax.random.normal(jax.random.key(0), (200, 3)), axis=1)
        >>> y = jax.random.categorical(jax.random.key(1), jnp.log(v ** 0.5))
        >>> fitted = KernelCalibration(beta=0.02, max_steps=20).fit(v, y)
        >>> fitted(v).shape
        (200, 3)

    References:
        Gopalan, Hu, Rothblum (2024), Lemma 4.2, Definition 4.1; Gopalan, Kalai, Sharan,
        Wieder (2022, GKSZ22), Lemma 33.
    """

    kernel: Kernel = eqx.field(static=True, default=MultinomialKernel(2))
    beta: float | Float[Array, ""] = 0.01
    eta: float | Float[Array, ""] | None = None
    max_steps: int = eqx.field(static=True, default=50, converter=as_int)
    tile: int = eqx.field(static=True, default=_DEFAULT_TILE, converter=as_int)
    s: float | None = eqx.field(static=True, default=None)

    def __check_init__(self):
        check_fields(self, kernel=_KERNEL, beta=Real(0), eta=Optional(Real(0, open_lo=True)), max_steps=STEPS,
                     tile=_TILE)
        _resolve_scale(self.kernel, self.s)

    def _prepare(self, probs, labels, sample_weight):
        """Checked inputs (by the declaration of ``fit``) ready for the jitted loop."""
        v, y, w = probs, labels, sample_weight
        weights = None if sample_weight is None else normalised_weights(w, v)
        eta = None if self.eta is None else jnp.asarray(self.eta, v.dtype)
        return v, y, weights, eta, dict(kernel=self.kernel, s=_resolve_scale(self.kernel, self.s), tile=self.tile)

    @declare(**_FIT_INPUTS)
    def fit(
        self,
        probs: Float[Array, "n k"],
        labels: Int[Array, " n"],
        *,
        sample_weight: Float[Array, " n"] | None = None,
    ) -> FittedKernelCalibration:
        """Run the ``max_steps`` audit-and-update steps (one jitted ``lax.scan``).

        Args:
            probs: ``(n, k)`` training predictions on the simplex.
            labels: ``(n,)`` integer labels.
            sample_weight: optional ``(n,)`` non-negative weights (weighted means throughout).

        Returns:
            :class:`FittedKernelCalibration` with every step (inactive ones have ``eta = 0``).
        """
        v, y, weights, eta, static = self._prepare(probs, labels, sample_weight)
        _, supp, coef, etas, values, losses = _fit_jit(v, y, weights, self.beta, eta, n_steps=self.max_steps, **static)
        return FittedKernelCalibration(supp, coef, etas, values, losses, self.kernel, self.tile)

    @declare(**_FIT_INPUTS, chunk=STEPS, progress=Bool())
    def fit_with_history(
        self,
        probs: Float[Array, "n k"],
        labels: Int[Array, " n"],
        *,
        sample_weight: Float[Array, " n"] | None = None,
        chunk: int = 10,
        progress: bool = True,
    ) -> tuple[FittedKernelCalibration, dict[str, np.ndarray]]:
        """``fit`` in compiled chunks of ``chunk`` steps with a tqdm bar, stopping early.

        The bar shows the audit value and the squared loss; the fit stops at the first chunk
        boundary after the audit value falls below ``beta`` (every later step would be
        inactive), and the fitted map keeps only the active steps (it applies as ``fit``'s).

        Args:
            probs, labels, sample_weight: as in :meth:`fit`.
            chunk: steps per compiled chunk between progress updates.
            progress: show the progress bar.

        Returns:
            ``(fitted, history)``: the :class:`FittedKernelCalibration` of the active steps and
            a dict with ``sq_loss`` ``(steps + 1,)`` and ``audit_value`` ``(steps,)`` as NumPy
            arrays (including the final, inactive audit when the fit converged), and
            ``converged`` (a bool: the audit value fell below ``beta`` within ``max_steps``).
        """
        v, y, weights, eta, static = self._prepare(probs, labels, sample_weight)
        parts, done, converged = [], 0, False
        with tqdm(total=self.max_steps, disable=not progress, desc="kernel calibration") as bar:
            while done < self.max_steps:
                n = min(chunk, self.max_steps - done)
                v, supp, coef, etas, values, losses = _fit_jit(v, y, weights, self.beta, eta, n_steps=n, **static)
                parts.append((supp, coef, etas, values, losses))
                done += n
                bar.update(n)
                bar.set_postfix(audit=f"{float(values[-1]):.4f}", sq_loss=f"{float(losses[-1]):.4f}")
                if not bool(etas[-1] > 0):
                    converged = True
                    break
        supp = jnp.concatenate([p[0] for p in parts])
        coef = jnp.concatenate([p[1] for p in parts])
        etas = jnp.concatenate([p[2] for p in parts])
        values = jnp.concatenate([p[3] for p in parts])
        losses = jnp.concatenate([p[4][:-1] for p in parts] + [parts[-1][4][-1:]])
        n_act = int(np.sum(np.asarray(etas) > 0))  # active steps form a prefix (see _fit_steps)
        history = {
            "sq_loss": np.asarray(losses[: n_act + 1]),
            "audit_value": np.asarray(values[: n_act + converged]),
            "converged": converged,
        }
        fitted = FittedKernelCalibration(
            supp[:n_act], coef[:n_act], etas[:n_act], values[:n_act], losses[: n_act + 1], self.kernel, self.tile
        )
        return fitted, history


# --------------------------------------------------------------------------------------------
# Ready-made auditors (Theorems 7.1 and 7.9)


class TheoremAuditor(eqx.Module):
    r"""An auditor with parameters derived from a theorem of Gopalan et al. (2024).

    Calling it runs :func:`kernel_audit` with its kernel. Decision rule of Definition 4.1: if
    the population error exceeds ``alpha``, the witness's correlation is at least
    ``beta`` $= 10^{\texttt{log10\_beta}}$ (w.h.p., given ``n`` $\gtrsim$ the theorem's sample
    size); so ``audit.value < beta`` certifies error $\le$ ``alpha``. The theorem's $\beta$ is
    astronomically small for moderate ``alpha`` (it is a worst case over all Lipschitz
    functions), which is why it is kept as a base-10 logarithm; in practice the witness value
    is compared with a chosen threshold, as in :class:`KernelCalibration`.

    Attributes:
        kernel: :class:`jcalib.metrics.MultinomialKernel` of the derived degree.
        degree: $d$.
        alpha: target error.
        log10_beta: $\log_{10}$ of the guaranteed witness correlation $\beta$.
        log10_radius: $\log_{10} r$, the RKHS radius containing the approximating polynomials.
        theorem: which statement the parameters come from.
    """

    kernel: MultinomialKernel = eqx.field(static=True)
    degree: int = eqx.field(static=True)
    alpha: float = eqx.field(static=True)
    log10_beta: float = eqx.field(static=True)
    log10_radius: float = eqx.field(static=True)
    theorem: str = eqx.field(static=True)

    def __call__(self, probs: Float[Array, "n k"], labels: Int[Array, " n"], *, tile: int = _DEFAULT_TILE) -> KernelAudit:
        """Audit ``probs`` ``(n, k)`` and ``labels`` ``(n,)`` with this auditor's kernel
        (:func:`jcalib.metrics.kernel_audit`)."""
        return kernel_audit(probs, labels, self.kernel, tile=tile)


_ALPHA = Real(0, 0.5, open_lo=True, open_hi=True, static=True)
_DEGREE = Optional(Integer(0, 2**12, what="a multinomial kernel of that degree overflows every float"))


@declare(alpha=_ALPHA, max_sq_norm=Real(1, static=True), degree=_DEGREE)
def projected_smooth_auditor(alpha: float, max_sq_norm: float = 2.0, degree: int | None = None) -> TheoremAuditor:
    r"""Kernel auditor for $m$-projected smooth calibration (Gopalan et al. 2024, Theorem 7.1).

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
        max_sq_norm: the paper's $m$, the bound on $\|a\|_2^2$ of the projections (the
            subset size for subset smooth calibration), $\ge 1$; as in
            :func:`jcalib.metrics.projected_smooth_calibration_error`.
        degree: override the derived degree (e.g. a cheaper practical choice).

    Returns:
        :class:`TheoremAuditor`.

    References:
        Gopalan, Hu, Rothblum (2024), Theorem 7.1, Lemmas 7.2–7.5, Corollary 7.6, Lemma 6.4.
    """
    m = max_sq_norm
    d = max(0, math.ceil(4 * math.pi / alpha) - 1) if degree is None else int(degree)
    log10_r = d * math.log10(4 * max(1.0, math.sqrt(float(m))))
    log10_beta = math.log10(alpha / 6.0) - log10_r - 0.5 * math.log10(d + 1)
    return TheoremAuditor(MultinomialKernel(d), d, alpha, log10_beta, log10_r, "Theorem 7.1")


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


@declare(alpha=_ALPHA, L=Real(1, static=True), k=Optional(Integer(1, 2**24)), degree=_DEGREE)
def sigmoid_auditor(alpha: float, L: float, k: int | None = None, degree: int | None = None) -> TheoremAuditor:
    r"""Kernel auditor for sigmoid calibration $\Sigma_L^k$ (Gopalan et al. 2024, Definition 7.7, Theorem 7.9).

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
    a2 = 1.0 if k is None else float(k)
    d = _tanh_degree(alpha, float(L)) if degree is None else int(degree)
    _, log10_r2 = _tanh_interpolants(float(L), d)
    # Lemma 7.3: ‖p_a‖² ≤ Σ_i η_i² ‖a‖^{2i} ≤ ‖a‖^{2d} Σ_i η_i² for ‖a‖ ≥ 1 (‖a‖² ≤ k)
    log10_r = 0.5 * (log10_r2 + d * math.log10(max(a2, 1.0)))
    log10_beta = math.log10(alpha / 6.0) - log10_r - 0.5 * math.log10(d + 1)
    return TheoremAuditor(MultinomialKernel(d), d, alpha, log10_beta, log10_r, "Theorem 7.9")
