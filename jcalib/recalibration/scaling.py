r"""Parametric multi-class recalibration baselines: temperature, vector and matrix scaling, and
Dirichlet calibration with ODIR regularisation.

Every map here is a softmax of an affine function of the log-probabilities
$z = \log \operatorname{clip}(\hat p, 10^{-12}, 1)$:

| map | calibrated probabilities | parameters |
| --- | --- | --- |
| temperature scaling | $\operatorname{softmax}(z / T)$ | $T > 0$ (stored as $\log T$) |
| vector scaling | $\operatorname{softmax}(a \odot z + b)$ | $a, b \in \mathbb{R}^C$ |
| matrix scaling | $\operatorname{softmax}(W z + b)$ | $W \in \mathbb{R}^{C\times C}, b \in \mathbb{R}^C$ |
| Dirichlet calibration | $\operatorname{softmax}(W z + b)$ | as matrix scaling, ODIR-regularised |

Each is fitted by minimising the (sample-weighted, **normalised**: mean over samples) negative
log-likelihood plus a regulariser, run for a **fixed** number of steps inside ``lax.scan``,
starting from the identity map (T = 1, a = 1, W = I, b = 0): by L-BFGS with a backtracking
line search (:func:`jcalib.core.optim.lbfgs_minimise`: one evaluation of the loss and its
gradient per step, so the loss appears once in the compiled program), and for temperature
scaling's one parameter by Newton's method (:func:`jcalib.core.optim.newton_minimise`). No
while-loop waits on a tolerance, so the fits jit, vmap over datasets or hyperparameters, and
run in lock-step on a batch; steps after convergence idle (a ``lax.cond`` skips their work
outside vmap), and every accepted step lowers the objective, so it never ends above its value
at the identity map. All four objectives are smooth; those of
vector, matrix and Dirichlet scaling are convex in their parameters, and that of temperature
scaling is convex in $1/T$ (unimodal in $\log T$), so L-BFGS reaches the optimum in tens of steps
on well-posed problems, and Newton's method in a few.

Clip. Inputs are probabilities, not logits: the log of a probability is a logit up to a per-row
constant, which the temperature map ignores. Probabilities are clipped at $10^{-12}$ before the
log (``LOG_CLIP``), so a zero probability becomes the logit $\log 10^{-12} \approx -27.6$ rather
than $-\infty$; the same clip is used in fit and apply. Kull et al.'s code clips at the
smallest normal float instead, which makes the log range depend on the dtype; $10^{-12}$ is
represented in float32 and float64 alike, so both precisions fit the same features.

Conditioning. Matrix scaling and Dirichlet calibration are fitted on the standardised
log-probabilities $u = (z - m)/s$ (weighted column means $m$ and standard deviations $s$,
$s = 1$ for a column with spread under 0.01), in the parameters $W' = W \operatorname{diag}(s)$,
$b' = b + W m$: the same maps and objective (the ODIR penalty is taken of $W$ and $b$), but a
far better conditioned problem when many probabilities sit at the clip, where the raw
log-probabilities are large, nearly constant columns that L-BFGS confuses with the intercept.

Precision. On Gaussian naive Bayes's digits probabilities (80 % below $10^{-15}$, many exactly
0) the ODIR objective is a long, flat valley: the penalty's $\lambda/(C(C-1)) \approx 10^{-4}$
is the only curvature some directions have, and points within $10^{-4}$ of the minimum differ by
several hundredths in held-out NLL (up to 0.1 measured), so no fixed-step fit pins the
minimiser's predictions more closely in either precision. Preconditioned, both precisions end
the default 500 steps within $10^{-4}$ of the minimum (found by Newton's method; fitted on the
raw log-probabilities they ended up to $1.2 \times 10^{-3}$ above it) and their held-out NLLs
agree within 0.02 (tested; on the raw log-probabilities the gap reached 0.07). Without regularisation the objective has no minimiser on such data (it decreases
along a ray, $\max|W_{jk}| \to \infty$): float32 stops where its round-off ends the line
search ($\max|W_{jk}| \approx 520$ on one split), float64 keeps going (1900 after 500 steps,
7300 after 2000), and the two fits agree only in what they predict (held-out NLL 0.8026 and
0.8034 with one clip, $10^{-12}$), not in their parameters; use ODIR for a well-posed fit. Held-out NLLs
of such fits also depend on the metric: `jcalib.metrics.nll` clips at the dtype's machine
epsilon by default (a probability 0 costs 15.9 in float32, 36.0 in float64), so compare
precisions with one ``eps``.

Matrix scaling versus Dirichlet calibration. Kull et al. (2019) show that Dirichlet
calibration is matrix scaling applied to log-probabilities instead of logits. Given only
probabilities, the two families coincide here; they differ in their regularisation defaults:
`MatrixScaling` is unregularised by default (Guo et al. 2017) and `DirichletCalibration`
uses ODIR (off-diagonal and intercept regularisation, Kull et al. 2019):

$$
\mathcal{L}(W, b) = -\frac{1}{\sum_i w_i}\sum_i w_i \log q_{i, y_i}
  + \frac{\lambda}{C(C-1)} \sum_{j \ne k} W_{jk}^2 + \frac{\mu}{C} \sum_j b_j^2 ,
$$

with $q_i = \operatorname{softmax}(W z_i + b)$ and sample weights $w_i$ (all 1 by default). The
diagonal of $W$ is not penalised, so strong regularisation shrinks the map towards vector
scaling without intercepts rather than towards zero. Kull et al. choose $\lambda, \mu$ by
cross-validation on a log grid; the defaults here are mild and fixed.

References:
    Guo, Pleiss, Sun, Weinberger (2017), "On calibration of modern neural networks", ICML,
    §4.2 (temperature, vector and matrix scaling).
    Kull, Perello-Nieto, Kängsepp, Silva Filho, Song, Flach (2019), "Beyond temperature
    scaling: Obtaining well-calibrated multi-class probabilities with Dirichlet calibration",
    NeurIPS; arXiv:1910.12656 (the Dirichlet calibration map and ODIR regularisation).
    Zhao, Kim, Sahoo, Ma, Ermon (2021), "Calibrating Predictions to Decisions", NeurIPS, §5
    (temperature scaling and Dirichlet calibration as the baselines of decision calibration).
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .._validation import STEPS, Real, SimplexProbs, as_int, check_fields, declare, multiclass_inputs
from ..core.optim import lbfgs_minimise as _minimise
from ..core.optim import newton_minimise
from .base import AbstractFittedRecalibrator, AbstractRecalibrator

__all__ = [
    "LOG_CLIP",
    "TemperatureScaling",
    "FittedTemperatureScaling",
    "VectorScaling",
    "FittedVectorScaling",
    "MatrixScaling",
    "FittedMatrixScaling",
    "DirichletCalibration",
    "FittedDirichletCalibration",
]

LOG_CLIP = 1e-12
"""Probabilities are clipped to ``[LOG_CLIP, 1]`` before the log that turns them into logits."""


# --------------------------------------------------------------------------------------------
# Shared pieces


def _log_probs(probs: Float[Array, "n C"]) -> Float[Array, "n C"]:
    """Logits used by every map: log of the probabilities clipped to [LOG_CLIP, 1]."""
    return jnp.log(jnp.clip(probs, LOG_CLIP, 1.0))


# The fitted maps, each one compiled program (called eagerly, their operations would compile one
# small program each on a first call: about 0.3 s)
@jax.jit
def _temperature_map(probs, log_temperature):
    return jax.nn.softmax(_log_probs(probs) * jnp.exp(-log_temperature), axis=1)


@jax.jit
def _vector_map(probs, scale, bias):
    return jax.nn.softmax(_log_probs(probs) * scale[None, :] + bias[None, :], axis=1)


@jax.jit
def _affine_map(probs, weights, bias):
    return jax.nn.softmax(_log_probs(probs) @ weights.T + bias[None, :], axis=1)


def _standardise(z: Float[Array, "n C"], weights: Float[Array, " n"]):
    """Weighted column means ``m`` and scales ``s`` of the log-probabilities, so a fit can run on
    ``u = (z - m) / s`` (module docstring, "Conditioning"). A column whose standard deviation is
    under 0.01 keeps the scale 1: dividing by a spread that is mostly round-off would magnify it
    (and the penalty's curvature with it)."""
    total = jnp.sum(weights)
    m = jnp.sum(weights[:, None] * z, axis=0) / total
    sd = jnp.sqrt(jnp.sum(weights[:, None] * (z - m[None, :]) ** 2, axis=0) / total)
    return m, jnp.where(sd >= 0.01, sd, jnp.ones_like(sd))


def _weighted_nll(logits: Float[Array, "n C"], labels: Int[Array, " n"], weights: Float[Array, " n"]):
    """Sample-weighted mean negative log-likelihood of softmax(logits) (normalised by Σ w)."""
    log_q = jax.nn.log_softmax(logits, axis=1)
    log_q_y = jnp.take_along_axis(log_q, labels[:, None], axis=1)[:, 0]
    return -jnp.sum(weights * log_q_y) / jnp.sum(weights)




def _check_apply_probs(probs, n_classes: int):
    """Checked probabilities with the fit's number of columns."""
    if probs.shape[1] != n_classes:
        raise ValueError(f"probs must have {n_classes} columns (the classes of the fit), got {probs.shape[1]}")
    return probs


def _as_reg(value):
    """Converter of the regularisation fields: a Python or NumPy real number becomes a 0-d
    float64 NumPy array (an array leaf, so ``eqx.filter_jit`` traces it and ``jax.vmap`` maps
    over it); JAX arrays, tracers and anything else pass unchanged, for ``__check_init__``."""
    if isinstance(value, (bool, np.bool_)):
        return value
    if isinstance(value, (int, float, np.integer, np.floating)):
        return np.asarray(value, np.float64)
    return value


class _Affine(NamedTuple):
    """Optimisation variables of vector scaling (``scale``) and matrix scaling (``weights``)."""

    weights: Array
    bias: Array


def _odir_penalty(weights, bias, reg_lambda, reg_mu):
    """ODIR regulariser of Kull et al. (2019): λ/(C(C−1)) Σ_{j≠k} W_jk² + μ/C Σ_j b_j²."""
    c = bias.shape[0]
    off_diagonal = weights * (1.0 - jnp.eye(c, dtype=weights.dtype))
    return reg_lambda * jnp.sum(off_diagonal**2) / (c * (c - 1)) + reg_mu * jnp.sum(bias**2) / c


# --------------------------------------------------------------------------------------------
# Temperature scaling


@jax.jit(static_argnames=("n_steps",))
def _temperature_fit(probs, labels, weights, n_steps):
    z = _log_probs(probs)

    def loss(log_temperature):
        return _weighted_nll(z * jnp.exp(-log_temperature), labels, weights)

    return newton_minimise(loss, jnp.zeros((), probs.dtype), n_steps)


class FittedTemperatureScaling(AbstractFittedRecalibrator):
    r"""A fitted temperature: ``fitted(probs)`` is $\operatorname{softmax}(\log\operatorname{clip}(\hat p)/\hat T)$.

    Attributes:
        log_temperature: $\log \hat T$ (a scalar array).
    """

    log_temperature: Float[Array, ""]

    @property
    def temperature(self) -> Float[Array, ""]:
        r"""The fitted temperature $\hat T = \exp(\log \hat T)$."""
        return jnp.exp(self.log_temperature)

    @declare(probs=SimplexProbs())
    def __call__(self, probs: Float[Array, "n C"]) -> Float[Array, "n C"]:
        return _temperature_map(probs, self.log_temperature)


class TemperatureScaling(AbstractRecalibrator):
    r"""Temperature scaling (Guo et al. 2017): one temperature $T$, fitted by the weighted mean
    NLL of $\operatorname{softmax}(z/T)$.

    $$\hat T = \arg\min_{T>0} -\frac{1}{\sum_i w_i}\sum_i w_i \log \operatorname{softmax}(z_i/T)_{y_i},
    \qquad z_i = \log\operatorname{clip}(\hat p_i, 10^{-12}, 1).$$

    Optimised over $\log T$ (so $T > 0$ without constraints) by at most ``n_steps`` steps of
    Newton's method from $T = 1$. Temperature scaling keeps the arg-max, so accuracy is
    unchanged. The fit is deterministic (no key); it jits and vmaps, e.g. over bootstrap
    ``sample_weight``.

    Attributes:
        n_steps: number of Newton iterations, at most (static: a fixed scan length;
            iterations after convergence idle). Temperature scaling typically converges in
            under 10.

    Examples:
        >>> import jax.numpy as jnp
        >>> p = jnp.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
        >>> y = jnp.array([0, 1, 1, 0])
        >>> fitted = TemperatureScaling().fit(p, y)
        >>> fitted(p).shape
        (4, 2)
        >>> bool(fitted.temperature > 1)  # over-confident scores: T > 1 softens them
        True

    References:
        Guo, Pleiss, Sun, Weinberger (2017), "On calibration of modern neural networks", ICML, §4.2.
    """

    n_steps: int = eqx.field(static=True, default=50, converter=as_int)

    def __check_init__(self):
        check_fields(self, n_steps=STEPS)

    @declare(**multiclass_inputs())
    def fit(
        self, probs: Float[Array, "n C"], labels: Int[Array, " n"], *, sample_weight: Float[Array, " n"] | None = None
    ) -> FittedTemperatureScaling:
        """Fit on held-out probabilities ``(n, C)`` and integer labels ``(n,)``, with optional
        non-negative ``sample_weight`` ``(n,)`` (may be traced: vmap over bootstrap weights)."""
        weights = sample_weight
        return FittedTemperatureScaling(_temperature_fit(probs, labels, weights, self.n_steps))


# --------------------------------------------------------------------------------------------
# Vector scaling


@jax.jit(static_argnames=("n_steps",))
def _vector_fit(probs, labels, weights, n_steps):
    z = _log_probs(probs)
    c = probs.shape[1]

    def loss(params):
        return _weighted_nll(z * params.weights[None, :] + params.bias[None, :], labels, weights)

    init = _Affine(jnp.ones((c,), probs.dtype), jnp.zeros((c,), probs.dtype))
    return _minimise(loss, init, n_steps)


class FittedVectorScaling(AbstractFittedRecalibrator):
    r"""Fitted vector scaling: ``fitted(probs)`` is $\operatorname{softmax}(a \odot \log\operatorname{clip}(\hat p) + b)$.

    Attributes:
        scale: per-class scale $a$, shape ``(C,)``.
        bias: per-class bias $b$, shape ``(C,)``.
    """

    scale: Float[Array, " C"]
    bias: Float[Array, " C"]

    @declare(probs=SimplexProbs())
    def __call__(self, probs: Float[Array, "n C"]) -> Float[Array, "n C"]:
        probs = _check_apply_probs(probs, self.bias.shape[-1])
        return _vector_map(probs, self.scale, self.bias)


class VectorScaling(AbstractRecalibrator):
    r"""Vector scaling (Guo et al. 2017): $q = \operatorname{softmax}(a \odot z + b)$ fitted by
    weighted mean NLL.

    Unregularised, as in Guo et al. (2017, §4.2); at most ``n_steps`` L-BFGS steps from $a = 1, b = 0$.
    The objective is convex in $(a, b)$; its minimiser is unique up to adding a constant to every
    $b_j$ (which does not change $q$). Deterministic (no key).

    Attributes:
        n_steps: number of L-BFGS steps, each one evaluation of the loss and its gradient
            (static; idle after convergence).

    Examples:
        >>> import jax.numpy as jnp
        >>> p = jnp.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
        >>> VectorScaling().fit(p, jnp.array([0, 1, 1, 0])).scale.shape
        (2,)

    References:
        Guo et al. (2017), §4.2; Kull et al. (2019) (vector scaling as diagonal Dirichlet).
    """

    n_steps: int = eqx.field(static=True, default=200, converter=as_int)

    def __check_init__(self):
        check_fields(self, n_steps=STEPS)

    @declare(**multiclass_inputs())
    def fit(
        self, probs: Float[Array, "n C"], labels: Int[Array, " n"], *, sample_weight: Float[Array, " n"] | None = None
    ) -> FittedVectorScaling:
        """Fit on held-out probabilities ``(n, C)`` and integer labels ``(n,)`` (optional
        ``sample_weight`` ``(n,)``)."""
        weights = sample_weight
        params = _vector_fit(probs, labels, weights, self.n_steps)
        return FittedVectorScaling(params.weights, params.bias)


# --------------------------------------------------------------------------------------------
# Matrix scaling and Dirichlet calibration (one core)


@jax.jit(static_argnames=("n_steps",))
def _matrix_fit(probs, labels, weights, reg_lambda, reg_mu, n_steps):
    z = _log_probs(probs)
    m, s = _standardise(z, weights)
    u = (z - m[None, :]) / s[None, :]
    reg_lambda = reg_lambda.astype(probs.dtype)
    reg_mu = reg_mu.astype(probs.dtype)

    # W z + b = W' u + b' with W' = W diag(s), b' = b + W m: the same map, better conditioned;
    # the ODIR penalty is taken of (W, b) itself
    def original(params):
        w = params.weights / s[None, :]
        return _Affine(w, params.bias - w @ m)

    def loss(params):
        logits = u @ params.weights.T + params.bias[None, :]
        orig = original(params)
        return _weighted_nll(logits, labels, weights) + _odir_penalty(orig.weights, orig.bias, reg_lambda, reg_mu)

    return original(_minimise(loss, _Affine(jnp.diag(s), m), n_steps))  # from W = I, b = 0


def _fit_affine(probs, labels, weights, reg_lambda, reg_mu, n_steps) -> _Affine:
    """The affine fit of checked inputs (probs, int32 labels, weights filled with ones)."""
    # 0-d arrays (reg fields are NumPy float64 or JAX arrays, possibly traced under vmap)
    lam = jnp.asarray(reg_lambda).astype(probs.dtype)
    mu = jnp.asarray(reg_mu).astype(probs.dtype)
    return _matrix_fit(probs, labels, weights, lam, mu, n_steps)


def _apply_affine(weights, bias, probs):
    return _affine_map(_check_apply_probs(probs, bias.shape[-1]), weights, bias)


def _check_matrix_settings(module):
    check_fields(module, reg_lambda=Real(0), reg_mu=Real(0), n_steps=STEPS)


class FittedMatrixScaling(AbstractFittedRecalibrator):
    r"""Fitted matrix scaling: ``fitted(probs)`` is $\operatorname{softmax}(W \log\operatorname{clip}(\hat p) + b)$.

    Attributes:
        weights: $W$, shape ``(C, C)``.
        bias: $b$, shape ``(C,)``.
    """

    weights: Float[Array, "C C"]
    bias: Float[Array, " C"]

    @declare(probs=SimplexProbs())
    def __call__(self, probs: Float[Array, "n C"]) -> Float[Array, "n C"]:
        return _apply_affine(self.weights, self.bias, probs)


class MatrixScaling(AbstractRecalibrator):
    r"""Matrix scaling (Guo et al. 2017): $q = \operatorname{softmax}(W z + b)$ fitted by weighted
    mean NLL, plus the ODIR penalty when ``reg_lambda`` or ``reg_mu`` is positive.

    With the default ``reg_lambda = reg_mu = 0`` this is the unregularised matrix scaling of
    Guo et al. (2017, §4.2), which overfits when C is large relative to n (it has C² + C
    parameters); with positive values it is Kull et al.'s MS-ODIR (the objective in the module
    docstring). ``n_steps`` L-BFGS steps from $W = I, b = 0$, on standardised log-probabilities
    (module docstring, "Conditioning"); on separable data the unregularised optimum is at
    infinity and the fixed step count (or, in float32, the end of the line search's precision)
    is what stops it. Deterministic (no key).

    Attributes:
        reg_lambda: λ ≥ 0, off-diagonal penalty (normalised by C(C−1)); an array leaf, so it may
            be traced (vmap over a grid).
        reg_mu: μ ≥ 0, intercept penalty (normalised by C); an array leaf.
        n_steps: number of L-BFGS steps, each one evaluation of the loss and its gradient
            (static; idle after convergence). The default 500
            converges C = 100, n = 10⁴ in float32; C = 10 needs under 100 on well-conditioned
            data (see "Precision" in the module docstring for data where most probabilities
            are 0).

    References:
        Guo et al. (2017), §4.2; Kull et al. (2019) (ODIR).
    """

    reg_lambda: Float[Array, ""] = eqx.field(default=0.0, converter=_as_reg)
    reg_mu: Float[Array, ""] = eqx.field(default=0.0, converter=_as_reg)
    n_steps: int = eqx.field(static=True, default=500, converter=as_int)

    def __check_init__(self):
        _check_matrix_settings(self)

    @declare(**multiclass_inputs())
    def fit(
        self, probs: Float[Array, "n C"], labels: Int[Array, " n"], *, sample_weight: Float[Array, " n"] | None = None
    ) -> FittedMatrixScaling:
        """Fit on held-out probabilities ``(n, C)``, C ≥ 2, and integer labels ``(n,)``
        (optional ``sample_weight`` ``(n,)``)."""
        params = _fit_affine(probs, labels, sample_weight, self.reg_lambda, self.reg_mu, self.n_steps)
        return FittedMatrixScaling(params.weights, params.bias)


class FittedDirichletCalibration(AbstractFittedRecalibrator):
    r"""Fitted Dirichlet calibration: ``fitted(probs)`` is $\operatorname{softmax}(W \log\operatorname{clip}(\hat p) + b)$.

    Attributes:
        weights: $W$, shape ``(C, C)``.
        bias: $b$, shape ``(C,)``.
    """

    weights: Float[Array, "C C"]
    bias: Float[Array, " C"]

    @declare(probs=SimplexProbs())
    def __call__(self, probs: Float[Array, "n C"]) -> Float[Array, "n C"]:
        return _apply_affine(self.weights, self.bias, probs)


class DirichletCalibration(AbstractRecalibrator):
    r"""Dirichlet calibration with ODIR regularisation (Kull et al. 2019).

    The Dirichlet calibration map is $q = \operatorname{softmax}(W \log \hat p + b)$ (Kull et al.
    2019: the posterior of class-conditional Dirichlet densities is a linear model on
    log-probabilities), fitted by minimising

    $$-\frac{1}{\sum_i w_i}\sum_i w_i \log q_{i, y_i} + \frac{\lambda}{C(C-1)}\sum_{j\ne k}W_{jk}^2
      + \frac{\mu}{C}\sum_j b_j^2$$

    (ODIR). The model is fitted in its linear (not its Dirichlet $\alpha$) parametrisation,
    as in Kull et al.'s implementation, by ``n_steps`` L-BFGS steps from the identity map. It is
    the same optimisation as `MatrixScaling` with positive default λ, μ; the paper tunes both by
    cross-validation on a log grid, which jcalib leaves to the caller: λ and μ are array leaves,
    so ``jax.vmap(lambda lam: DirichletCalibration(reg_lambda=lam).fit(p, y))(lambdas)`` fits a
    whole grid at once. Deterministic (no key).

    Attributes:
        reg_lambda: λ ≥ 0, off-diagonal penalty; an array leaf (may be traced).
        reg_mu: μ ≥ 0, intercept penalty; an array leaf (may be traced).
        n_steps: number of L-BFGS steps (static; see `MatrixScaling`).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> p = jax.nn.softmax(jax.random.normal(jax.random.key(0), (60, 3)) * 3, axis=1)
        >>> y = jax.random.categorical(jax.random.key(1), jnp.log(p))
        >>> fitted = DirichletCalibration(reg_lambda=1e-2, reg_mu=1e-2).fit(p, y)
        >>> fitted(p).shape
        (60, 3)
        >>> grid = jax.vmap(lambda lam: DirichletCalibration(reg_lambda=lam).fit(p, y))(jnp.array([1e-3, 1e-2, 1e-1]))
        >>> grid.weights.shape
        (3, 3, 3)

    References:
        Kull, Perello-Nieto, Kängsepp, Silva Filho, Song, Flach (2019), NeurIPS.
    """

    reg_lambda: Float[Array, ""] = eqx.field(default=1e-2, converter=_as_reg)
    reg_mu: Float[Array, ""] = eqx.field(default=1e-2, converter=_as_reg)
    n_steps: int = eqx.field(static=True, default=500, converter=as_int)

    def __check_init__(self):
        _check_matrix_settings(self)

    @declare(**multiclass_inputs())
    def fit(
        self, probs: Float[Array, "n C"], labels: Int[Array, " n"], *, sample_weight: Float[Array, " n"] | None = None
    ) -> FittedDirichletCalibration:
        """Fit on held-out probabilities ``(n, C)``, C ≥ 2, and integer labels ``(n,)``
        (optional ``sample_weight`` ``(n,)``)."""
        params = _fit_affine(probs, labels, sample_weight, self.reg_lambda, self.reg_mu, self.n_steps)
        return FittedDirichletCalibration(params.weights, params.bias)
