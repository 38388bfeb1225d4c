r"""Kolmogorov–Smirnov and Kuiper tests of calibration (cumulative form), and of PIT uniformity.

Sort the forecasts, $p_{(1)} \le \dots \le p_{(n)}$, and accumulate the residuals in that order:
$$S_k = \frac1W \sum_{j \le k} w_{(j)}\,(y_{(j)} - p_{(j)}),\qquad S_0 = 0 .$$
A calibrated forecaster's cumulative curve stays near 0 (Gupta, Rahimi, Ajanthan, Mensink,
Sminchisescu, Hartley 2021, §3; the reliability diagram's integral, with no binning). The
KS calibration error is $\max_k |S_k|$ and the Kuiper one $\max_k S_k - \min_k S_k$ (both
**normalised**, in $[0, 1]$).

Under the null $y_i \sim \mathrm{Bernoulli}(p_i)$ independently, $S$ is a martingale with
total variance $\sigma^2 = \frac1{W^2}\sum_i w_i^2 p_i(1-p_i)$, and $S/\sigma$ on the
time scale of its variance tends to a standard Brownian motion on $[0, 1]$ (Arrieta-Ibarra,
Gujral, Tannen, Tygert, Xu 2022, §2.3). So with $x = \max|S|/\sigma$ and $r =
(\max S - \min S)/\sigma$ the asymptotic p-values are, writing $Q = 1 - \Phi$,
$$P\big(\sup_{[0,1]} |B| \ge x\big) = 4\sum_{j\ge0} (-1)^j\, Q\big((2j+1)x\big),\qquad
P\big(\sup B - \inf B \ge r\big) = 8\sum_{k \ge 1} (-1)^{k-1}\, k\, Q(kr)$$
(reflection principle; the second is Feller's 1951 law of the range, integrated). A walk
observed at $n$ points reaches a level later than the Brownian motion, which would make
these p-values conservative at small $n$; as Siegmund (1985) and Broadie, Glasserman, Kou
(1997) do for discretely monitored boundaries, $x$ is evaluated at $x + 0.5826/\sqrt n$ and
$r$ at $r + 2\cdot 0.5826/\sqrt n$ (0.5826 $= -\zeta(\tfrac12)/\sqrt{2\pi}$; $n$ counts
the rows with positive weight). With it the p-values are uniform under the null already at
$n = 100$ (``tests/stats/test_cumulative.py``). :func:`jcalib.stats.consistency_test` of
:func:`ks_calibration_error` gives a resampled p-value instead.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import ndtr
from jaxtyping import Array, Float, Int

from .._validation import check_binary_inputs, check_multiclass_inputs
from ..metrics.regression import pit_uniformity
from ._result import CalibrationTestResult

__all__ = [
    "ks_calibration_error",
    "ks_test",
    "kuiper_calibration_error",
    "kuiper_test",
    "pit_uniformity_test",
]

_SIEGMUND = 0.5826  # -zeta(1/2) / sqrt(2 pi): Siegmund (1985), Broadie, Glasserman, Kou (1997)
_TERMS = 100  # series terms: Q(k x) underflows long before k = 100 for x >= 0.1


def _binary_or_top_label(probs, labels, sample_weight):
    if jnp.ndim(probs) == 2:  # top-label: confidence, and whether the top class happened
        v, y, w = check_multiclass_inputs(probs, labels, sample_weight)
        return jnp.max(v, axis=1), (jnp.argmax(v, axis=1).astype(jnp.int32) == y).astype(v.dtype), w
    return check_binary_inputs(probs, labels, sample_weight)


def _cumulative(p, y, w):
    order = jnp.argsort(p)
    W = jnp.sum(w)
    s = jnp.cumsum((w * (y - p))[order]) / W
    s = jnp.concatenate([jnp.zeros((1,), s.dtype), s])
    sigma = jnp.sqrt(jnp.sum(w**2 * p * (1 - p))) / W
    # the walk is observed at n points: Siegmund's correction moves each boundary out by
    # 0.5826 step standard deviations, which is 0.5826 / sqrt(n) in units of sigma
    shift = _SIEGMUND / jnp.sqrt(jnp.sum(w > 0).astype(s.dtype))
    return s, sigma, shift


def _ks_pvalue(x):
    j = jnp.arange(_TERMS, dtype=x.dtype)
    terms = jnp.where(j % 2 == 0, 1, -1).astype(x.dtype) * ndtr(-(2 * j + 1) * x)
    # below x = 0.1 the truncated series is inaccurate; there P(sup|B| >= x) > 1 - 1e-40
    return jnp.where(x < 0.1, 1, jnp.clip(4 * jnp.sum(terms), 0, 1)).astype(x.dtype)


def _range_pvalue(r):
    k = jnp.arange(1, _TERMS + 1, dtype=r.dtype)
    terms = jnp.where(k % 2 == 1, 1, -1).astype(r.dtype) * k * ndtr(-k * r)
    # below r = 0.1 the truncated series is inaccurate; there P(range >= r) > 1 - 1e-40
    return jnp.where(r < 0.1, 1, jnp.clip(8 * jnp.sum(terms), 0, 1)).astype(r.dtype)


def _standardised(stat, sigma, shift):
    # sigma = 0: every forecast is 0 or 1, the null leaves no randomness; any deviation is
    # then impossible under it (p = 0) and none is certain (p = 1)
    safe = jnp.where(sigma > 0, sigma, 1)
    return jnp.where(sigma > 0, stat / safe + shift, jnp.where(stat > 0, jnp.inf, 0))


@jax.jit
def _ks(p, y, w):
    s, sigma, shift = _cumulative(p, y, w)
    stat = jnp.max(jnp.abs(s))
    x = _standardised(stat, sigma, shift)
    return CalibrationTestResult(stat, jnp.where(jnp.isinf(x), 0, _ks_pvalue(jnp.where(jnp.isinf(x), 1, x))))


@jax.jit
def _kuiper(p, y, w):
    s, sigma, shift = _cumulative(p, y, w)
    stat = jnp.max(s) - jnp.min(s)
    r = _standardised(stat, sigma, 2 * shift)  # both the maximum and the minimum
    return CalibrationTestResult(stat, jnp.where(jnp.isinf(r), 0, _range_pvalue(jnp.where(jnp.isinf(r), 1, r))))


def ks_calibration_error(probs, labels, sample_weight=None) -> Float[Array, ""]:
    r"""KS calibration error $\max_k |S_k|$ of Gupta et al. (2021), **normalised** (see module).

    Binary forecasts ``(n,)``, or multi-class ``(n, C)`` in its top-label form (confidence
    $\max_c p_{ic}$ against the event "the top class is the label").

    Examples:
        >>> import jax.numpy as jnp
        >>> round(float(ks_calibration_error(jnp.array([0.2, 0.8]), jnp.array([0, 0]))), 3)
        0.5

    References:
        Gupta, Rahimi, Ajanthan, Mensink, Sminchisescu, Hartley (2021), *Calibration of neural
        networks using splines*, ICLR, Eq. (6).
    """
    return _ks(*_binary_or_top_label(probs, labels, sample_weight)).statistic


def kuiper_calibration_error(probs, labels, sample_weight=None) -> Float[Array, ""]:
    r"""Kuiper calibration error $\max_k S_k - \min_k S_k$ (with $S_0 = 0$), **normalised**.

    References:
        Arrieta-Ibarra, Gujral, Tannen, Tygert, Xu (2022), *Metrics of calibration for
        probabilistic predictions*, JMLR 23, §2.
    """
    return _kuiper(*_binary_or_top_label(probs, labels, sample_weight)).statistic


def ks_test(
    probs: Float[Array, " n"],
    labels: Int[Array, " n"],
    sample_weight: Float[Array, " n"] | None = None,
) -> CalibrationTestResult:
    r"""Kolmogorov–Smirnov test of calibration (cumulative form; see the module docstring).

    **Null:** $y_i \sim \mathrm{Bernoulli}(p_i)$ independently (for ``(n, C)`` predictions: the
    top class happens with probability equal to the confidence). Statistic: the KS
    calibration error $\max_k |S_k|$ (Gupta et al. 2021); p-value
    $P(\sup_{[0,1]}|B| \ge \max_k |S_k| / \sigma)$, asymptotic in $n$ and conservative at
    small $n$.

    Args:
        probs: ``(n,)`` forecasts in $[0, 1]$ or ``(n, C)`` rows on the simplex.
        labels: ``(n,)`` outcomes (0/1 or class indices).
        sample_weight: optional non-negative weights.

    Returns:
        :class:`CalibrationTestResult` ``(statistic, p_value)``.

    Examples:
        >>> import jax.numpy as jnp
        >>> p = jnp.linspace(0.05, 0.95, 100)
        >>> r = ks_test(p, (p > 0.5).astype(jnp.int32))   # outcomes far sharper than the forecasts
        >>> bool(r.p_value < 0.05)
        True

    References:
        Gupta et al. (2021), ICLR (the KS calibration error); Arrieta-Ibarra et al. (2022),
        JMLR 23 (its Brownian-motion null and p-values).
    """
    return _ks(*_binary_or_top_label(probs, labels, sample_weight))


def kuiper_test(
    probs: Float[Array, " n"],
    labels: Int[Array, " n"],
    sample_weight: Float[Array, " n"] | None = None,
) -> CalibrationTestResult:
    r"""Kuiper test of calibration: the range $\max_k S_k - \min_k S_k$ of the cumulative curve.

    **Null:** as :func:`ks_test`. p-value $P(\sup B - \inf B \ge \text{range}/\sigma)$ for a
    standard Brownian motion $B$ on $[0, 1]$ (asymptotic; conservative at small $n$). Unlike the
    KS statistic, the range does not depend on where the curve starts, so it treats
    miscalibration at low and high forecasts alike.

    Returns:
        :class:`CalibrationTestResult` ``(statistic, p_value)``.

    References:
        Kuiper (1960); Arrieta-Ibarra, Gujral, Tannen, Tygert, Xu (2022), JMLR 23, §2.3.
    """
    return _kuiper(*_binary_or_top_label(probs, labels, sample_weight))


def pit_uniformity_test(pit_values: Float[Array, " T"]) -> CalibrationTestResult:
    r"""Kolmogorov–Smirnov test that the PIT values of regression forecasts are uniform.

    **Null:** $u_t = F_t(y_t)$ are independent Uniform[0, 1] (the forecast distributions are
    probabilistically calibrated and continuous). Statistic: $D$ =
    :func:`jcalib.metrics.pit_uniformity`; p-value from the Kolmogorov distribution with
    Stephens' (1970) finite-sample correction, $P(K \ge (\sqrt T + 0.12 + 0.11/\sqrt T)\,D)$,
    $P(K \ge x) = 2\sum_{k\ge1} (-1)^{k-1} e^{-2k^2x^2}$ (within about 0.01 of the exact
    p-value from $T \approx 50$, 0.02 at $T = 20$).

    Args:
        pit_values: PIT values in $[0, 1]$, shape ``(T,)`` (:func:`jcalib.metrics.pit`).

    Returns:
        :class:`CalibrationTestResult` ``(D, p_value)``.

    Examples:
        >>> import jax.numpy as jnp
        >>> r = pit_uniformity_test(jnp.full(50, 0.5))
        >>> round(float(r.statistic), 2), bool(r.p_value < 1e-6)
        (0.5, True)

    References:
        Kolmogorov (1933); Stephens (1970), *Use of the Kolmogorov–Smirnov, Cramér–von Mises and
        related statistics without extensive tables*, JRSS B 32(1), Table 1; Gneiting, Balabdaoui,
        Raftery (2007) (PIT and probabilistic calibration).
    """
    d = pit_uniformity(pit_values)
    T = jnp.shape(pit_values)[0]
    return _kolmogorov(d, jnp.asarray(T, d.dtype))


@jax.jit
def _kolmogorov(d, T):
    rt = jnp.sqrt(T)
    x = (rt + 0.12 + 0.11 / rt) * d
    k = jnp.arange(1, _TERMS + 1, dtype=d.dtype)
    terms = jnp.where(k % 2 == 1, 1, -1).astype(d.dtype) * jnp.exp(-2 * k**2 * x**2)
    # the alternating series is useless near x = 0, where the p-value is 1
    p = jnp.where(x < 0.2, 1, jnp.clip(2 * jnp.sum(terms), 0, 1))
    return CalibrationTestResult(d, p.astype(d.dtype))
