r"""The squared kernel calibration error (Widmann, Lindsten, Zachariah 2019) and its tests.

With a scalar kernel $k$ on the simplex and the matrix-valued kernel $k(p, p')\,I_C$, the
squared kernel calibration error of a predictor $g$ is
$$\mathrm{SKCE} = \mathbb E\big[(e_Y - g(X))^\top k(g(X), g(X'))\,(e_{Y'} - g(X'))\big]$$
(paper, Lemma 2), zero if and only if $g$ is calibrated (for a universal kernel). With
$r_i = e_{y_i} - p_i$ and $h_{ij} = k(p_i, p_j)\, r_i^\top r_j$ it has three estimators
(paper, §3 and Lemma 3):

* ``"biased"``: $\frac1{n^2}\sum_{i,j} h_{ij}$ (a V-statistic, $\ge 0$);
* ``"unbiased"``: $\binom n2^{-1}\sum_{i<j} h_{ij}$ (a U-statistic, mean exactly SKCE);
* ``"block"``: the U-statistic within disjoint blocks of ``block_size`` consecutive rows,
  averaged over the $\lfloor n/b\rfloor$ blocks; unbiased, $O(nb)$ time (``block_size=2``
  is the paper's linear estimator $\frac1{\lfloor n/2\rfloor}\sum_i h_{2i-1,2i}$).

Binary forecasts $p_i \in [0, 1]$ are taken as the two-class vectors $(1 - p_i, p_i)$, so
$r_i^\top r_j = 2(y_i - p_i)(y_j - p_j)$ and the kernel sees $(1 - p, p)$. The quadratic
estimators never form the $n\times n$ Gram matrix: they use the tiled
:func:`jcalib._kernels.kernel_matmul` (memory $O(\mathrm{tile}\cdot n)$).
"""

from __future__ import annotations

import dataclasses
from statistics import NormalDist
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy.special import erfc, gammaln, ndtr
from jaxtyping import Array, Float

from .._kernels import DEFAULT_TILE, GaussianKernel, Kernel, kernel_matmul
from .._threefry import split
from .._validation import (
    Choice,
    Custom,
    Int,
    Key,
    Real,
    binary_or_multiclass_inputs,
    check_binary_labels,
    check_binary_probs,
    check_class_labels,
    check_same_length,
    check_simplex_probs,
    declare,
)
from ._result import CalibrationTestResult
from ._multinomial import _seeds, _uniform_rows
from .resampling import _chunked
from .consistency import consistency_test

__all__ = ["SKCEInterval", "cme_test", "skce", "skce_interval", "skce_test", "ucme"]

_ESTIMATORS = ("biased", "unbiased", "block")
DEFAULT_KERNEL = GaussianKernel(0.5)


def _vectors(probs, labels, sample_weight):
    """Forecast vectors ``P`` (n, C), residuals ``R = e_y - P``, weights (or None) and the
    labels as int32 class indices."""
    P, R, y = _vectors_of(probs, labels)
    return P, R, sample_weight, y


@jax.jit
def _vectors_of(probs, labels):
    """:func:`_vectors`' arrays, one compiled program per shape (operation by operation, each
    of its operations would compile a program of its own on a first call)."""
    if probs.ndim == 2:
        P, y = probs, labels
        R = jax.nn.one_hot(y, P.shape[1], dtype=P.dtype) - P
    else:
        p, y = probs, labels.astype(probs.dtype)  # the consistency resamples pass int32 outcomes
        P = jnp.stack([1 - p, p], axis=1)
        R = jnp.stack([p - y, y - p], axis=1)
        y = y.astype(jnp.int32)
    return P, R, y


def _kernel_diag(kernel, P):
    return jax.vmap(lambda v: kernel(v[None], v[None])[0, 0])(P)


def _quadratic(kernel, P, R, w, tile, unbiased):
    n = P.shape[0]
    wt = jnp.ones((n,), P.dtype) if w is None else w
    Rw = R * wt[:, None]
    total = jnp.sum(Rw * kernel_matmul(kernel, P, P, Rw, tile))  # sum_ij w_i w_j h_ij
    W = jnp.sum(wt)
    if not unbiased:
        return total / W**2
    diag = jnp.sum(_kernel_diag(kernel, P) * jnp.sum(Rw**2, axis=1))  # sum_i w_i^2 h_ii
    return (total - diag) / (W**2 - jnp.sum(wt**2))


def _block_values(kernel, P, R, b):
    """U-statistic of each of the floor(n/b) disjoint blocks of b consecutive rows."""
    m = P.shape[0] // b
    Pb = P[: m * b].reshape(m, b, -1)
    Rb = R[: m * b].reshape(m, b, -1)

    def one(Pi, Ri):
        H = kernel(Pi, Pi) * jnp.matmul(Ri, Ri.T, precision=lax.Precision.HIGHEST)
        return (jnp.sum(H) - jnp.trace(H)) / (b * (b - 1))

    return jax.vmap(one)(Pb, Rb)


@eqx.filter_jit
def _skce(kernel, P, R, w, estimator, block_size, tile):
    if estimator == "block":
        return jnp.mean(_block_values(kernel, P, R, block_size))
    return _quadratic(kernel, P, R, w, tile, estimator == "unbiased")


def _callable_kernel(kernel, name, bound):
    if not callable(kernel):
        raise TypeError(f"{name} must be callable, e.g. jcalib.metrics.GaussianKernel(0.5), got {type(kernel).__name__}")
    return kernel


# declared settings shared by the kernel statistics
_KERNEL = Custom(_callable_kernel, "a callable kernel, e.g. jcalib.metrics.GaussianKernel(0.5)")
_BLOCK = Int(2, 2**20, what="rows per block")  # a block U-statistic needs pairs, whichever estimator
_TILE = Int(1, 2**20, what="rows per Gram block")
_LEVEL = Real(0, 1, open_lo=True, open_hi=True, static=True)


def _check_options(kernel, estimator, block_size, tile, n, weighted):
    """The rules between the declared settings and the number of rows ``n``."""
    if estimator == "block":
        if n < block_size:
            raise ValueError(f"the block estimator needs at least block_size={block_size} rows, got {n}")
        if weighted:
            raise ValueError("sample_weight is supported by the 'biased' and 'unbiased' estimators only")
    elif estimator == "unbiased" and n < 2:
        raise ValueError("the unbiased estimator needs at least 2 rows")
    return block_size, tile


@declare(**binary_or_multiclass_inputs(fill=False), kernel=_KERNEL, estimator=Choice(*_ESTIMATORS), block_size=_BLOCK,
         tile=_TILE)
def skce(
    probs: Float[Array, "n ..."],
    labels: Array,
    *,
    kernel: Kernel = DEFAULT_KERNEL,
    estimator: str = "unbiased",
    block_size: int = 2,
    sample_weight: Float[Array, " n"] | None = None,
    tile: int = DEFAULT_TILE,
) -> Float[Array, ""]:
    r"""Squared kernel calibration error (Widmann et al. 2019), **normalised** (a mean over pairs).

    See the module docstring for the three estimators. The unbiased and block estimators can
    be negative (their mean is the SKCE, 0 under calibration); the biased one is $\ge 0$.
    With weights, the quadratic estimators weight pair $(i, j)$ by $w_i w_j$ (biased:
    $\sum_{ij} w_iw_jh_{ij} / W^2$; unbiased: $\sum_{i\ne j} w_iw_jh_{ij} / (W^2 - \sum_i
    w_i^2)$).

    Args:
        probs: binary forecasts ``(n,)`` or multi-class predictions ``(n, C)``.
        labels: outcomes ``(n,)``.
        kernel: scalar kernel on forecast vectors, e.g. ``GaussianKernel(0.5)`` (default) or
            :class:`jcalib.metrics.LaplacianKernel`; any ``ker(A, B) -> Gram block``.
        estimator: ``"unbiased"`` (default), ``"biased"`` or ``"block"`` (static).
        block_size: rows per block of the block estimator (static, $\ge 2$).
        sample_weight: optional non-negative weights (quadratic estimators only).
        tile: rows per Gram block of the quadratic estimators (static).

    Returns:
        Scalar.

    Examples:
        >>> import jax.numpy as jnp
        >>> p = jnp.array([0.2, 0.8]); y = jnp.array([0, 1])
        >>> # (h_11 + h_22 + 2 h_12) / 4 = (0.08 + 0.08 - 2 * 0.08 * exp(-1.44)) / 4
        >>> round(float(skce(p, y, estimator="biased")), 4)
        0.0305

    References:
        Widmann, Lindsten, Zachariah (2019), *Calibration tests in multi-class classification:
        a unifying framework*, NeurIPS, Lemma 2 and §3 (estimators).
    """
    P, R, w, _ = _vectors(probs, labels, sample_weight)
    block_size, tile = _check_options(kernel, estimator, block_size, tile, P.shape[0], w is not None)
    return _skce(kernel, P, R, w, estimator, block_size, tile)


@dataclasses.dataclass(frozen=True)
class _SKCEStatistic:
    """:func:`skce` with fixed settings, hashable (for :func:`consistency_test`'s jit cache)."""

    kernel: Kernel
    estimator: str
    block_size: int
    tile: int

    def __call__(self, probs, labels, sample_weight=None):
        P, R, w, _ = _vectors(probs, labels, sample_weight)
        return _skce(self.kernel, P, R, w, self.estimator, self.block_size, self.tile)


@eqx.filter_jit
def _block_test(kernel, P, R, block_size):
    v = _block_values(kernel, P, R, block_size)
    m = v.shape[0]
    est = jnp.mean(v)
    sd = jnp.std(v, ddof=1)
    z = jnp.where(sd > 0, est * jnp.sqrt(jnp.asarray(m, est.dtype)) / jnp.where(sd > 0, sd, 1), 0)
    return CalibrationTestResult(est, ndtr(-z))


def _residual_factor(R):
    r"""$F = RQ$, ``(n, C - 1)``, with $FF^\top = RR^\top$: $Q$ is an orthonormal basis of the
    vectors orthogonal to $\mathbf 1$, where the residuals $r_i = e_{y_i} - p_i$ lie (their
    entries sum to 0). The kernel products need $C - 1$ columns instead of $C$: half for
    binary forecasts."""
    C = R.shape[1]
    q = np.linalg.qr(np.eye(C) - 1 / C)[0][:, : C - 1]  # the centring matrix's range: 1's complement
    return jnp.matmul(R, jnp.asarray(q, R.dtype), precision=lax.Precision.HIGHEST)


@eqx.filter_jit
def _unbiased_test(kernel, P, R, key, n_resamples, chunk, tile):
    n = P.shape[0]
    dt = P.dtype
    hdiag = _kernel_diag(kernel, P) * jnp.sum(R**2, axis=1)
    R = _residual_factor(R)  # h_ij = k_ij r_i'r_j, with C - 1 columns
    KR = kernel_matmul(kernel, P, P, R, tile)
    a = jnp.sum(R * KR, axis=1) / n  # a_i = mean_j h_ij
    abar = jnp.mean(a)
    stat = (jnp.sum(R * KR) - jnp.sum(hdiag)) / (n * (n - 1))
    hdiag_c = hdiag - 2 * a + abar  # diagonal of the centred kernel

    def one(seed):
        # resample counts c ~ Multinomial(n, 1/n) from n uniform row indices (one Threefry cipher
        # for all of them: jax.random.randint would compile three); centred U-statistic of the
        # resample: sum_{i != j} h~(I_i, I_j) = c'H~c - sum_k c_k h~_kk with
        # c'H~c = c'Hc - 2 n (c.a) + n^2 abar
        c = jnp.zeros((n,), dt).at[_uniform_rows(seed[None], n, n)[0]].add(1)
        cR = R * c[:, None]
        quad = jnp.sum(cR * kernel_matmul(kernel, P, P, cR, tile))
        centred = quad - 2 * n * jnp.dot(c, a) + n**2 * abar - jnp.dot(c, hdiag_c)
        return centred / (n * (n - 1))

    null = _chunked(one, _seeds(split(key, n_resamples)), chunk)
    p = (1 + jnp.sum(null >= stat)) / (n_resamples + 1)
    return CalibrationTestResult(stat, p.astype(dt))


@declare(**binary_or_multiclass_inputs(weights=False), key=Key(optional=True, single=True), kernel=_KERNEL,
         estimator=Choice(*_ESTIMATORS), method=Choice("asymptotic", "consistency"), block_size=_BLOCK,
         n_resamples=Int(1, 2**24, bytes_per=8, what="its null distribution"),
         chunk=Int(1, 2**20, what="resamples per compiled chunk"), tile=_TILE)
def skce_test(
    probs: Float[Array, "n ..."],
    labels: Array,
    *,
    key: Array | None = None,
    kernel: Kernel = DEFAULT_KERNEL,
    estimator: str = "unbiased",
    method: str = "asymptotic",
    block_size: int = 2,
    n_resamples: int = 1000,
    chunk: int = 128,
    tile: int = DEFAULT_TILE,
) -> CalibrationTestResult:
    r"""Calibration test based on the SKCE (Widmann, Lindsten, Zachariah 2019, §4).

    **Null:** the predictions are calibrated, $P(Y = c \mid g(X)) = g_c(X)$ for every class
    (for binary forecasts: $y_i \sim \mathrm{Bernoulli}(p_i)$); then SKCE $= 0$. One-sided:
    large estimates reject.

    ``method="asymptotic"``:

    * block estimator: the block values are i.i.d. with mean 0 under the null, so
      $z = \sqrt m\,\widehat{\mathrm{SKCE}}_b / \hat s$ is asymptotically standard normal
      ($m$ blocks, $\hat s$ their standard deviation); p-value $1 - \Phi(z)$.
    * unbiased estimator: under the null it is a degenerate U-statistic, and
      $n\,\widehat{\mathrm{SKCE}}_{uq}$ converges to $\sum_i \lambda_i (Z_i^2 - 1)$; the
      paper approximates this law by the bootstrap of the *centred* kernel
      $\tilde h_{ij} = h_{ij} - \bar h_{i\cdot} - \bar h_{\cdot j} + \bar h_{\cdot\cdot}$
      (Arcones, Giné 1992), here with ``n_resamples`` multinomial count vectors, each a tiled
      kernel product (``key`` needed; cost $O(B n^2)$ multiply-adds: each Gram block is
      formed once per ``chunk`` resamples and multiplied by their $C - 1$ residual
      coordinates at once).

    ``method="consistency"``: :func:`consistency_test` of the chosen estimator (labels redrawn
    from the predictions; ``key`` needed), valid for every estimator.

    Args:
        probs: binary forecasts ``(n,)`` or multi-class predictions ``(n, C)``.
        labels: outcomes ``(n,)``.
        key: PRNG key, keyword-only: required by the methods that draw (``method="consistency"``,
            and the unbiased estimator's bootstrap); ``None`` (the default) only for the
            asymptotic block test, which draws nothing.
        kernel, estimator, block_size, tile: as in :func:`skce`. ``"biased"`` needs
            ``method="consistency"``.
        method: ``"asymptotic"`` or ``"consistency"``.
        n_resamples: resamples of the resampling methods (static).
        chunk: resamples vmapped at once (static; memory $O(\mathrm{chunk}\cdot n C)$). The
            result does not depend on it.

    Returns:
        :class:`CalibrationTestResult` ``(estimate, p_value)``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> p = jnp.linspace(0.05, 0.95, 400); y = (p > 0.5).astype(jnp.int32)
        >>> bool(skce_test(p, y, estimator="block").p_value < 0.01)
        True

    References:
        Widmann, Lindsten, Zachariah (2019), NeurIPS, §4 (tests) and Appendix; Arcones, Giné
        (1992), *On the bootstrap of U and V statistics*.
    """
    P, R, _, _ = _vectors(probs, labels, None)
    block_size, tile = _check_options(kernel, estimator, block_size, tile, P.shape[0], False)
    if method == "consistency" or estimator == "unbiased":
        key = Key(single=True).check(key, "key", {})  # these draw: None is the library's TypeError
    if method == "consistency":
        stat = _SKCEStatistic(kernel, estimator, block_size, tile)
        return consistency_test(stat, probs, labels, key=key, n_resamples=n_resamples, chunk=chunk)
    if estimator == "block":
        if P.shape[0] < 2 * block_size:
            raise ValueError(f"the asymptotic block test needs at least 2 blocks (n >= {2 * block_size})")
        return _block_test(kernel, P, R, block_size)
    if estimator == "biased":
        raise ValueError("the biased estimator has no asymptotic test here; use method='consistency'")
    return _unbiased_test(kernel, P, R, key, n_resamples, chunk, tile)


class SKCEInterval(NamedTuple):
    """An SKCE estimate with its asymptotic normal confidence interval (:func:`skce_interval`).

    Attributes:
        estimate: the block or unbiased SKCE estimate.
        lower: lower end of the interval (two-sided: may be negative; ``tail="right"``: clipped at 0).
        upper: upper end (``inf`` for ``tail="right"``).
        std_error: the estimated standard error of ``estimate``.
    """

    estimate: Array
    lower: Array
    upper: Array
    std_error: Array


_TAILS = ("both", "right")


@eqx.filter_jit
def _interval(kernel, P, R, estimator, block_size, tile, q, right):
    if estimator == "block":
        v = _block_values(kernel, P, R, block_size)
        est = jnp.mean(v)
        se = jnp.std(v, ddof=1) / jnp.sqrt(jnp.asarray(v.shape[0], v.dtype))
    else:
        n = P.shape[0]
        KR = kernel_matmul(kernel, P, P, R, tile)
        hdiag = _kernel_diag(kernel, P) * jnp.sum(R**2, axis=1)
        a = (jnp.sum(R * KR, axis=1) - hdiag) / (n - 1)  # off-diagonal row means: h_1(Z_i) + SKCE
        est = jnp.mean(a)  # the U-statistic itself
        se = 2 * jnp.std(a, ddof=1) / jnp.sqrt(jnp.asarray(n, a.dtype))
    q = q.astype(est.dtype)
    if right:  # CalibrationTests.jl's confint(test; tail=:right): SKCE >= 0, so clip at 0
        return SKCEInterval(est, jnp.maximum(est - q * se, 0), jnp.full_like(est, jnp.inf), se)
    return SKCEInterval(est, est - q * se, est + q * se, se)


@declare(**binary_or_multiclass_inputs(weights=False), kernel=_KERNEL, estimator=Choice("block", "unbiased"),
         block_size=_BLOCK, level=_LEVEL, tail=Choice(*_TAILS), tile=_TILE)
def skce_interval(
    probs: Float[Array, "n ..."],
    labels: Array,
    *,
    kernel: Kernel = DEFAULT_KERNEL,
    estimator: str = "block",
    block_size: int = 2,
    level: float = 0.95,
    tail: str = "both",
    tile: int = DEFAULT_TILE,
) -> SKCEInterval:
    r"""Asymptotic normal confidence interval of the SKCE (Widmann, Lindsten, Zachariah 2019, §4).

    ``estimator="block"`` (default): the block estimator is the mean of $m = \lfloor n/b\rfloor$
    i.i.d. block values $v_1, \dots, v_m$ (each the U-statistic of $b$ consecutive rows) whose
    mean is the SKCE, so by the central limit theorem (the paper's asymptotic normality of the
    linear estimator, $b = 2$; Zaremba, Gretton, Blaschko 2013 for blocks)
    $$\widehat{\mathrm{SKCE}}_b \pm z\,\hat s / \sqrt m, \qquad
    \hat s^2 = \tfrac1{m-1}\textstyle\sum_k (v_k - \bar v)^2 ,$$
    valid whether or not the predictions are calibrated. The standard error $\hat s/\sqrt m$
    is CalibrationTests.jl's ``AsymptoticBlockSKCETest.stderr``. It needs many blocks: with
    10 blocks ($n = 100$, $b = 10$) the 95% interval covered the SKCE in 85–87% of binary data
    sets, with 200 blocks in 94–95%.

    ``estimator="unbiased"``: the U-statistic $U = \binom n2^{-1}\sum_{i<j} h_{ij}$ has, by
    Hoeffding's decomposition, $\mathrm{Var}(U) = 4\zeta_1/n + O(n^{-2})$ with
    $\zeta_1 = \mathrm{Var}\,h_1(Z)$, $h_1(z) = \mathbb E\,h(z, Z')$ (Hoeffding 1948,
    Theorem 7.1). $h_1(Z_i)$ is estimated by the off-diagonal row mean
    $a_i = \frac1{n-1}\sum_{j\ne i} h_{ij}$ (so $U = \bar a$), and
    $$U \pm z\cdot 2\,\mathrm{sd}(a_1, \dots, a_n)/\sqrt n .$$
    This holds when $\zeta_1 > 0$ (a miscalibrated predictor). Under calibration $U$ is a
    *degenerate* U-statistic ($\zeta_1 = 0$, $nU$ tends to a weighted sum of centred
    $\chi^2_1$ variables, paper §4), the normal interval does not apply, and the 95% interval
    covered 0 in 87–89% of calibrated binary data sets ($n$ = 100 to 400): near SKCE $= 0$ use the block interval,
    or test with :func:`skce_test`. Cost $O(n^2)$ time, $O(\mathrm{tile}\cdot n)$ memory.

    Here $z = \Phi^{-1}(1 - (1 - \text{level})/2)$. ``tail="right"`` gives the one-sided
    interval of CalibrationTests.jl's ``confint(test; tail=:right)``:
    $[\max(0, \widehat{\mathrm{SKCE}} - \Phi^{-1}(\text{level})\,\mathrm{se}), \infty)$.

    Args:
        probs: binary forecasts ``(n,)`` or multi-class predictions ``(n, C)``.
        labels: outcomes ``(n,)``.
        kernel, block_size, tile: as in :func:`skce`.
        estimator: ``"block"`` (default; at least 2 blocks) or ``"unbiased"`` (at least 3
            rows) (static).
        level: confidence level in $(0, 1)$ (static: a Python float).
        tail: ``"both"`` (default) or ``"right"`` (static).

    Returns:
        :class:`SKCEInterval` ``(estimate, lower, upper, std_error)``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> kp, ky = jax.random.split(jax.random.key(0))
        >>> p = jax.random.uniform(kp, (2000,))
        >>> y = (jax.random.uniform(ky, (2000,)) < p).astype(jnp.int32)  # calibrated
        >>> est, lo, hi, se = skce_interval(p, y)
        >>> bool(lo <= 0 <= hi)
        True

    References:
        Widmann, Lindsten, Zachariah (2019), *Calibration tests in multi-class classification:
        a unifying framework*, NeurIPS, §3 (estimators) and §4 (asymptotic distributions);
        Hoeffding (1948), *A class of statistics with asymptotically normal distribution*,
        Annals of Mathematical Statistics, Theorem 7.1; Zaremba, Gretton, Blaschko (2013),
        *B-test: a non-parametric, low variance kernel two-sample test*, NeurIPS.
    """
    P, R, _, _ = _vectors(probs, labels, None)
    block_size, tile = _check_options(kernel, estimator, block_size, tile, P.shape[0], False)
    n = P.shape[0]
    if estimator == "block" and n < 2 * block_size:
        raise ValueError(f"the block interval needs at least 2 blocks (n >= {2 * block_size}), got {n} rows")
    if estimator == "unbiased" and n < 3:
        raise ValueError(f"the unbiased interval needs at least 3 rows, got {n}")
    right = tail == "right"
    q = NormalDist().inv_cdf(level if right else 0.5 + level / 2)
    return _interval(kernel, P, R, estimator, block_size, tile, jnp.asarray(q), right)


def _test_locations(test_probs, test_labels, n_classes, binary, dtype):
    """User-given test locations as forecast vectors ``(J, C)`` and int32 labels ``(J,)``."""
    if binary:
        tp = check_binary_probs(test_probs, "test_probs")
        ty = check_binary_labels(test_labels, "test_labels")
        if tp.ndim != 1 or ty.ndim != 1:
            raise ValueError(
                f"with binary forecasts, test_probs and test_labels must be 1-D, got shapes {tuple(tp.shape)} and {tuple(ty.shape)}"
            )
        Pt = jnp.stack([1 - tp, tp], axis=1)
    else:
        Pt = check_simplex_probs(test_probs, "test_probs")
        if Pt.shape[1] != n_classes:
            raise ValueError(f"test_probs must have the {n_classes} columns of probs, got shape {tuple(Pt.shape)}")
        ty = check_class_labels(test_labels, n_classes, "test_labels")
    J = check_same_length(test_probs=Pt, test_labels=ty)
    if J == 0:
        raise ValueError("test_probs and test_labels are empty; at least one test location is needed")
    return Pt.astype(dtype), ty


def _deviations(kernel, P, R, Pt, yt):
    r"""$z_{ij} = k(p_i, \tilde p_j)\,(\delta_{y_i \tilde y_j} - p_{i,\tilde y_j})$, shape ``(n, J)``."""
    return kernel(P, Pt) * R[:, yt]


@declare(**binary_or_multiclass_inputs(fill=False), kernel=_KERNEL)
def ucme(
    probs: Float[Array, "n ..."],
    labels: Array,
    *,
    test_probs: Float[Array, "J ..."],
    test_labels: Array,
    kernel: Kernel = DEFAULT_KERNEL,
    sample_weight: Float[Array, " n"] | None = None,
) -> Float[Array, ""]:
    r"""Unnormalised calibration mean embedding (Widmann, Lindsten, Zachariah 2021), squared.

    With the tensor-product kernel $k\big((p, y), (p', y')\big) = k(p, p')\,\delta_{yy'}$ (the
    scalar kernel of :func:`skce` on predictions times the white kernel on labels, which gives
    the matrix-valued kernel $k(p, p')\,I_C$ of the SKCE), the calibration mean embedding at a
    test location $(\tilde p, \tilde y)$ is
    $\mathbb E\big[k(g(X), \tilde p)\,(\delta_{Y\tilde y} - g_{\tilde y}(X))\big]$, zero at every
    location when $g$ is calibrated. With the $J$ test locations $(\tilde p_j, \tilde y_j)$ and
    $z_{ij} = k(p_i, \tilde p_j)\,(\delta_{y_i\tilde y_j} - p_{i,\tilde y_j})$,
    $$\mathrm{UCME}^2 = \frac1J\sum_{j=1}^J \Big(\frac1n\sum_{i=1}^n z_{ij}\Big)^2$$
    (CalibrationErrors.jl's ``UCME``; weighted means with ``sample_weight``). **Normalised**
    by $J$ (a mean over locations). Biased ($\ge 0$); :func:`cme_test` tests it.

    Args:
        probs: binary forecasts ``(n,)`` or multi-class predictions ``(n, C)``.
        labels: outcomes ``(n,)``.
        test_probs: forecasts of the test locations, ``(J,)`` or ``(J, C)`` like ``probs``.
        test_labels: labels of the test locations ``(J,)``.
        kernel: scalar kernel on forecast vectors (as in :func:`skce`).
        sample_weight: optional non-negative weights of the rows.

    Returns:
        Scalar.

    Examples:
        >>> import jax.numpy as jnp
        >>> p = jnp.array([0.2, 0.8]); y = jnp.array([1, 1])
        >>> # one location (0.5, 1): z_i = k(p_i, 0.5) (y_i - p_i) = exp(-0.36) * (0.8, 0.2)
        >>> round(float(ucme(p, y, test_probs=jnp.array([0.5]), test_labels=jnp.array([1]))), 4)
        0.1217

    References:
        Widmann, Lindsten, Zachariah (2021), *Calibration tests beyond classification*, ICLR,
        §3–4 (the UCME and its test).
    """
    P, R, w, _ = _vectors(probs, labels, sample_weight)
    Pt, yt = _test_locations(test_probs, test_labels, P.shape[1], jnp.ndim(probs) == 1, P.dtype)
    return _ucme(kernel, P, R, w, Pt, yt)


@eqx.filter_jit
def _ucme(kernel, P, R, w, Pt, yt):
    Z = _deviations(kernel, P, R, Pt, yt)
    zbar = jnp.mean(Z, axis=0) if w is None else jnp.matmul(w, Z, precision=lax.Precision.HIGHEST) / jnp.sum(w)
    return jnp.mean(zbar**2)


def _chi2_sf(df, x, max_df: int):
    r"""$P(\chi^2_k \ge x)$ for an integer $k = $ ``df`` in $[1, $ ``max_df`` $]$ (static bound),
    by the finite series of $Q(k/2, x/2)$: with $h = x/2$,
    $e^{-h}\sum_{i < k/2} h^i / i!$ for even $k$ and
    $\operatorname{erfc}(\sqrt h) + e^{-h}\sum_{i < (k-1)/2} h^{i + 1/2} / \Gamma(i + 3/2)$ for odd
    $k$ (Abramowitz and Stegun 1964, 26.4.4 and 26.4.5), each term taken through its logarithm.
    The program is a fraction of ``gammaincc``'s, whose continued fraction covers every real
    shape (agreement with scipy to 1e-12 relative in float64, tested)."""
    h = x / 2
    i = jnp.arange((max_df + 1) // 2, dtype=h.dtype)
    odd = df % 2 == 1
    a = jnp.where(odd, i + 1.5, i + 1)  # term i is h^(a-1) e^-h / Gamma(a)
    log_term = (a - 1) * jnp.log(jnp.where(h > 0, h, 1)) - h - gammaln(a)
    term = jnp.where(h > 0, jnp.exp(log_term), (a == 1).astype(h.dtype))  # h = 0: only h^0 is 1
    n_terms = (jnp.where(odd, df - 1, df) // 2).astype(h.dtype)
    return jnp.where(odd, erfc(jnp.sqrt(h)), 0) + jnp.sum(jnp.where(i < n_terms, term, 0))


@eqx.filter_jit
def _cme_test(kernel, P, R, Pt, yt, keep):
    Z = _deviations(kernel, P, R, Pt, yt)
    dt = Z.dtype
    m = jnp.sum(keep).astype(dt)
    kw = keep.astype(dt)
    zbar = jnp.matmul(kw, Z, precision=lax.Precision.HIGHEST) / m
    D = (Z - zbar[None, :]) * kw[:, None]  # S = D'D / (m - 1)
    # S^{-1} through the eigendecomposition D'D = V diag(lam) V' (S = D'D / (m - 1)), on the
    # directions with lam_k > 100 eps lam_max. Departs from CalibrationTests.jl's `C \ x`, which
    # fails on a singular S: tied test locations (repeated forecasts; in the binary case (p, 0)
    # and (p, 1), whose deviations are opposite) make S singular, and the chi-square then has
    # rank(S) degrees of freedom. The cut: forming D'D rounds each lam_k by about eps lam_max, so
    # a direction's term proj_k^2 / lam_k carries a relative error of about eps lam_max / lam_k,
    # at most 1% above the cut (as for the singular values of D, sigma_k^2 = lam_k); smooth
    # kernels do give spectra that steep (Gaussian, bandwidth 0.5, five locations:
    # lam_min / lam_max ~ 1e-9). Below (10 eps sqrt(m) max|z|)^2, the rounding of the centring,
    # S is 0 (every row's deviations equal)
    lam, V = jnp.linalg.eigh(jnp.matmul(D.T, D, precision=lax.Precision.HIGHEST))
    eps = jnp.finfo(dt).eps
    use = (lam > 100 * eps * lam[-1]) & (lam > (10 * eps * jnp.sqrt(m) * jnp.max(jnp.abs(Z))) ** 2)
    proj = jnp.matmul(V.T, zbar, precision=lax.Precision.HIGHEST)
    stat = m * (m - 1) * jnp.sum(jnp.where(use, proj**2 / jnp.where(use, lam, 1), 0))
    df = jnp.sum(use)
    p = _chi2_sf(jnp.maximum(df, 1), stat, Z.shape[1])
    # S = 0 (every row's deviations equal): no evidence if they are all 0, certain rejection if not
    flat = df == 0
    off = jnp.any(zbar != 0)
    stat = jnp.where(flat, jnp.where(off, jnp.inf, 0), stat)
    p = jnp.where(flat, jnp.where(off, 0, 1), p)
    return CalibrationTestResult(stat, p.astype(dt))


@declare(**binary_or_multiclass_inputs(weights=False), key=Key(optional=True, single=True),
         n_test=Int(1, 2**20, bytes_per=8, what="its test locations (per row)"), kernel=_KERNEL)
def cme_test(
    probs: Float[Array, "n ..."],
    labels: Array,
    *,
    key: Array | None = None,
    test_probs: Float[Array, "J ..."] | None = None,
    test_labels: Array | None = None,
    n_test: int = 2,
    kernel: Kernel = DEFAULT_KERNEL,
) -> CalibrationTestResult:
    r"""Calibration test with the calibration mean embedding at $J$ test locations (Widmann,
    Lindsten, Zachariah 2021, §3–4; CalibrationTests.jl's ``AsymptoticCMETest``).

    **Null:** the predictions are calibrated; then every $z_i = (z_{i1}, \dots, z_{iJ})$ (see
    :func:`ucme`) has mean 0, and Hotelling's statistic
    $$T^2 = n\,\bar z^\top S^{-1} \bar z, \qquad
    S = \tfrac1{n-1}\textstyle\sum_i (z_i - \bar z)(z_i - \bar z)^\top,$$
    is asymptotically $\chi^2_J$ (the mean-embedding test of Chwialkowski et al. 2015 and
    Jitkrittum et al. 2016). p-value: $P(\chi^2_J \ge T^2)$, as CalibrationTests.jl (no
    finite-sample F correction). Cost $O(nJ)$.

    Test locations: either given (``test_probs``, ``test_labels``: forecasts shaped like
    ``probs`` and labels; then the test is invariant to the order of the rows), or drawn with
    ``key``: ``n_test`` distinct rows chosen uniformly, whose $(p_j, y_j)$ become the locations
    and which are then left out of the statistic ($n - J$ rows remain). Leaving them out keeps
    the locations independent of the rows that are tested (a row at its own location adds
    $k(p_j, p_j)(1 - p_{j, y_j}) > 0$, a bias). For a fixed ``key`` the rows drawn are
    positions, so the result depends on the order of the rows.

    Departure from CalibrationTests.jl: $S^{-1}$ is applied on the eigenvectors of $S$ whose
    eigenvalues exceed $100\,\varepsilon$ times the largest ($\varepsilon$ the machine
    epsilon of the dtype), and the $\chi^2$ has that many degrees of freedom: tied locations
    make $S$ singular, where the Julia package fails, and smooth kernels make it nearly so
    (the default kernel with five binary locations: smallest / largest eigenvalue about
    $10^{-9}$, kept in float64, dropped in float32, where rounding would swamp it).

    The $\chi^2$ law is asymptotic and slow to arrive when many locations see nearly the
    same rows (a smooth kernel): on calibrated binary data (default kernel, float64, 1000 data
    sets) the 5% test rejected 6.4% ($J = 2$) and 18% ($J = 5$) of them at $n = 200$, 5.3% and
    8.4% at $n = 500$, hence the default ``n_test=2``.

    Args:
        probs: binary forecasts ``(n,)`` or multi-class predictions ``(n, C)``.
        labels: outcomes ``(n,)``.
        key: PRNG key, keyword-only: required when the test locations are drawn from the data;
            ``None`` (the default) only with ``test_probs`` and ``test_labels``, when nothing
            is drawn.
        test_probs: forecasts of the test locations, ``(J,)`` or ``(J, C)`` (with ``test_labels``).
        test_labels: labels of the test locations ``(J,)``.
        n_test: number of test locations drawn with ``key`` (static; $n \ge 2J + 1$).
        kernel: scalar kernel on forecast vectors (as in :func:`skce`).

    Returns:
        :class:`CalibrationTestResult` ``(T², p_value)``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> p = jnp.linspace(0.05, 0.95, 400); y = (p > 0.5).astype(jnp.int32)
        >>> bool(cme_test(p, y, key=jax.random.key(0)).p_value < 0.01)
        True

    References:
        Widmann, Lindsten, Zachariah (2021), *Calibration tests beyond classification*, ICLR,
        §3–4; Jitkrittum, Szabó, Chwialkowski, Gretton (2016), *Interpretable distribution
        features with maximum testing power*, NeurIPS.
    """
    n, J = jnp.shape(probs)[0], n_test
    if (test_probs is None) != (test_labels is None):
        raise ValueError("give both test_probs and test_labels, or neither (then the locations are drawn with key)")
    if test_probs is not None:
        P, R, _, y = _vectors(probs, labels, None)
        Pt, yt = _test_locations(test_probs, test_labels, P.shape[1], jnp.ndim(probs) == 1, P.dtype)
        J = Pt.shape[0]
        if n < J + 1:
            raise ValueError(f"the CME test with {J} test locations needs at least {J + 1} rows, got {n}")
        keep = jnp.ones((n,), bool)
    else:
        key = Key(single=True).check(key, "key", {})  # drawing the locations: None is the library's TypeError
        if n < 2 * J + 1:
            raise ValueError(f"drawing n_test={J} test locations needs at least {2 * J + 1} rows (n >= 2 n_test + 1), got {n}")
        return _cme_test_drawn(kernel, probs, labels, key, J)
    return _cme_test(kernel, P, R, Pt, yt, keep)


@eqx.filter_jit
def _cme_test_drawn(kernel, probs, labels, key, n_test: int):
    """:func:`_cme_test` at ``n_test`` rows drawn without replacement as the test locations
    (left out of the statistic), in the same program as the forecast vectors."""
    P, R, y = _vectors_of(probs, labels)
    # n_test rows uniformly without replacement: those of the n_test largest of n uniforms (a
    # smaller program than jax.random.choice's shuffle)
    idx = lax.top_k(jax.random.uniform(key, (P.shape[0],)), n_test)[1]
    keep = jnp.ones((P.shape[0],), bool).at[idx].set(False)
    return _cme_test(kernel, P, R, P[idx], y[idx], keep)
