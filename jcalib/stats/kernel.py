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

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.special import ndtr
from jaxtyping import Array, Float

from .._kernels import DEFAULT_TILE, GaussianKernel, Kernel, kernel_matmul
from .._validation import check_binary_inputs, check_multiclass_inputs, check_positive_int
from ._result import CalibrationTestResult
from .resampling import _check_key, _chunked
from .consistency import consistency_test

__all__ = ["skce", "skce_test"]

_ESTIMATORS = ("biased", "unbiased", "block")
DEFAULT_KERNEL = GaussianKernel(0.5)


def _vectors(probs, labels, sample_weight):
    """Forecast vectors ``P`` (n, C), residuals ``R = e_y - P`` and weights (or None)."""
    if jnp.ndim(probs) == 2:
        P, y, w = check_multiclass_inputs(probs, labels, sample_weight)
        R = jax.nn.one_hot(y, P.shape[1], dtype=P.dtype) - P
    else:
        p, y, w = check_binary_inputs(probs, labels, sample_weight)
        P = jnp.stack([1 - p, p], axis=1)
        R = jnp.stack([p - y, y - p], axis=1)
    return P, R, (None if sample_weight is None else w)


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


def _check_options(kernel, estimator, block_size, tile, n, weighted):
    if not callable(kernel):
        raise TypeError(f"kernel must be callable, e.g. jcalib.recalibration.gaussian_kernel(0.5), got {type(kernel).__name__}")
    if estimator not in _ESTIMATORS:
        raise ValueError(f"estimator must be one of {_ESTIMATORS}, got {estimator!r}")
    block_size = check_positive_int(block_size, "block_size")
    tile = check_positive_int(tile, "tile")
    if estimator == "block":
        if block_size < 2:
            raise ValueError(f"block_size must be at least 2, got {block_size}")
        if n < block_size:
            raise ValueError(f"the block estimator needs at least block_size={block_size} rows, got {n}")
        if weighted:
            raise ValueError("sample_weight is supported by the 'biased' and 'unbiased' estimators only")
    elif estimator == "unbiased" and n < 2:
        raise ValueError("the unbiased estimator needs at least 2 rows")
    return block_size, tile


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
            :func:`jcalib.recalibration.laplacian_kernel`; any ``ker(A, B) -> Gram block``.
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
    P, R, w = _vectors(probs, labels, sample_weight)
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
        P, R, w = _vectors(probs, labels, sample_weight)
        return _skce(self.kernel, P, R, w, self.estimator, self.block_size, self.tile)


@eqx.filter_jit
def _block_test(kernel, P, R, block_size):
    v = _block_values(kernel, P, R, block_size)
    m = v.shape[0]
    est = jnp.mean(v)
    sd = jnp.std(v, ddof=1)
    z = jnp.where(sd > 0, est * jnp.sqrt(jnp.asarray(m, est.dtype)) / jnp.where(sd > 0, sd, 1), 0)
    return CalibrationTestResult(est, ndtr(-z))


@eqx.filter_jit
def _unbiased_test(kernel, P, R, key, n_resamples, chunk, tile):
    n = P.shape[0]
    dt = P.dtype
    KR = kernel_matmul(kernel, P, P, R, tile)
    a = jnp.sum(R * KR, axis=1) / n  # a_i = mean_j h_ij
    abar = jnp.mean(a)
    hdiag = _kernel_diag(kernel, P) * jnp.sum(R**2, axis=1)
    stat = (jnp.sum(R * KR) - jnp.sum(hdiag)) / (n * (n - 1))
    hdiag_c = hdiag - 2 * a + abar  # diagonal of the centred kernel

    def one(k):
        # resample counts c ~ Multinomial(n, 1/n); centred U-statistic of the resample:
        # sum_{i != j} h~(I_i, I_j) = c'H~c - sum_k c_k h~_kk with
        # c'H~c = c'Hc - 2 n (c.a) + n^2 abar
        c = jnp.zeros((n,), dt).at[jax.random.randint(k, (n,), 0, n, dtype=jnp.int32)].add(1)
        cR = R * c[:, None]
        quad = jnp.sum(cR * kernel_matmul(kernel, P, P, cR, tile))
        centred = quad - 2 * n * jnp.dot(c, a) + n**2 * abar - jnp.dot(c, hdiag_c)
        return centred / (n * (n - 1))

    null = _chunked(one, jax.random.split(key, n_resamples), chunk)
    p = (1 + jnp.sum(null >= stat)) / (n_resamples + 1)
    return CalibrationTestResult(stat, p.astype(dt))


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
    chunk: int = 16,
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
      kernel product (``key`` needed; cost $O(B n^2)$).

    ``method="consistency"``: :func:`consistency_test` of the chosen estimator (labels redrawn
    from the predictions; ``key`` needed), valid for every estimator.

    Args:
        probs: binary forecasts ``(n,)`` or multi-class predictions ``(n, C)``.
        labels: outcomes ``(n,)``.
        key: PRNG key (for the resampling methods).
        kernel, estimator, block_size, tile: as in :func:`skce`. ``"biased"`` needs
            ``method="consistency"``.
        method: ``"asymptotic"`` or ``"consistency"``.
        n_resamples: resamples of the resampling methods (static).
        chunk: resamples vmapped at once (static).

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
    if method not in ("asymptotic", "consistency"):
        raise ValueError(f"method must be 'asymptotic' or 'consistency', got {method!r}")
    P, R, _ = _vectors(probs, labels, None)
    block_size, tile = _check_options(kernel, estimator, block_size, tile, P.shape[0], False)
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    chunk = check_positive_int(chunk, "chunk")
    if method == "consistency" or estimator == "unbiased":
        if key is None:
            raise ValueError(f"key is needed for method={method!r} with estimator={estimator!r}")
        key = _check_key(key)
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
