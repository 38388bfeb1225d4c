r"""Multi-class calibration errors (confidence, top-label and class-wise ECE) and the shared
multi-class helpers (one-hot encoding, accuracy, NLL, L2 error).

Each ECE reduces a multi-class prediction $v \in \Delta_C$ to binary problems and calls
`jcalib.metrics.binned_ece` (so binning lives in one place: uniform bins follow
`jcalib.metrics.bin_index`'s exact edge rule). In the weighted-calibration
language of Gopalan et al. (2024, §2), all three estimate $\sup_{w \in W} |E\langle y - v,
w(v)\rangle|$ for a family $W$ that sees only part of $v$; they differ in what the witness may
condition on:

| metric | condition (Gopalan et al. 2024, §2) | witness $w(v)$ | binned estimate |
| --- | --- | --- | --- |
| `confidence_ece` | $E[y_{\ell_v} \mid v_{\ell_v}] = v_{\ell_v}$ | $\phi(v_{\ell_v})\,e_{\ell_v}$ | bin the top probability over all samples |
| `top_label_ece` | $E[y_{\ell_v} \mid v_{\ell_v}, \ell_v] = v_{\ell_v}$ | $\phi(v_{\ell_v}, \ell_v)\,e_{\ell_v}$ | bin the top probability separately for each predicted class |
| `classwise_ece` | $E[y_\ell \mid v_\ell] = v_\ell\ \forall \ell$ | $\phi(v_\ell)\,e_\ell$ | bin $v_\ell$ for each class $\ell$, average over $\ell$ |

with $\ell_v = \arg\max_\ell v_\ell$ (ties go to the smallest index, as ``jnp.argmax``). Top-label
calibration implies confidence calibration but not conversely: errors of opposite sign in two
predicted classes cancel in the confidence ECE and not in the top-label ECE.

All values are **normalised** (weighted averages over samples, in $[0, 1]$), with optional
sample weights, pure ``jax.numpy``, jit- and vmap-able (``n_bins``, ``strategy`` and ``order``
are static). Inputs are validated at the Python boundary; inside a user's ``jit`` only shapes are
checked.

References:
    Gopalan, Hu, Rothblum (2024), *On Computationally Efficient Multi-Class Calibration*, §2
    (class-wise, confidence and top-label calibration as weighted calibration).
    Guo, Pleiss, Sun, Weinberger (2017), *On calibration of modern neural networks*, §2
    (confidence ECE).
    Gupta, Ramdas (2022), *Top-label calibration and multiclass-to-binary reductions*, ICLR,
    (top-label calibration and its binned ECE).
    Kull, Perello-Nieto, Kängsepp, Silva Filho, Song, Flach (2019), *Beyond temperature
    scaling*, NeurIPS (class-wise calibration and classwise-ECE).
    Zhao, Kim, Sahoo, Ma, Ermon (2021), *Calibrating Predictions to Decisions*, §4.1 and §5
    (L2 error and accuracy reported alongside decision calibration).

Input checks: concrete inputs at the Python boundary (``ValueError`` naming the argument);
under ``jit``/``vmap``/``grad``, rows of predictions non-negative and summing to 1 (no NaN), labels in [0, C) and non-negative finite weights are checked in the graph
with ``eqx.error_if`` unless ``jcalib.config.checks(False)`` was in force at trace time.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Float, Int

from .._validation import BINS, ClassLabels, Integer, Optional, Real, declare, multiclass_inputs
from .binary import ORDER, STRATEGY, binned_ece_kernel, warn_if_float32_changes_log_clip, warn_if_float32_moves_bins

__all__ = [
    "one_hot",
    "accuracy",
    "nll",
    "l2_error",
    "confidence_ece",
    "top_label_ece",
    "classwise_ece",
]

# Classes processed at once by lax.map in the per-class ECEs: bounds memory at O(_CLASS_BATCH · n)
# for C in the thousands while vectorising small C completely.
_CLASS_BATCH = 64


MAX_CLASSES = 2**20  # one-hot tables of n_classes columns


def _warn_top_bins(raw, checked):
    if checked["strategy"] == "uniform":
        warn_if_float32_moves_bins(raw["probs"], checked["n_bins"], top=True)


def _warn_class_bins(raw, checked):
    if checked["strategy"] == "uniform":
        warn_if_float32_moves_bins(raw["probs"], checked["n_bins"], top=False)


def _warn_log_clip(raw, checked):
    if checked["eps"] is None:
        warn_if_float32_changes_log_clip(raw["probs"], checked["labels"], checked["sample_weight"])


_BINNED = dict(**multiclass_inputs(), n_bins=BINS, strategy=STRATEGY, order=ORDER)


# --------------------------------------------------------------------------------------------
# Shared helpers


@declare(n_classes=Integer(1, MAX_CLASSES, bytes_per=4, what="each row"),
         labels=ClassLabels(classes_of="n_classes", length_of=None))
def one_hot(labels: Int[Array, " n"], n_classes: int) -> Float[Array, "n C"]:
    """One-hot encoding of integer labels in the default float dtype (float32, or float64 with x64).

    Args:
        labels: integer labels in ``[0, n_classes)``, shape ``(n,)``.
        n_classes: number of classes $C$ (static).

    Returns:
        Array of shape ``(n, C)`` with a single 1 per row.
    """
    return jax.nn.one_hot(labels, n_classes, dtype=jnp.result_type(float))


@declare(**multiclass_inputs())
def accuracy(
    probs: Float[Array, "n C"],
    labels: Int[Array, " n"],
    *,
    sample_weight: Float[Array, " n"] | None = None,
) -> Float[Array, ""]:
    r"""Top-1 accuracy $\frac1W\sum_i w_i \mathbb 1[\arg\max_\ell v_{i\ell} = y_i]$, **normalised**.

    Ties in the arg-max go to the smallest class index (``jnp.argmax``).
    """
    v, y, w = probs, labels, sample_weight
    correct = (jnp.argmax(v, axis=1).astype(y.dtype) == y).astype(v.dtype)
    return jnp.sum(w * correct) / jnp.sum(w)


@declare(_warn_log_clip, **multiclass_inputs(), eps=Optional(Real(0, 1, open_lo=True, open_hi=True)))
def nll(
    probs: Float[Array, "n C"],
    labels: Int[Array, " n"],
    *,
    sample_weight: Float[Array, " n"] | None = None,
    eps: float | None = None,
) -> Float[Array, ""]:
    r"""Negative log-likelihood $-\frac1W\sum_i w_i \log v_{i, y_i}$, **normalised**.

    The probability of the observed class is clipped below at $\epsilon$ (``eps``, by default the
    machine epsilon of the dtype, as `jcalib.metrics.log_loss` and scikit-learn do), so a
    confidently wrong prediction costs about $-\log \epsilon$ instead of infinity. A float64
    input computed in float32 (``jax_enable_x64`` off) is clipped at float32's epsilon; when that
    changes the value, a ``PrecisionWarning`` says so once per process.
    """
    v, y, w = probs, labels, sample_weight
    e = jnp.finfo(v.dtype).eps if eps is None else eps
    v_y = jnp.take_along_axis(v, y[:, None], axis=1)[:, 0]
    # departs from the unclipped definition: clip so the loss stays finite (see docstring)
    return -jnp.sum(w * jnp.log(jnp.clip(v_y, e, 1.0))) / jnp.sum(w)


@declare(**multiclass_inputs())
def l2_error(
    probs: Float[Array, "n C"],
    labels: Int[Array, " n"],
    *,
    sample_weight: Float[Array, " n"] | None = None,
) -> Float[Array, ""]:
    r"""L2 error $\frac1W\sum_i w_i \lVert v_i - e_{y_i} \rVert_2^2$, **normalised** over samples.

    The squared Euclidean distance to the one-hot label summed over classes (the multi-class
    Brier score of Brier 1950, not divided by $C$), in $[0, 2]$. This is the sharpness measure
    $E\lVert \hat p(X) - Y \rVert_2^2$ that decision recalibration never increases (Zhao et al.
    2021, §4.1, Theorem 2) and that its experiments report (§5).
    """
    v, y, w = probs, labels, sample_weight
    sq = jnp.sum(v**2, axis=1) - 2.0 * jnp.take_along_axis(v, y[:, None], axis=1)[:, 0] + 1.0
    return jnp.sum(w * sq) / jnp.sum(w)


# --------------------------------------------------------------------------------------------
# ECEs


@declare(_warn_top_bins, **_BINNED)
def confidence_ece(
    probs: Float[Array, "n C"],
    labels: Int[Array, " n"],
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    order: float = 1,
    sample_weight: Float[Array, " n"] | None = None,
) -> Float[Array, ""]:
    r"""Confidence ECE (Guo et al. 2017), **normalised**: binned ECE of the top probability.

    With confidence $c_i = \max_\ell v_{i\ell}$ and correctness
    $a_i = \mathbb 1[\arg\max_\ell v_{i\ell} = y_i]$,
    $$\mathrm{ECE}^{\mathrm{conf}} = \mathrm{binned\_ece}(c, a)
      = \Big(\sum_b \frac{W_b}{W} |\bar c_b - \bar a_b|^p\Big)^{1/p},$$
    the estimate of confidence calibration $E[y_{\ell_v} \mid v_{\ell_v}] = v_{\ell_v}$ (Gopalan et al.
    2024, §2): bins pool every predicted class.

    Args:
        probs: predictions on the simplex, shape ``(n, C)``.
        labels: integer labels in ``[0, C)``, shape ``(n,)``.
        n_bins: number of bins (static).
        strategy: ``"uniform"`` or ``"quantile"`` (see `jcalib.metrics.binned_ece`).
        sample_weight: optional non-negative weights, shape ``(n,)``.
        order: exponent $p \ge 1$ (static); 1 gives the usual ECE.

    Returns:
        Scalar in $[0, 1]$, normalised by the total weight.

    Examples:
        >>> import jax.numpy as jnp
        >>> v = jnp.array([[0.8, 0.2], [0.3, 0.7]])
        >>> round(float(confidence_ece(v, jnp.array([0, 0]), n_bins=10)), 4)
        0.45

    References:
        Guo, Pleiss, Sun, Weinberger (2017), §2; Gopalan, Hu, Rothblum (2024), §2.
    """
    v, y, w = probs, labels, sample_weight
    return _confidence_ece(v, y, w, n_bins, strategy, order)


@functools.partial(jax.jit, static_argnames=("n_bins", "strategy", "p"))
def _confidence_ece(v, y, w, n_bins, strategy, p):
    conf = jnp.max(v, axis=1)
    correct = (jnp.argmax(v, axis=1).astype(y.dtype) == y).astype(jnp.int32)
    return binned_ece_kernel(conf, correct, w, n_bins, strategy, p)


@declare(_warn_top_bins, **_BINNED)
def top_label_ece(
    probs: Float[Array, "n C"],
    labels: Int[Array, " n"],
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    order: float = 1,
    sample_weight: Float[Array, " n"] | None = None,
) -> Float[Array, ""]:
    r"""Top-label ECE (Gupta & Ramdas 2022), **normalised**: confidence binned per predicted class.

    With $c_i, a_i$ as in `confidence_ece`, predicted class $\ell_i = \arg\max_\ell v_{i\ell}$,
    $W_\ell$ the weight of samples predicted as $\ell$ and $\mathrm{ECE}_\ell$ the binned ECE of
    $(c_i, a_i)$ over those samples alone (its own bins, normalised by $W_\ell$),
    $$\mathrm{ECE}^{\mathrm{TL}} = \Big(\sum_{\ell : W_\ell > 0} \frac{W_\ell}{W}\,
      \mathrm{ECE}_\ell^{\,p}\Big)^{1/p}
      = \Big(\sum_\ell \sum_b \frac{W_{\ell b}}{W} |\bar c_{\ell b} - \bar a_{\ell b}|^p\Big)^{1/p},$$
    the estimate of top-label calibration $E[y_{\ell_v} \mid v_{\ell_v}, \ell_v] = v_{\ell_v}$
    (Gopalan et al. 2024, §2), whose witnesses $\phi(v_{\ell_v}, \ell_v)$ may depend on the
    predicted class. Unlike `confidence_ece`, over- and under-confidence in different predicted
    classes do not cancel, so $\mathrm{ECE}^{\mathrm{TL}} \ge \mathrm{ECE}^{\mathrm{conf}}$ for
    uniform bins and $p = 1$. With ``strategy="quantile"`` each predicted class gets its own
    equal-mass bins (Gupta & Ramdas bin each class separately).

    Args:
        probs: predictions on the simplex, shape ``(n, C)``.
        labels: integer labels in ``[0, C)``, shape ``(n,)``.
        n_bins: number of bins per predicted class (static).
        strategy: ``"uniform"`` or ``"quantile"``.
        sample_weight: optional non-negative weights, shape ``(n,)``.
        order: exponent $p \ge 1$ (static).

    Returns:
        Scalar in $[0, 1]$, normalised by the total weight.

    Examples:
        >>> import jax.numpy as jnp
        >>> v = jnp.array([[0.8, 0.2], [0.3, 0.7]])
        >>> round(float(top_label_ece(v, jnp.array([0, 0]), n_bins=10)), 4)
        0.45

    References:
        Gupta, Ramdas (2022), ICLR (top-label calibration and TL-ECE); Gopalan, Hu,
        Rothblum (2024), §2.
    """
    v, y, w = probs, labels, sample_weight
    return _top_label_ece(v, y, w, n_bins, strategy, order)


# The per-class loops run under jit so that binned_ece sees tracers (its value checks are for the
# Python boundary, which the public functions have already passed).
@functools.partial(jax.jit, static_argnames=("n_bins", "strategy", "p"))
def _top_label_ece(v, y, w, n_bins, strategy, p):
    n_classes = v.shape[1]
    pred = jnp.argmax(v, axis=1).astype(jnp.int32)
    conf = jnp.max(v, axis=1)
    correct = (pred == y).astype(jnp.int32)

    def per_class(ell):
        w_ell = w * (pred == ell).astype(w.dtype)
        total = jnp.sum(w_ell)
        ece_ell = binned_ece_kernel(conf, correct, w_ell, n_bins, strategy, p)
        # classes never predicted have W_ℓ = 0 and an undefined (0/0) ECE_ℓ: they contribute 0
        return jnp.where(total > 0, total * ece_ell**p, 0.0)

    terms = lax.map(per_class, jnp.arange(n_classes, dtype=jnp.int32), batch_size=min(n_classes, _CLASS_BATCH))
    return (jnp.sum(terms) / jnp.sum(w)) ** (1.0 / p)


@declare(_warn_class_bins, **_BINNED)
def classwise_ece(
    probs: Float[Array, "n C"],
    labels: Int[Array, " n"],
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    order: float = 1,
    sample_weight: Float[Array, " n"] | None = None,
) -> Float[Array, ""]:
    r"""Class-wise ECE (Kull et al. 2019), **normalised**: the MEAN over classes of the binned ECE
    of each one-vs-rest problem.

    $$\mathrm{ECE}^{\mathrm{cw}} = \frac1C \sum_{\ell=1}^{C}
      \mathrm{binned\_ece}\big(v_{\cdot \ell},\ \mathbb 1[y = \ell]\big),$$
    the estimate of class-wise calibration $E[y_\ell \mid v_\ell] = v_\ell$ for every $\ell$
    (Gopalan et al. 2024, §2). The mean over classes (not the sum) follows Kull et al.'s definition of
    classwise-ECE, $\frac1k\sum_j\sum_i \frac{|B_{i,j}|}{n}|y_j(B_{i,j}) -
    \hat p_j(B_{i,j})|$ over $k$ classes and bins $B_{i,j}$; multiply by $C$ for the sum. Each class gets its own bins (equal-mass
    ones with ``strategy="quantile"``); with ``order > 1`` each class's ECE is an $\ell_p$ average and
    the classes are still averaged arithmetically. The worst class instead, the weighted
    calibration error of the class-wise family (Gopalan et al. 2024, §2), is
    :func:`jcalib.metrics.max_classwise_calibration_error`: this mean $\le$ that max
    $\le C\,\cdot$ this mean.

    Args:
        probs: predictions on the simplex, shape ``(n, C)``.
        labels: integer labels in ``[0, C)``, shape ``(n,)``.
        n_bins: number of bins per class (static).
        strategy: ``"uniform"`` or ``"quantile"``.
        sample_weight: optional non-negative weights, shape ``(n,)``.
        order: exponent $p \ge 1$ of each class's binned ECE (static).

    Returns:
        Scalar in $[0, 1]$, normalised by the total weight and by $C$.

    Examples:
        >>> import jax.numpy as jnp
        >>> v = jnp.array([[0.8, 0.2], [0.3, 0.7]])
        >>> round(float(classwise_ece(v, jnp.array([0, 0]), n_bins=10)), 4)
        0.45

    References:
        Kull, Perello-Nieto, Kängsepp, Silva Filho, Song, Flach (2019), NeurIPS (class-wise
        calibration and classwise-ECE); Gopalan, Hu, Rothblum (2024), §2.
    """
    v, y, w = probs, labels, sample_weight
    return _classwise_ece(v, y, w, n_bins, strategy, order)


@functools.partial(jax.jit, static_argnames=("n_bins", "strategy", "p"))
def _classwise_ece(v, y, w, n_bins, strategy, p):
    n_classes = v.shape[1]

    def per_class(ell):
        hit = (y == ell).astype(jnp.int32)
        return binned_ece_kernel(v[:, ell], hit, w, n_bins, strategy, p)

    eces = lax.map(per_class, jnp.arange(n_classes, dtype=jnp.int32), batch_size=min(n_classes, _CLASS_BATCH))
    return jnp.mean(eces)
