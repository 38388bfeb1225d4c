r"""Kolmogorov–Smirnov and Kuiper tests of calibration (cumulative form), and of PIT uniformity.

Sort the forecasts, $p_{(1)} \le \dots \le p_{(n)}$, and accumulate the residuals in that order:
$$S_k = \frac1W \sum_{j \le k} w_{(j)}\,(y_{(j)} - p_{(j)}),\qquad S_0 = 0 .$$
A calibrated forecaster's cumulative curve stays near 0 (Gupta, Rahimi, Ajanthan, Mensink,
Sminchisescu, Hartley 2021, §3; the reliability diagram's integral, with no binning). The
KS calibration error is $\max_k |S_k|$ and the Kuiper one $\max_k S_k - \min_k S_k$ (both
**normalised**, in $[0, 1]$).

**Ties.** Inside a group of equal forecasts the sort fixes no order, and $S_k$ there depends
on the order the rows came in ($p = (0.3, 0.5, 0.5)$ with $y = (1, 1, 0)$ would give 0.4,
with $y = (1, 0, 1)$ 0.2333). So $S$ is observed only at $k = 0$ and at the **last row of
each group of equal forecasts**: with $v_1 < \dots < v_G$ the distinct forecast values,
$$S^{(g)} = \frac1W\sum_{i : p_i \le v_g} w_i (y_i - p_i),\qquad g = 0, \dots, G,$$
the one place where the running sum is a function of the data as a set of rows; the
statistics are $\max_g |S^{(g)}|$ and $\max_g S^{(g)} - \min_g S^{(g)}$ (0.2333 for both
orders above). With no ties this is the walk of every row, unchanged. (The rows are also
sorted by their residual and variance within a group, so the floating-point sums do not
depend on the row order either.)

Under the null $y_i \sim \mathrm{Bernoulli}(p_i)$ independently, the increments
$D_g = S^{(g)} - S^{(g-1)}$ are the group sums, independent with variances $\sigma_g^2 =
\frac1{W^2}\sum_{p_i = v_g} w_i^2 p_i(1-p_i)$ summing to the total
$\sigma^2 = \frac1{W^2}\sum_i w_i^2 p_i(1-p_i)$, whatever the ties. $S/\sigma$ on the time
scale of its variance tends to a standard Brownian motion $B$ on $[0, 1]$ (Arrieta-Ibarra,
Gujral, Tannen, Tygert, Xu 2022, §2.3), of which the grouped walk sees the $G + 1$ times
$t_g = \sum_{h \le g}\sigma_h^2/\sigma^2$. So with $x = \max|S|/\sigma$ and $r =
(\max S - \min S)/\sigma$ the asymptotic p-values are, writing $Q = 1 - \Phi$,
$$P\big(\sup_{[0,1]} |B| \ge x\big) = 4\sum_{j\ge0} (-1)^j\, Q\big((2j+1)x\big),\qquad
P\big(\sup B - \inf B \ge r\big) = 8\sum_{k \ge 1} (-1)^{k-1}\, k\, Q(kr)$$
(reflection principle; the second is Feller's 1951 law of the range, integrated). A sup over
$G + 1$ of the times is stochastically smaller than over all of $[0, 1]$, and the fewer the
points the smaller: uncorrected, these p-values are conservative, the more so with
heavy ties. As Siegmund
(1985) and Broadie, Glasserman, Kou (1997) do for discretely monitored boundaries, $x$ is
evaluated at $x + 0.5826/\sqrt G$ and $r$ at $r + 2\cdot 0.5826/\sqrt G$ (0.5826 $=
-\zeta(\tfrac12)/\sqrt{2\pi}$; $G$ counts the distinct forecasts held by a row of positive
weight, which is $n$ when there are no ties). The correction is for $G$ Gaussian steps of
**equal** variance $\sigma^2/G$; with unequal ones (a grid forecaster's groups differ in size
and in $p(1-p)$) it takes that average step, and it is first order in $1/\sqrt G$: at small
$G$ it overshoots. For a Gaussian walk of $G$ equal steps, the sizes at nominal 0.05 are
0.097 / 0.182 (KS / Kuiper) at $G = 1$, 0.071 / 0.107 at 2, 0.058 / 0.071 at 5, 0.054 /
0.060 at 10, 0.051 / 0.053 at 30 (200 000 simulated walks each). Last, a floor: both
statistics are at least $|S^{(G)}|$, and $|S^{(G)}|/\sigma$ is $|N(0, 1)|$ in the limit, so
the p-value is at least $2Q(z)$, $z$ being the standardised statistic without the shift. The
tests report $\max(\text{corrected series}, 2Q(z))$, which is exact for a constant forecast
($G = 1$) and brings the Gaussian-walk sizes at 0.05 to 0.052 / 0.054 at $G = 2$ and
0.055 / 0.061 at 3; it binds only below p-values of about 0.03 at $G = 5$, $10^{-3}$ at
$G = 10$ and $10^{-31}$ at $G = 100$, so without ties it changes nothing that matters.
Measured on calibrated data (1000 replications, ``tests/stats/test_cumulative.py``): with
$p \sim U(0, 1)$ the p-values are uniform already at $n = 100$; with forecasts on the grid
$\{0.05, 0.15, \dots, 0.95\}$ ($G = 10$) the sizes at 0.01 / 0.05 / 0.10 are 0.013 / 0.053 /
0.105 (KS) and 0.015 / 0.069 / 0.121 (Kuiper) at $n = 100$, 0.007 / 0.046 / 0.106 and
0.008 / 0.054 / 0.120 at $n = 1000$. With only a few distinct forecasts,
:func:`jcalib.stats.consistency_test` of :func:`ks_calibration_error` gives a resampled
p-value instead (labels redrawn under the null, ties and all).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import ndtr
from jaxtyping import Array, Float, Int

from .._validation import RealArray, binary_or_multiclass_inputs, declare
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
    """Checked inputs as binary forecasts: top-label confidence and whether the top class
    happened for ``(n, C)`` rows."""
    if probs.ndim == 2:
        v, y = probs, labels
        return jnp.max(v, axis=1), (jnp.argmax(v, axis=1).astype(jnp.int32) == y).astype(v.dtype), sample_weight
    return probs, labels, sample_weight


def _cumulative(p, y, w):
    r"""The walk at its observation points, sigma, and Siegmund's shift (in units of sigma).

    Returns ``s`` of shape ``(n + 1,)``: $S_0 = 0$ and, at the last row of each group of equal
    forecasts, $S$ after that group; every other entry is 0 (which never changes $\max|S|$,
    $\max S \ge 0$ or $\min S \le 0$, as $S_0 = 0$ is observed anyway).
    """
    r = w * (y - p)  # the row's step of the walk (times W)
    v = w**2 * p * (1 - p)  # the row's null variance (times W^2)
    # sort by forecast, then by step and variance: rows tied on all three keys are
    # interchangeable, so the sorted sequence, and every sum below to the last bit, does not
    # depend on the order of the rows (with no tied forecasts this is the order of argsort(p))
    ps, rs, vs, ws = jax.lax.sort((p, r, v, w), num_keys=3)
    W = jnp.sum(ws)
    end = jnp.concatenate([ps[1:] != ps[:-1], jnp.ones((1,), bool)])  # last row of its group
    # departs from the row-by-row walk of Gupta et al. (2021): S is observed only where a group
    # of equal forecasts ends, the one place where it does not depend on the order within it
    s = jnp.where(end, jnp.cumsum(rs) / W, 0)
    s = jnp.concatenate([jnp.zeros((1,), s.dtype), s])
    sigma = jnp.sqrt(jnp.sum(vs)) / W
    # G, the observation points that move the walk: groups holding a row of positive weight.
    # A group's positive rows = the running count at its end minus the count before its start.
    count = jnp.cumsum((ws > 0).astype(jnp.int32))
    start = jnp.concatenate([jnp.ones((1,), bool), end[:-1]])
    before = jax.lax.cummax(jnp.where(start, count - (ws > 0).astype(jnp.int32), 0))
    n_points = jnp.sum(end & (count > before)).astype(s.dtype)
    # the walk is observed at G points: Siegmund's correction moves each boundary out by
    # 0.5826 step standard deviations, which is 0.5826 / sqrt(G) in units of sigma when the G
    # steps have equal variance (the module docstring says what unequal steps do)
    shift = _SIEGMUND / jnp.sqrt(jnp.maximum(n_points, 1))
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


def _pvalue(series, stat, sigma, shift):
    """``series`` at the standardised statistic moved out by ``shift``, floored at $2Q(z)$."""
    safe = jnp.where(sigma > 0, sigma, 1)
    z = stat / safe
    # the walk's last point alone has |S_G| / sigma ~ |N(0, 1)|, and both statistics are at
    # least |S_G|: 2 Q(z) is a lower bound of the p-value, and the exact one when G = 1, where
    # the corrected series is far too small (module docstring)
    p = jnp.maximum(series(z + shift), 2 * ndtr(-z))
    # sigma = 0: every forecast is 0 or 1, the null leaves no randomness; any deviation is
    # then impossible under it (p = 0) and none is certain (p = 1)
    return jnp.where(sigma > 0, p, jnp.where(stat > 0, 0, 1)).astype(stat.dtype)


@jax.jit
def _ks(p, y, w):
    s, sigma, shift = _cumulative(p, y, w)
    stat = jnp.max(jnp.abs(s))
    return CalibrationTestResult(stat, _pvalue(_ks_pvalue, stat, sigma, shift))


@jax.jit
def _kuiper(p, y, w):
    s, sigma, shift = _cumulative(p, y, w)
    stat = jnp.max(s) - jnp.min(s)
    # both the maximum and the minimum overshoot: twice the shift
    return CalibrationTestResult(stat, _pvalue(_range_pvalue, stat, sigma, 2 * shift))


@declare(**binary_or_multiclass_inputs())
def ks_calibration_error(probs, labels, *, sample_weight=None) -> Float[Array, ""]:
    r"""KS calibration error $\max_k |S_k|$ of Gupta et al. (2021), **normalised** (see module).

    $S$ is observed at the last row of each group of equal forecasts, so the value does not
    depend on the order of tied rows (module docstring, "Ties").

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


@declare(**binary_or_multiclass_inputs())
def kuiper_calibration_error(probs, labels, *, sample_weight=None) -> Float[Array, ""]:
    r"""Kuiper calibration error $\max_k S_k - \min_k S_k$ (with $S_0 = 0$), **normalised**.

    As :func:`ks_calibration_error`, $S$ is observed at the ends of groups of equal forecasts.

    References:
        Arrieta-Ibarra, Gujral, Tannen, Tygert, Xu (2022), *Metrics of calibration for
        probabilistic predictions*, JMLR 23, §2.
    """
    return _kuiper(*_binary_or_top_label(probs, labels, sample_weight)).statistic


@declare(**binary_or_multiclass_inputs())
def ks_test(
    probs: Float[Array, " n"],
    labels: Int[Array, " n"],
    *,
    sample_weight: Float[Array, " n"] | None = None,
) -> CalibrationTestResult:
    r"""Kolmogorov–Smirnov test of calibration (cumulative form; see the module docstring).

    **Null:** $y_i \sim \mathrm{Bernoulli}(p_i)$ independently (for ``(n, C)`` predictions: the
    top class happens with probability equal to the confidence). Statistic: the KS
    calibration error $\max_k |S_k|$ (Gupta et al. 2021), $S$ observed once per distinct
    forecast; p-value $P(\sup_{[0,1]}|B| \ge \max_k |S_k| / \sigma)$, asymptotic, with
    Siegmund's correction for the $G$ distinct forecasts where $S$ is observed and floored
    at $2Q(\max_k |S_k| / \sigma)$ (module docstring, "Ties").

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


@declare(**binary_or_multiclass_inputs())
def kuiper_test(
    probs: Float[Array, " n"],
    labels: Int[Array, " n"],
    *,
    sample_weight: Float[Array, " n"] | None = None,
) -> CalibrationTestResult:
    r"""Kuiper test of calibration: the range $\max_k S_k - \min_k S_k$ of the cumulative curve.

    **Null:** as :func:`ks_test`. p-value $P(\sup B - \inf B \ge \text{range}/\sigma)$ for a
    standard Brownian motion $B$ on $[0, 1]$ (asymptotic; corrected and floored as in
    :func:`ks_test`, with $S$ observed once per distinct forecast). Unlike the
    KS statistic, the range does not depend on where the curve starts, so it treats
    miscalibration at low and high forecasts alike.

    Returns:
        :class:`CalibrationTestResult` ``(statistic, p_value)``.

    References:
        Kuiper (1960); Arrieta-Ibarra, Gujral, Tannen, Tygert, Xu (2022), JMLR 23, §2.3.
    """
    return _kuiper(*_binary_or_top_label(probs, labels, sample_weight))


@declare(pit_values=RealArray(lo=0, hi=1))
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
