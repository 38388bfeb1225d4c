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
log-likelihood plus a regulariser, with L-BFGS (``optax.lbfgs`` with its zoom line search) run
for a **fixed** number of steps inside ``lax.scan``, starting from the identity map (T = 1,
a = 1, W = I, b = 0). No while-loop waits on a tolerance, so the fits jit, vmap over datasets
or hyperparameters, and run in lock-step on a batch; steps after convergence idle (a
``lax.cond`` skips their work outside vmap), and the best iterate is returned, so the objective
never ends above its value at the identity map. All four objectives are smooth; those of
vector, matrix and Dirichlet scaling are convex in their parameters, and that of temperature
scaling is convex in $1/T$ (unimodal in $\log T$), so L-BFGS reaches the optimum in tens of steps
on well-posed problems.

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
search ($\max|W_{jk}| \approx 480$ on one split), float64 keeps going (1750 after 500 steps,
6300 after 2000), and the two fits agree only in what they predict (held-out NLL 0.8046 and
0.8035 with one clip), not in their parameters; use ODIR for a well-posed fit. Held-out NLLs
of such fits also depend on the metric: `jcalib.metrics.nll` clips at the dtype's machine
epsilon by default (a probability 0 costs 15.9 in float32, 36.0 in float64), so compare
precisions with one ``eps``.

Matrix scaling versus Dirichlet calibration. Kull et al. (2019) show that Dirichlet
calibration is matrix scaling applied to log-probabilities instead of logits. Given only
probabilities, the two families coincide here; they differ in their regularisation defaults:
`MatrixScaling` is unregularised by default (Guo et al. 2017) and `DirichletCalibrator`
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

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .._validation import (
    check_key,
    check_multiclass_inputs,
    as_float_array,
    check_positive_int,
    check_simplex_probs,
)
from ..core.optim import lbfgs_minimise as _minimise
from .base import Recalibrator

__all__ = [
    "LOG_CLIP",
    "TemperatureParams",
    "VectorScalingParams",
    "MatrixScalingParams",
    "DirichletParams",
    "temperature_scaling_fit",
    "temperature_scaling_apply",
    "vector_scaling_fit",
    "vector_scaling_apply",
    "matrix_scaling_fit",
    "matrix_scaling_apply",
    "dirichlet_fit",
    "dirichlet_apply",
    "TemperatureScaling",
    "VectorScaling",
    "MatrixScaling",
    "DirichletCalibrator",
]

LOG_CLIP = 1e-12
"""Probabilities are clipped to ``[LOG_CLIP, 1]`` before the log that turns them into logits."""


class TemperatureParams(NamedTuple):
    """Temperature scaling: ``log_temperature`` is $\\log T$ (a scalar)."""

    log_temperature: Float[Array, ""]


class VectorScalingParams(NamedTuple):
    """Vector scaling: per-class ``scale`` $a$ and ``bias`` $b$."""

    scale: Float[Array, " C"]
    bias: Float[Array, " C"]


class MatrixScalingParams(NamedTuple):
    """Matrix scaling and Dirichlet calibration: ``weights`` $W$ (C, C) and ``bias`` $b$ (C,)."""

    weights: Float[Array, "C C"]
    bias: Float[Array, " C"]


DirichletParams = MatrixScalingParams
"""Dirichlet calibration has the parameters of matrix scaling (Kull et al. 2019)."""


# --------------------------------------------------------------------------------------------
# Shared pieces


def _log_probs(probs: Float[Array, "n C"]) -> Float[Array, "n C"]:
    """Logits used by every map: log of the probabilities clipped to [LOG_CLIP, 1]."""
    return jnp.log(jnp.clip(probs, LOG_CLIP, 1.0))


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


_prepare = check_multiclass_inputs  # validated probs, int32 labels, weights (ones by default)


def _check_apply_probs(probs, n_classes: int):
    probs = check_simplex_probs(probs)
    if probs.shape[1] != n_classes:
        raise ValueError(f"parameters are for {n_classes} classes, got probs with {probs.shape[1]}")
    return probs


def _check_reg(value, name):
    """A non-negative regularisation strength (scalar; may be traced under vmap/jit)."""
    arr = as_float_array(value, name)
    if arr.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got shape {tuple(arr.shape)}")
    if not isinstance(arr, jax.core.Tracer) and not bool(jnp.isfinite(arr) & (arr >= 0)):
        raise ValueError(f"{name} must be non-negative and finite, got {float(arr)!r}")
    return arr


def _odir_penalty(params: MatrixScalingParams, reg_lambda, reg_mu):
    """ODIR regulariser of Kull et al. (2019): λ/(C(C−1)) Σ_{j≠k} W_jk² + μ/C Σ_j b_j²."""
    c = params.bias.shape[0]
    off_diagonal = params.weights * (1.0 - jnp.eye(c, dtype=params.weights.dtype))
    return reg_lambda * jnp.sum(off_diagonal**2) / (c * (c - 1)) + reg_mu * jnp.sum(params.bias**2) / c


# --------------------------------------------------------------------------------------------
# Temperature scaling


@jax.jit(static_argnames=("n_steps",))
def _temperature_fit(probs, labels, weights, n_steps):
    z = _log_probs(probs)

    def loss(params):
        return _weighted_nll(z * jnp.exp(-params.log_temperature), labels, weights)

    return _minimise(loss, TemperatureParams(jnp.zeros((), probs.dtype)), n_steps)


def temperature_scaling_fit(
    key,
    probs: Float[Array, "n C"],
    labels: Int[Array, " n"],
    *,
    n_steps: int = 50,
    sample_weight: Float[Array, " n"] | None = None,
) -> TemperatureParams:
    r"""Fit a temperature by minimising the weighted mean NLL of $\operatorname{softmax}(z/T)$.

    $$\hat T = \arg\min_{T>0} -\frac{1}{\sum_i w_i}\sum_i w_i \log \operatorname{softmax}(z_i/T)_{y_i},
    \qquad z_i = \log\operatorname{clip}(\hat p_i, 10^{-12}, 1).$$

    Optimised over $\log T$ (so $T > 0$ without constraints) by ``n_steps`` L-BFGS steps from
    $T = 1$. Temperature scaling keeps the arg-max, so accuracy is unchanged.

    Args:
        key: unused (the fit is deterministic): a PRNG key or ``None``, for the common recalibrator signature.
        probs: held-out predicted probabilities, rows on the simplex, shape (n, C).
        labels: integer labels in [0, C), shape (n,).
        n_steps: number of L-BFGS iterations (a fixed scan length; iterations after
            convergence idle). Temperature scaling typically converges in under 10.
        sample_weight: optional non-negative weights, shape (n,).

    Returns:
        `TemperatureParams` holding $\log \hat T$.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> p = jnp.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
        >>> y = jnp.array([0, 1, 1, 0])
        >>> params = temperature_scaling_fit(jax.random.key(0), p, y)
        >>> temperature_scaling_apply(params, p).shape
        (4, 2)

    References:
        Guo, Pleiss, Sun, Weinberger (2017), "On calibration of modern neural networks", §4.2.
    """
    check_key(key, optional=True)  # deterministic: None or a key
    del key  # deterministic fit
    probs, labels, weights = _prepare(probs, labels, sample_weight)
    return _temperature_fit(probs, labels, weights, check_positive_int(n_steps, "n_steps"))


def temperature_scaling_apply(params: TemperatureParams, probs: Float[Array, "n C"]) -> Float[Array, "n C"]:
    r"""Recalibrated probabilities $\operatorname{softmax}(\log\operatorname{clip}(\hat p)/T)$."""
    probs = check_simplex_probs(probs)
    return jax.nn.softmax(_log_probs(probs) * jnp.exp(-params.log_temperature), axis=1)


# --------------------------------------------------------------------------------------------
# Vector scaling


@jax.jit(static_argnames=("n_steps",))
def _vector_fit(probs, labels, weights, n_steps):
    z = _log_probs(probs)
    c = probs.shape[1]

    def loss(params):
        return _weighted_nll(z * params.scale[None, :] + params.bias[None, :], labels, weights)

    init = VectorScalingParams(jnp.ones((c,), probs.dtype), jnp.zeros((c,), probs.dtype))
    return _minimise(loss, init, n_steps)


def vector_scaling_fit(
    key,
    probs: Float[Array, "n C"],
    labels: Int[Array, " n"],
    *,
    n_steps: int = 200,
    sample_weight: Float[Array, " n"] | None = None,
) -> VectorScalingParams:
    r"""Fit vector scaling $q = \operatorname{softmax}(a \odot z + b)$ by weighted mean NLL.

    Unregularised, as in Guo et al. (2017, §4.2); ``n_steps`` L-BFGS steps from $a = 1, b = 0$.
    The objective is convex in $(a, b)$; its minimiser is unique up to adding a constant to every
    $b_j$ (which does not change $q$).

    Args:
        key: unused (deterministic fit): a PRNG key or ``None`` (an int or a float raises).
        probs: held-out probabilities (n, C).
        labels: integer labels (n,).
        n_steps: number of L-BFGS iterations (fixed scan length; idle after convergence).
        sample_weight: optional non-negative weights (n,).

    Returns:
        `VectorScalingParams`.

    References:
        Guo et al. (2017), §4.2; Kull et al. (2019) (vector scaling as diagonal Dirichlet).
    """
    check_key(key, optional=True)  # deterministic: None or a key
    del key
    probs, labels, weights = _prepare(probs, labels, sample_weight)
    return _vector_fit(probs, labels, weights, check_positive_int(n_steps, "n_steps"))


def vector_scaling_apply(params: VectorScalingParams, probs: Float[Array, "n C"]) -> Float[Array, "n C"]:
    r"""Recalibrated probabilities $\operatorname{softmax}(a \odot \log\operatorname{clip}(\hat p) + b)$."""
    probs = _check_apply_probs(probs, params.bias.shape[-1])
    z = _log_probs(probs)
    return jax.nn.softmax(z * params.scale[None, :] + params.bias[None, :], axis=1)


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
        return MatrixScalingParams(w, params.bias - w @ m)

    def loss(params):
        logits = u @ params.weights.T + params.bias[None, :]
        return _weighted_nll(logits, labels, weights) + _odir_penalty(original(params), reg_lambda, reg_mu)

    return original(_minimise(loss, MatrixScalingParams(jnp.diag(s), m), n_steps))  # from W = I, b = 0


def _matrix_apply(params: MatrixScalingParams, probs):
    probs = _check_apply_probs(probs, params.bias.shape[-1])
    z = _log_probs(probs)
    return jax.nn.softmax(z @ params.weights.T + params.bias[None, :], axis=1)


def matrix_scaling_fit(
    key,
    probs: Float[Array, "n C"],
    labels: Int[Array, " n"],
    *,
    reg_lambda: float = 0.0,
    reg_mu: float = 0.0,
    n_steps: int = 500,
    sample_weight: Float[Array, " n"] | None = None,
) -> MatrixScalingParams:
    r"""Fit matrix scaling $q = \operatorname{softmax}(W z + b)$ by weighted mean NLL (+ ODIR).

    With the default ``reg_lambda = reg_mu = 0`` this is the unregularised matrix scaling of
    Guo et al. (2017, §4.2), which overfits when C is large relative to n (it has C² + C
    parameters); with positive values it is Kull et al.'s MS-ODIR (the objective in the module
    docstring). ``n_steps`` L-BFGS steps from $W = I, b = 0$, on standardised log-probabilities
    (module docstring, "Conditioning"); on separable data the unregularised optimum is at
    infinity and the fixed step count (or, in float32, the end of the line search's precision)
    is what stops it.

    Args:
        key: unused (deterministic fit): a PRNG key or ``None`` (an int or a float raises).
        probs: held-out probabilities (n, C), C ≥ 2.
        labels: integer labels (n,).
        reg_lambda: λ ≥ 0, off-diagonal penalty (normalised by C(C−1)); may be traced (vmap).
        reg_mu: μ ≥ 0, intercept penalty (normalised by C); may be traced.
        n_steps: number of L-BFGS iterations (fixed scan length; idle after convergence). The
            default 500 converges C = 100, n = 10⁴ in float32; C = 10 needs under 100 on
            well-conditioned data (see "Precision" in the module docstring for data where
            most probabilities are 0).
        sample_weight: optional non-negative weights (n,).

    Returns:
        `MatrixScalingParams`.

    References:
        Guo et al. (2017), §4.2; Kull et al. (2019) (ODIR).
    """
    check_key(key, optional=True)  # deterministic: None or a key
    del key
    probs, labels, weights = _prepare(probs, labels, sample_weight)
    reg_lambda = _check_reg(reg_lambda, "reg_lambda")
    reg_mu = _check_reg(reg_mu, "reg_mu")
    return _matrix_fit(probs, labels, weights, reg_lambda, reg_mu, check_positive_int(n_steps, "n_steps"))


def matrix_scaling_apply(params: MatrixScalingParams, probs: Float[Array, "n C"]) -> Float[Array, "n C"]:
    r"""Recalibrated probabilities $\operatorname{softmax}(W \log\operatorname{clip}(\hat p) + b)$."""
    return _matrix_apply(params, probs)


def dirichlet_fit(
    key,
    probs: Float[Array, "n C"],
    labels: Int[Array, " n"],
    *,
    reg_lambda: float = 1e-2,
    reg_mu: float = 1e-2,
    n_steps: int = 500,
    sample_weight: Float[Array, " n"] | None = None,
) -> DirichletParams:
    r"""Fit Dirichlet calibration with ODIR regularisation (Kull et al. 2019).

    The Dirichlet calibration map is $q = \operatorname{softmax}(W \log \hat p + b)$ (Kull et al.
    2019: the posterior of class-conditional Dirichlet densities is a linear model on
    log-probabilities), fitted by minimising

    $$-\frac{1}{\sum_i w_i}\sum_i w_i \log q_{i, y_i} + \frac{\lambda}{C(C-1)}\sum_{j\ne k}W_{jk}^2
      + \frac{\mu}{C}\sum_j b_j^2$$

    (ODIR). The model is fitted in its linear (not its Dirichlet $\alpha$) parametrisation,
    as in Kull et al.'s implementation, by ``n_steps`` L-BFGS steps from the identity map. It is
    the same optimisation as `matrix_scaling_fit` with positive default λ, μ; the paper
    tunes both by cross-validation on a log grid, which jcalib leaves to the caller (vmap this
    function over ``reg_lambda``/``reg_mu`` to fit a whole grid at once).

    Args:
        key: unused (deterministic fit): a PRNG key or ``None`` (an int or a float raises).
        probs: held-out probabilities (n, C), C ≥ 2.
        labels: integer labels (n,).
        reg_lambda: λ ≥ 0, off-diagonal penalty; may be traced (vmap over a grid).
        reg_mu: μ ≥ 0, intercept penalty; may be traced.
        n_steps: number of L-BFGS iterations (see `matrix_scaling_fit`).
        sample_weight: optional non-negative weights (n,).

    Returns:
        `DirichletParams` (= `MatrixScalingParams`).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> p = jax.nn.softmax(jax.random.normal(jax.random.key(0), (60, 3)) * 3, axis=1)
        >>> y = jax.random.categorical(jax.random.key(1), jnp.log(p))
        >>> params = dirichlet_fit(jax.random.key(2), p, y, reg_lambda=1e-2, reg_mu=1e-2)
        >>> dirichlet_apply(params, p).shape
        (60, 3)

    References:
        Kull, Perello-Nieto, Kängsepp, Silva Filho, Song, Flach (2019), NeurIPS.
    """
    check_key(key, optional=True)  # deterministic: None or a key
    return matrix_scaling_fit(
        key, probs, labels, reg_lambda=reg_lambda, reg_mu=reg_mu, n_steps=n_steps, sample_weight=sample_weight
    )


def dirichlet_apply(params: DirichletParams, probs: Float[Array, "n C"]) -> Float[Array, "n C"]:
    r"""Recalibrated probabilities $\operatorname{softmax}(W \log\operatorname{clip}(\hat p) + b)$."""
    return _matrix_apply(params, probs)


# --------------------------------------------------------------------------------------------
# scikit-learn-style wrappers


class TemperatureScaling(Recalibrator):
    """Temperature scaling (Guo et al. 2017) with ``fit(probs, labels)`` / ``predict_proba(probs)``.

    Args:
        n_steps: L-BFGS steps (see `temperature_scaling_fit`).

    Attributes:
        params_: fitted `TemperatureParams`.
        temperature_: the fitted temperature $\\hat T$ (a float).

    Examples:
        >>> import jax.numpy as jnp
        >>> p = jnp.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
        >>> ts = TemperatureScaling().fit(p, jnp.array([0, 1, 1, 0]))
        >>> ts.predict_proba(p).shape
        (4, 2)
    """

    def __init__(self, n_steps: int = 50):
        self.n_steps = check_positive_int(n_steps, "n_steps")

    @property
    def temperature_(self) -> float:
        if self.params_ is None:
            raise ValueError("TemperatureScaling is not fitted; call fit(probs, labels) first")
        return float(jnp.exp(self.params_.log_temperature))

    def _fit(self, key, probs, labels):
        return temperature_scaling_fit(key, probs, labels, n_steps=self.n_steps)

    def _apply(self, params, probs):
        return temperature_scaling_apply(params, probs)


class VectorScaling(Recalibrator):
    """Vector scaling (Guo et al. 2017) with ``fit`` / ``predict_proba``; see `vector_scaling_fit`."""

    def __init__(self, n_steps: int = 200):
        self.n_steps = check_positive_int(n_steps, "n_steps")

    def _fit(self, key, probs, labels):
        return vector_scaling_fit(key, probs, labels, n_steps=self.n_steps)

    def _apply(self, params, probs):
        return vector_scaling_apply(params, probs)


class MatrixScaling(Recalibrator):
    """Matrix scaling (Guo et al. 2017; ODIR of Kull et al. 2019 when λ, μ > 0) with ``fit`` /
    ``predict_proba``; see `matrix_scaling_fit`."""

    def __init__(self, reg_lambda: float = 0.0, reg_mu: float = 0.0, n_steps: int = 500):
        self.reg_lambda = float(_check_reg(reg_lambda, "reg_lambda"))
        self.reg_mu = float(_check_reg(reg_mu, "reg_mu"))
        self.n_steps = check_positive_int(n_steps, "n_steps")

    def _fit(self, key, probs, labels):
        return matrix_scaling_fit(
            key, probs, labels, reg_lambda=self.reg_lambda, reg_mu=self.reg_mu, n_steps=self.n_steps
        )

    def _apply(self, params, probs):
        return matrix_scaling_apply(params, probs)


class DirichletCalibrator(Recalibrator):
    """Dirichlet calibration with ODIR (Kull et al. 2019) with ``fit`` / ``predict_proba``.

    Args:
        reg_lambda: off-diagonal penalty λ ≥ 0.
        reg_mu: intercept penalty μ ≥ 0.
        n_steps: L-BFGS steps (see `dirichlet_fit`).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> p = jax.nn.softmax(jax.random.normal(jax.random.key(0), (60, 3)) * 3, axis=1)
        >>> y = jax.random.categorical(jax.random.key(1), jnp.log(p))
        >>> cal = DirichletCalibrator(reg_lambda=1e-2, reg_mu=1e-2).fit(p, y)
        >>> cal.predict_proba(p).shape
        (60, 3)
    """

    def __init__(self, reg_lambda: float = 1e-2, reg_mu: float = 1e-2, n_steps: int = 500):
        self.reg_lambda = float(_check_reg(reg_lambda, "reg_lambda"))
        self.reg_mu = float(_check_reg(reg_mu, "reg_mu"))
        self.n_steps = check_positive_int(n_steps, "n_steps")

    def _fit(self, key, probs, labels):
        return dirichlet_fit(key, probs, labels, reg_lambda=self.reg_lambda, reg_mu=self.reg_mu, n_steps=self.n_steps)

    def _apply(self, params, probs):
        return dirichlet_apply(params, probs)
