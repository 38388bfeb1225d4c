r"""The arrays a reliability diagram draws, for users who draw their own.

* :func:`calibration_curve`: per bin, the mean forecast, the observed frequency, the bin's
  weight and a Wilson or Clopper–Pearson interval for the frequency; uniform bins from the
  library's one bin rule (the one :func:`jcalib.metrics.binned_ece` uses), or equal-mass bins
  exactly as scikit-learn's ``calibration_curve(strategy="quantile")`` draws them.
* :func:`smooth_calibration_curve`: the kernel regression of the outcomes on the forecasts
  with the reflected Gaussian kernel at smooth ECE's own bandwidth, as ``relplot`` draws it
  (Błasiok, Nakkiran 2023), the forecast density, and a percentile bootstrap band
  (:func:`jcalib.stats.bootstrap`, vmapped, same bandwidth in every resample as relplot's
  bagged smoother).

Multi-class predictions ``(n, C)`` are reduced to their top-label form: confidence
$\max_c p_{ic}$ against the event "the top class is the label" (class-wise curves: pass
``probs[:, c]`` and ``labels == c``).
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import betainc, ndtri
from jaxtyping import Array, Float

from .._validation import (
    BINS,
    Choice,
    Int,
    Key,
    Optional,
    Real,
    binary_or_multiclass_inputs,
    checked_at_the_boundary,
    declare,
)
from ..metrics.binary import bin_index
from ..metrics.smooth import reflected_kernel_sum, smooth_ece
from .resampling import bootstrap

_KDE_EPS = 1e-4  # relplot's KernelSmoother: smoothed outcomes / (smoothed counts + 1e-4)
_MIN_BANDWIDTH = 2.0**-9  # the smallest bandwidth reflected_kernel_sum's buffers hold

__all__ = ["CalibrationCurve", "SmoothCalibrationCurve", "calibration_curve", "smooth_calibration_curve"]


class CalibrationCurve(NamedTuple):
    """Binned reliability curve; entries of empty bins are NaN (and their weight 0).

    Attributes:
        forecast: mean forecast per bin, ``(n_bins,)``.
        frequency: observed frequency of ones per bin.
        weight: total weight per bin.
        low, high: the interval for the frequency at the requested level.
    """

    forecast: Array
    frequency: Array
    weight: Array
    low: Array
    high: Array


class SmoothCalibrationCurve(NamedTuple):
    """Smooth reliability curve on ``n_points`` evaluation points.

    Attributes:
        t: evaluation points, ``linspace(0, 1, n_points)``.
        curve: the kernel regression $\\hat\\mu(t)$ of the outcomes on the forecasts.
        density: the forecast density at ``t`` (integrates to about 1).
        low, high: the pointwise bootstrap band, or ``None`` when no ``key`` was given.
        bandwidth: the kernel bandwidth $\\sigma$ used.
    """

    t: Array
    curve: Array
    density: Array
    low: Array | None
    high: Array | None
    bandwidth: Array


def _binary_or_top_label(probs, labels, sample_weight):
    """Checked inputs as binary forecasts: top-label confidence and whether the top class
    happened for ``(n, C)`` rows."""
    if probs.ndim == 2:
        v, y = probs, labels
        return jnp.max(v, axis=1), (jnp.argmax(v, axis=1).astype(jnp.int32) == y).astype(v.dtype), sample_weight
    return probs, labels, sample_weight


_LEVEL = Real(0, 1, open_lo=True, open_hi=True, static=True)


def _beta_quantile(q, a, b, steps: int = 60):
    """Quantile of Beta(a, b) by bisection on the regularised incomplete beta function."""
    lo, hi = jnp.zeros_like(a), jnp.ones_like(a)

    def body(_, c):
        lo, hi = c
        mid = (lo + hi) / 2
        below = betainc(a, b, mid) < q
        return jnp.where(below, mid, lo), jnp.where(below, hi, mid)

    lo, hi = jax.lax.fori_loop(0, steps, body, (lo, hi))
    return (lo + hi) / 2


def _interval(x, n, z, alpha, kind):
    """Interval for a binomial proportion with ``x`` successes in ``n`` (weights as counts)."""
    safe = jnp.where(n > 0, n, 1)
    ph = x / safe
    if kind == "wilson":
        z2 = z**2
        centre = (ph + z2 / (2 * safe)) / (1 + z2 / safe)
        half = z / (1 + z2 / safe) * jnp.sqrt(ph * (1 - ph) / safe + z2 / (4 * safe**2))
        return jnp.clip(centre - half, 0, 1), jnp.clip(centre + half, 0, 1)
    # Clopper–Pearson: Beta(x, n-x+1) and Beta(x+1, n-x) quantiles, 0 and 1 at the ends
    tiny = jnp.finfo(x.dtype).tiny
    low = jnp.where(x > 0, _beta_quantile(alpha / 2, jnp.maximum(x, tiny), n - x + 1), 0)
    high = jnp.where(x < n, _beta_quantile(1 - alpha / 2, x + 1, jnp.maximum(n - x, tiny)), 1)
    return low, high


def _equal_mass_index(p, w, n_bins):
    r"""scikit-learn's equal-mass bins, weights read as counts: edges at the linearly
    interpolated percentiles ``np.percentile(p, 100 k / K)`` of the sample in which forecast $i$
    appears $w_i$ times, and forecast $p$ in bin $\#\{k \in 1..K-1 : e_k < p\}$
    (``np.searchsorted(edges[1:-1], p)``, side "left")."""
    # numpy's percentile: q = linspace(0, 1, K + 1) * 100 / 100, virtual index h = (n - 1) q,
    # edge = lerp(x[floor h], x[floor h + 1], h - floor h) with numpy's two-sided lerp
    q = jnp.asarray(np.linspace(0.0, 1.0, n_bins + 1)[1:-1] * 100 / 100, p.dtype)
    # sorted by value, ties by weight: the cumulative weights do not depend on the row order
    ps, ws = jax.lax.sort((p, w), num_keys=2)
    cum = jnp.cumsum(ws)
    top = jnp.maximum(cum[-1] - 1, 0)  # the last index of the repeated sample, W - 1
    h = top * q
    lo = jnp.floor(h)
    gamma = h - lo

    def value_at(x):  # the repeated sample's sorted entry at index x: first i with cum_i > x
        i = jnp.searchsorted(cum, jnp.minimum(x, top), side="right")
        return ps[jnp.minimum(i, ps.shape[0] - 1)]

    a, b = value_at(lo), value_at(lo + 1)
    diff = b - a
    edges = jnp.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma)
    return jnp.sum(edges[None, :] < p[:, None], axis=1).astype(jnp.int32)


@eqx.filter_jit
@checked_at_the_boundary  # the forecasts were checked by the public caller: bin_index checks nothing again
def _binned(p, y, w, level, n_bins, interval, strategy):
    idx = bin_index(p, n_bins) if strategy == "uniform" else _equal_mass_index(p, w, n_bins)
    wb = jax.ops.segment_sum(w, idx, num_segments=n_bins)
    fb = jax.ops.segment_sum(w * p, idx, num_segments=n_bins)
    yb = jax.ops.segment_sum(w * y, idx, num_segments=n_bins)
    alpha = 1 - level
    z = ndtri(1 - alpha / 2)
    low, high = _interval(yb, wb, z, alpha, interval)
    nan = jnp.asarray(jnp.nan, p.dtype)
    keep = wb > 0
    safe = jnp.where(keep, wb, 1)
    return CalibrationCurve(
        jnp.where(keep, fb / safe, nan), jnp.where(keep, yb / safe, nan), wb,
        jnp.where(keep, low, nan), jnp.where(keep, high, nan),
    )


@declare(**binary_or_multiclass_inputs(), n_bins=BINS, interval=Choice("wilson", "clopper-pearson"), level=_LEVEL,
         strategy=Choice("uniform", "quantile"))
def calibration_curve(
    probs: Float[Array, " n"],
    labels: Array,
    *,
    n_bins: int = 10,
    sample_weight: Float[Array, " n"] | None = None,
    interval: str = "wilson",
    level: float = 0.95,
    strategy: str = "uniform",
) -> CalibrationCurve:
    r"""Binned reliability curve with per-bin intervals for the observed frequency.

    Bins (``strategy``):

    * ``"uniform"``: $[0, 1/K), \dots, [(K-1)/K, 1]$, the library's bin rule
      (:func:`jcalib.metrics.bin_index`). scikit-learn's uniform bins are closed on the right
      instead, so a forecast exactly on an inner edge $k/K$ lands one bin lower there.
    * ``"quantile"``: equal-mass bins as scikit-learn's
      ``calibration_curve(strategy="quantile")`` makes them (Niculescu-Mizil, Caruana 2005):
      edges $e_k$ at the $k/K$ quantiles of the forecasts by linear interpolation
      (``np.percentile``'s default, Hyndman–Fan type 7: $e_k = x_{(\lfloor h\rfloor)} +
      (h - \lfloor h\rfloor)(x_{(\lfloor h\rfloor + 1)} - x_{(\lfloor h\rfloor)})$,
      $h = (n - 1)k/K$, $x_{(0)} \le \dots \le x_{(n-1)}$ the sorted forecasts), and the
      forecast $p$ in bin $\#\{k = 1, \dots, K-1 : e_k < p\}$ (``np.searchsorted`` on the
      inner edges): $[e_0, e_1], (e_1, e_2], \dots$. Edges are not deduplicated: tied
      forecasts share a bin and a heavy tie leaves bins empty. Weights are read as counts —
      forecast $i$ repeated $w_i$ times, $n$ replaced by the total weight — so integer weights
      give scikit-learn's curve of the repeated sample (non-integer weights interpolate the same
      rule). This is not :func:`jcalib.metrics.quantile_bin_index` (the ``"quantile"`` bins of
      the binned metrics, $\lfloor K\,W(<p)/W\rfloor$): the two agree on many samples but not
      all — of 5 distinct forecasts in 3 bins, scikit-learn's rule puts the third in the
      middle bin and the fourth in the last, the weighted-rank rule both in the middle.

    In bin $b$ with weight $n_b$ and $x_b$ weighted ones, the frequency
    $\hat\theta_b = x_b / n_b$ gets (weights read as counts)

    * ``"wilson"``: $\frac{\hat\theta + z^2/2n}{1 + z^2/n} \pm \frac{z}{1 + z^2/n}
      \sqrt{\frac{\hat\theta(1-\hat\theta)}{n} + \frac{z^2}{4n^2}}$ (Wilson 1927), good
      coverage even in sparse bins;
    * ``"clopper-pearson"``: the exact interval $[B_{\alpha/2}(x, n-x+1),\,
      B_{1-\alpha/2}(x+1, n-x)]$ of Beta quantiles (Clopper, Pearson 1934), conservative.

    These intervals treat the bin's forecasts as given; they say how well the frequency in
    the bin is known, not whether the bin is calibrated.

    The result keeps all $K$ entries (fixed shapes, so it jits and vmaps); scikit-learn's
    ``(prob_true, prob_pred)``, which drops empty bins, are the non-empty entries:
    ``keep = c.weight > 0; c.frequency[keep], c.forecast[keep]``.

    Args:
        probs: forecasts ``(n,)`` in $[0, 1]$, or ``(n, C)`` (top-label form).
        labels: outcomes ``(n,)``.
        n_bins: number of bins $K$ (static).
        sample_weight: optional non-negative weights.
        interval: ``"wilson"`` or ``"clopper-pearson"``.
        level: confidence level.
        strategy: ``"uniform"`` or ``"quantile"`` (equal-mass bins).

    Returns:
        :class:`CalibrationCurve` ``(forecast, frequency, weight, low, high)``.

    Examples:
        >>> import jax.numpy as jnp
        >>> c = calibration_curve(jnp.array([0.1, 0.15, 0.9]), jnp.array([0, 1, 1]), n_bins=2)
        >>> [round(float(v), 3) for v in c.frequency], c.weight.tolist()
        ([0.5, 1.0], [2.0, 1.0])
        >>> p = jnp.array([0.1, 0.2, 0.3, 0.4, 0.65, 0.7, 0.8, 0.9, 1.0])
        >>> c = calibration_curve(p, jnp.array([0, 0, 0, 0, 1, 1, 1, 1, 1]), n_bins=3, strategy="quantile")
        >>> c.weight.tolist(), [round(float(v), 3) for v in c.forecast]
        ([3.0, 3.0, 3.0], [0.2, 0.583, 0.9])

    References:
        Wilson (1927), *Probable inference, the law of succession, and statistical
        inference*; Clopper, Pearson (1934), *The use of confidence or fiducial limits
        illustrated in the case of the binomial*; Bröcker, Smith (2007) (intervals on
        reliability diagrams); Niculescu-Mizil, Caruana (2005), *Predicting good probabilities
        with supervised learning*, §4 (reliability diagrams); scikit-learn's
        ``sklearn.calibration.calibration_curve``; Hyndman, Fan (1996), *Sample quantiles in
        statistical packages* (type 7).
    """
    p, y, w = _binary_or_top_label(probs, labels, sample_weight)
    return _binned(p, y, w, jnp.asarray(level, p.dtype), n_bins, interval, strategy)


class _SmoothCurve(eqx.Module):
    """The kernel regression at a fixed bandwidth, on ``n_points`` points (a bootstrap statistic)."""

    sigma: Array
    n_points: int = eqx.field(static=True)

    def __call__(self, p, y, sample_weight=None):
        w = jnp.ones_like(p) if sample_weight is None else sample_weight
        return _smooth_parts(p, y, w, self.sigma, self.n_points)[0]


def _smooth_parts(p, y, w, sigma, n_points):
    # relplot KernelSmoother with ReflectedGaussianKernel(sigma): smoothed outcomes over the
    # smoothed counts + 1e-4, interpolated from relplot's kernel grid onto the points t
    t = jnp.linspace(0, 1, n_points, dtype=p.dtype)
    ys = reflected_kernel_sum(p, w * y, sigma, t)
    counts = reflected_kernel_sum(p, w, sigma, t)
    return ys / (counts + _KDE_EPS), counts / jnp.sum(w), t


@eqx.filter_jit
def _smooth_curve(p, y, w, sigma, n_points):
    return _smooth_parts(p, y, w, sigma, n_points)


@declare(**binary_or_multiclass_inputs(), key=Key(optional=True, single=True),  # None: no band, nothing drawn
         n_resamples=Int(1, 2**24, bytes_per=8 * 200, what="its bootstrap curves"), level=_LEVEL,
         n_points=Int(2, 2**20, bytes_per=8 * 64, what="its curve"), bandwidth=Optional(Real(_MIN_BANDWIDTH, 1, static=True)))
def smooth_calibration_curve(
    probs: Float[Array, " n"],
    labels: Array,
    *,
    sample_weight: Float[Array, " n"] | None = None,
    key: Array | None = None,
    n_resamples: int = 200,
    level: float = 0.95,
    n_points: int = 200,
    bandwidth: float | None = None,
) -> SmoothCalibrationCurve:
    r"""Smooth reliability curve (Błasiok, Nakkiran 2023) with a bootstrap band.

    $$\hat\mu(t) = \frac{\sum_i w_i y_i K_\sigma(t, p_i)}{\sum_i w_i K_\sigma(t, p_i) + 10^{-4}},
    \qquad \hat\delta(t) = \frac{\sum_i w_i K_\sigma(t, p_i)}{\sum_i w_i},$$
    with $K_\sigma$ the Gaussian kernel reflected at 0 and 1 on relplot's grid, and $\sigma$
    smooth ECE's fixed-point bandwidth (:func:`jcalib.metrics.smooth_ece`) unless
    ``bandwidth`` is given — exactly what ``relplot`` plots. The band holds the pointwise
    $\frac{1-\text{level}}2$ and $\frac{1+\text{level}}2$ quantiles of $\hat\mu$ over
    ``n_resamples`` bootstrap resamples at the same $\sigma$ (relplot: 200 bagged smoothers).

    Args:
        probs: forecasts ``(n,)`` in $[0, 1]$, or ``(n, C)`` (top-label form).
        labels: outcomes ``(n,)``.
        sample_weight: optional non-negative weights (multiplicities).
        key: PRNG key for the bootstrap band, or ``None`` (the default) for the curve alone:
            nothing is drawn and ``low``, ``high`` are ``None``.
        n_resamples: bootstrap resamples for the band (static).
        level: level of the band.
        n_points: evaluation points (static; relplot uses 200).
        bandwidth: kernel bandwidth $\sigma \ge 2^{-9}$ (default: smooth ECE's).

    Returns:
        :class:`SmoothCalibrationCurve` ``(t, curve, density, low, high, bandwidth)``.

    Examples:
        >>> import jax.numpy as jnp
        >>> p = jnp.linspace(0, 1, 101); y = (p > 0.5).astype(jnp.int32)
        >>> c = smooth_calibration_curve(p, y)
        >>> bool(c.curve[0] < 0.2 and c.curve[-1] > 0.8), c.low is None
        (True, True)

    References:
        Błasiok, Nakkiran (2023), *Smooth ECE: principled reliability diagrams via kernel
        smoothing*; the ``relplot`` package (``relplot.prepare_rel_diagram``).
    """
    p, y, w = _binary_or_top_label(probs, labels, sample_weight)
    if bandwidth is None:
        sigma = smooth_ece(p, y, sample_weight=w, return_bandwidth=True)[1]
    else:
        sigma = jnp.asarray(bandwidth, p.dtype)
    curve, density, t = _smooth_curve(p, y, w, sigma, n_points)
    low = high = None
    if key is not None:
        band = bootstrap(
            _SmoothCurve(sigma, n_points), p, y, key=key, n_resamples=n_resamples,
            level=level, sample_weight=None if sample_weight is None else w,
        )
        low, high = band.low, band.high
    return SmoothCalibrationCurve(t, curve, density, low, high, sigma)
