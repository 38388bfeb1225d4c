r"""Calibration and accuracy metrics of predictive distributions for real outcomes (Marx et al.
2024, §6.1, and common batch metrics).

Marx, Kuleshov, Ermon et al. (2024), *Calibrated Probabilistic Forecasts for
Arbitrary Sequences* (TMLR).

A forecast of a real outcome $y_t$ is a distribution $p_t$ with CDF $F_t$. Most calibration
metrics here are functions of the **PIT values** $u_t = F_t(y_t)$ (probability integral
transform): a forecaster is quantile-calibrated when $\Pr(u_t \le q) = q$ for every level $q$.
So the functions take PIT values (compute them with :func:`pit`, or ``dist.cdf(y)``) and are
pure ``jax.numpy`` of arrays: jit- and vmap-able, differentiable where the quantity is (not the
indicator counts).

| function | definition | normalised? |
| --- | --- | --- |
| :func:`quantile_frequencies` | $f_q = \sum_t w_t 1[u_t \le q] / \sum_t w_t$ | yes (a frequency) |
| :func:`quantile_calibration_error` ``form="sum"`` | $\sum_{q \in Q} (f_q - q)^2$ (Marx et al. 2024, §6) | a **sum** over the 99 levels |
| :func:`quantile_calibration_error` ``form="mean_abs"`` | $\frac{1}{|Q|}\sum_{q\in Q} |f_q - q|$ | mean over levels |
| :func:`pit_uniformity` | Kolmogorov–Smirnov $\sup_u |\hat G(u) - u|$ of the PIT values | yes |
| :func:`pit_histogram` | bin frequencies of the PIT values | yes (sums to 1) |
| :func:`central_interval_coverage` | share of $y_t$ inside the central ``level`` interval | yes |
| :func:`miscalibration_area` | area between the observed and expected proportion curves (Chung et al. 2021) | yes, in $[0, 1/2]$ |
| :func:`smape` | $\frac1T\sum_t |y_t - \hat y_t| / ((|y_t| + |\hat y_t|)/2)$ (Marx et al. 2024, §6) | yes, in $[0, 2]$ |
| :func:`pinball_loss` | mean pinball loss of predicted quantiles | yes |
| :func:`crps_score` | mean CRPS, closed form by the distribution's own ``crps`` | yes |

$Q = \{0.01, 0.02, \dots, 0.99\}$ by default (:data:`QCE_LEVELS`). For a calibrated forecaster
with i.i.d. PIT values, $\mathbb E[f_q] = q$ and $\mathrm{Var}[f_q] = q(1-q)/T$, so the sum-form
QCE has expectation $\sum_q q(1-q)/T \approx 16.665/T$ — it is not zero at finite $T$ (jcalib's
computation; the paper does not state it); :func:`qce_calibrated_expectation` returns that value.
Input checks: concrete inputs at the Python boundary (``ValueError`` naming the argument);
under ``jit``/``vmap``/``grad``, finite outcomes, predictions and PIT values, and non-negative finite weights are checked in the graph
with ``eqx.error_if`` unless ``jcalib.config.checks(False)`` was in force at trace time.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ..core.keys import MAX_ROUNDS
from .._validation import (
    BINS, Choice, Custom, Distribution, Int, Optional, Real, RealArray, Weights, declare, in_graph, to_device,
)
from ..scoring import pinball

__all__ = [
    "QCE_LEVELS",
    "central_interval_coverage",
    "crps_score",
    "miscalibration_area",
    "pinball_loss",
    "pit",
    "pit_histogram",
    "pit_uniformity",
    "qce_calibrated_expectation",
    "quantile_calibration_error",
    "quantile_frequencies",
    "smape",
]

#: The 99 test levels of Marx et al. (2024), §6: 0.01, 0.02, …, 0.99 (as float64 NumPy; cast on use).
QCE_LEVELS = np.round(np.arange(1, 100) / 100.0, 2)


# The declared inputs of the PIT functions: PIT values in [0, 1] (no NaN), 1-D and non-empty,
# weights of their length (ones by default, a positive total), levels in [0, 1].
_PIT = dict(pit_values=RealArray(lo=0, hi=1), sample_weight=Weights(length_of="pit_values", fill=True))
_LEVELS = Optional(RealArray(lo=0, hi=1))


def _levels(levels, dtype):
    """Checked levels (or the default :data:`QCE_LEVELS`) in ``dtype``."""
    return jnp.asarray(QCE_LEVELS if levels is None else levels).astype(dtype)


@declare(dist=Distribution("cdf"), y=RealArray())
def pit(dist: Any, y: Float[Array, " T"]) -> Float[Array, " T"]:
    r"""PIT values $u_t = F_t(y_t)$ of a batch of forecasts.

    Args:
        dist: a distribution module (``jcalib.distributions``) of batch shape ``(T,)`` (one
            forecast per round) or ``()`` (one forecast for every round), with a ``cdf`` method.
        y: outcomes, shape ``(T,)``.

    Returns:
        ``(T,)`` values in [0, 1].
    """
    return dist.cdf(y)


@declare(**_PIT, levels=_LEVELS)
def quantile_frequencies(
    pit_values: Float[Array, " T"],
    *,
    levels: Float[Array, " Q"] | None = None,
    sample_weight: Float[Array, " T"] | None = None,
) -> Float[Array, " Q"]:
    r"""The reliability curve: $f_q = \sum_t w_t\,1[u_t \le q] / \sum_t w_t$ for each level $q$.

    Marx et al. (2024), §6, call $f_{q,T}$ "the frequency of the event $F_{p_t}(y_t) \le q$ up to day T".
    A quantile-calibrated forecaster has $f_q \approx q$.

    Args:
        pit_values: $u_t = F_t(y_t)$, shape ``(T,)``.
        levels: the levels $q$ (default :data:`QCE_LEVELS`).
        sample_weight: optional non-negative weights, shape ``(T,)``.

    Returns:
        ``(Q,)`` frequencies (normalised by the total weight).

    Example:
        >>> import jax.numpy as jnp
        >>> quantile_frequencies(jnp.array([0.1, 0.4, 0.6, 0.9]), levels=jnp.array([0.5])).tolist()
        [0.5]
    """
    u, w = pit_values, sample_weight
    q = _levels(levels, u.dtype)
    hit = (u[None, :] <= q[:, None]).astype(u.dtype)
    return hit @ w / jnp.sum(w)


@declare(**_PIT, levels=_LEVELS, form=Choice("sum", "mean_abs"))
def quantile_calibration_error(
    pit_values: Float[Array, " T"],
    *,
    levels: Float[Array, " Q"] | None = None,
    sample_weight: Float[Array, " T"] | None = None,
    form: str = "sum",
) -> Float[Array, ""]:
    r"""Quantile calibration error (QCE, ``form="sum"``) or mean absolute coverage gap (MACE, ``form="mean_abs"``) of a sequence of forecasts.

    ``form="sum"``, QCE (Marx et al. 2024, §6, the number in its Table 1):
    $$\mathrm{QCE} = \sum_{q \in Q} (f_{q,T} - q)^2,\qquad Q = \{0.01, \dots, 0.99\},$$
    a **sum** over the levels of squared gaps (not a mean; a calibrated i.i.d. forecaster
    scores about $16.665/T$, see :func:`qce_calibrated_expectation`).

    ``form="mean_abs"``, MACE: $\frac{1}{|Q|}\sum_{q \in Q} |f_{q,T} - q|$, the mean absolute
    coverage gap (the "calibration error" of Kuleshov, Fenner, Ermon 2018 with absolute instead
    of squared gaps; Chung et al. 2021's mean absolute calibration error), normalised, in
    [0, 1] — what :func:`jcalib.losses.quantile_calibration_loss` smooths, there computed from
    predicted quantiles instead of PIT values.

    Args:
        pit_values: $u_t = F_t(y_t)$, shape ``(T,)``.
        levels: the levels (default :data:`QCE_LEVELS`).
        sample_weight: optional weights, shape ``(T,)``.
        form: ``"sum"`` or ``"mean_abs"``.

    Returns:
        Scalar.

    Example:
        >>> import jax.numpy as jnp
        >>> u = (jnp.arange(100) + 0.5) / 100   # perfectly spread PIT values
        >>> round(float(quantile_calibration_error(u)), 6)
        0.0
    """
    u, w = pit_values, sample_weight
    q = _levels(levels, u.dtype)
    gap = quantile_frequencies(u, levels=q, sample_weight=w) - q
    return jnp.sum(gap**2) if form == "sum" else jnp.mean(jnp.abs(gap))


def _host_levels(levels, name, bound):
    if levels is None:
        return None
    if isinstance(levels, jax.core.Tracer):
        raise TypeError(f"`{name}` must be concrete (the expectation is a Python float), not a traced value")
    return np.asarray(RealArray(lo=0, hi=1).check(levels, name, bound), np.float64)


@declare(T=Int(1, MAX_ROUNDS, what="rounds within play's horizon"), levels=Custom(_host_levels, "concrete levels in [0, 1]"))
def qce_calibrated_expectation(T: int, *, levels: Float[Array, " Q"] | None = None) -> float:
    r"""$\mathbb E[\mathrm{QCE}] = \sum_{q} q(1-q)/T$ for $T$ i.i.d. uniform PIT values (sum form).

    With the default 99 levels this is $16.665/T$: the floor below which no
    forecaster's QCE is meaningfully "better calibrated" at horizon $T$.

    Example:
        >>> round(qce_calibrated_expectation(1000), 6)
        0.016665
    """
    q = np.asarray(QCE_LEVELS if levels is None else levels, np.float64)
    return float(np.sum(q * (1 - q)) / T)


@declare(pit_values=RealArray(lo=0, hi=1))
def pit_uniformity(pit_values: Float[Array, " T"]) -> Float[Array, ""]:
    r"""Kolmogorov–Smirnov distance of the PIT values from Uniform[0, 1]:
    $D = \sup_u |\hat G_T(u) - u| = \max_i \max(i/T - u_{(i)},\; u_{(i)} - (i-1)/T)$
    with $u_{(1)} \le \dots \le u_{(T)}$ sorted (the statistic of ``scipy.stats.kstest``).

    Normalised, in [0, 1]; $\sqrt T\, D$ has the Kolmogorov distribution under uniformity
    (reject at 5% when $\sqrt T D > 1.358$ for large $T$).

    Example:
        >>> import jax.numpy as jnp
        >>> float(pit_uniformity(jnp.array([0.5])))
        0.5
    """
    u = pit_values
    return _pit_uniformity(u, to_device(np.asarray(u.shape[0], u.dtype)))


@jax.jit  # one program per shape: run operation by operation, a first call compiled nine
def _pit_uniformity(u, n):
    # n is an argument, not a constant: XLA turns a division by a constant into a product with
    # its reciprocal, one ulp off the division the operation-by-operation code made
    s = jnp.sort(u)
    i = jnp.arange(1, u.shape[0] + 1, dtype=u.dtype)
    return jnp.max(jnp.maximum(i / n - s, s - (i - 1) / n))


@declare(**_PIT, n_bins=BINS)
def pit_histogram(
    pit_values: Float[Array, " T"],
    *,
    n_bins: int = 10,
    sample_weight: Float[Array, " T"] | None = None,
) -> Float[Array, " n_bins"]:
    r"""Share of (weighted) PIT values in each of ``n_bins`` equal bins of [0, 1]
    (bins $[k/n, (k+1)/n)$, the last one closed). Sums to 1; a calibrated forecaster's
    histogram is flat at $1/n$; a U shape means over-confidence, a hump under-confidence.

    Example:
        >>> import jax.numpy as jnp
        >>> pit_histogram(jnp.array([0.1, 0.2, 0.7, 1.0]), n_bins=2).tolist()
        [0.5, 0.5]
    """
    u, w = pit_values, sample_weight
    idx = jnp.clip(jnp.floor(u * n_bins).astype(jnp.int32), 0, n_bins - 1)
    counts = jax.ops.segment_sum(w, idx, num_segments=n_bins)
    return counts / jnp.sum(w)


@declare(**_PIT, level=Real(0, 1, open_lo=True, open_hi=True))
def central_interval_coverage(
    pit_values: Float[Array, " T"],
    *,
    level: float = 0.9,
    sample_weight: Float[Array, " T"] | None = None,
) -> Float[Array, ""]:
    r"""Share of outcomes inside the forecasts' central ``level`` interval
    $[F_t^{-1}(\frac{1-c}{2}), F_t^{-1}(\frac{1+c}{2})]$, computed from PIT values as
    $\sum_t w_t 1[\frac{1-c}{2} \le u_t \le \frac{1+c}{2}] / \sum_t w_t$ (the same event for a
    continuous, strictly increasing CDF on the interval). A calibrated forecaster covers ≈ c.

    Example:
        >>> import jax.numpy as jnp
        >>> float(central_interval_coverage(jnp.array([0.01, 0.5, 0.97, 0.6]), level=0.9))
        0.5
    """
    u, w = pit_values, sample_weight
    lo, hi = (1 - level) / 2, (1 + level) / 2
    inside = ((u >= lo) & (u <= hi)).astype(u.dtype)
    return jnp.sum(w * inside) / jnp.sum(w)


@declare(**_PIT, n_levels=Int(2, 2**20, bytes_per=4 * 64, what="its level grid"), kind=Choice("interval", "quantile"))
def miscalibration_area(
    pit_values: Float[Array, " T"],
    *,
    n_levels: int = 100,
    kind: str = "interval",
    sample_weight: Float[Array, " T"] | None = None,
) -> Float[Array, ""]:
    r"""Miscalibration area: the area between a forecaster's calibration curve and the diagonal
    (Chung, Char, Guo, Schneider, Neiswanger 2021, *Uncertainty Toolbox*, the
    ``miscalibration_area`` of its calibration metrics).

    On the grid of expected proportions $\ell_k = k/(K-1)$, $k = 0, \dots, K-1$
    ($K$ = ``n_levels``; ``np.linspace(0, 1, K)``), the observed proportion is
    $$o_k = \frac{\sum_t w_t\,1[|2u_t - 1| \le \ell_k]}{\sum_t w_t} \quad (\text{``"interval"``}),
    \qquad o_k = \frac{\sum_t w_t\,1[u_t \le \ell_k]}{\sum_t w_t} \quad (\text{``"quantile"``}),$$
    the share of outcomes inside the central interval of level $\ell_k$, or below the forecast's
    $\ell_k$-quantile (Kuleshov, Fenner, Ermon 2018's calibration curve). The area is the
    integral of $|d(\ell)|$, $d$ the piecewise-linear interpolation of $d_k = o_k - \ell_k$:
    on each segment of width $h$, $h\,|d_k + d_{k+1}|/2$ when $d_k, d_{k+1}$ do not change sign,
    and the two triangles $h\,(d_k^2 + d_{k+1}^2) / (2(|d_k| + |d_{k+1}|))$ when the curve crosses
    the diagonal (uncertainty-toolbox's ``trapezoid_area`` with crossings). Normalised, in
    $[0, 1/2]$; 0 for a calibrated curve. As $K \to \infty$ it tends to
    $\int_0^1 |o(\ell) - \ell|\,d\ell$, the limit of the mean absolute calibration error
    (:func:`quantile_calibration_error` with ``form="mean_abs"``).

    From uncertainty-toolbox's inputs: a Gaussian forecast with mean $\mu_t$ and standard
    deviation $\sigma_t$ has PIT value $u_t = \Phi((y_t - \mu_t)/\sigma_t)$ (:func:`pit` of a
    ``jcalib.distributions.Gaussian``), and its central interval of level $\ell$,
    $\mu_t \pm \sigma_t\,\Phi^{-1}(\tfrac12 + \tfrac\ell2)$, contains $y_t$ iff
    $|2u_t - 1| \le \ell$ — so both kinds give uncertainty-toolbox's area; any other forecast
    distribution enters through its PIT values. (uncertainty-toolbox's ``"quantile"``
    proportions count $(\mu_t - y_t)/\sigma_t \le \Phi^{-1}(\ell)$, i.e. $u_t \ge 1 - \ell$, the
    mirror image of $o_k$ above; on the symmetric grid the two curves enclose the same area.)

    Args:
        pit_values: $u_t = F_t(y_t)$, shape ``(T,)``.
        n_levels: the number $K \ge 2$ of grid points (uncertainty-toolbox's ``num_bins``,
            default 100; static).
        kind: ``"interval"`` (central intervals, uncertainty-toolbox's default) or
            ``"quantile"``.
        sample_weight: optional non-negative weights, shape ``(T,)``.

    Returns:
        Scalar in $[0, 1/2]$.

    Example:
        >>> import jax.numpy as jnp
        >>> u = jnp.full(4, 0.5)   # every outcome at the median: intervals far too wide
        >>> round(float(miscalibration_area(u, n_levels=3)), 6)
        0.5

    References:
        Y. Chung, I. Char, H. Guo, J. Schneider, W. Neiswanger (2021), *Uncertainty Toolbox: an
        open-source library for assessing, visualizing, and improving uncertainty
        quantification* (the average calibration curve and the miscalibration area);
        V. Kuleshov, N. Fenner, S. Ermon (2018), *Accurate uncertainties for deep learning
        using calibrated regression* (the calibration curve of a regressor).
    """
    u, w = pit_values, sample_weight
    return _miscalibration_area(u, w, n_levels, kind)


@jax.jit(static_argnames=("n_levels", "kind"))
def _miscalibration_area(u, w, n_levels, kind):
    grid = jnp.asarray(np.linspace(0.0, 1.0, n_levels), u.dtype)
    stat = jnp.abs(2 * u - 1) if kind == "interval" else u
    hit = (stat[None, :] <= grid[:, None]).astype(u.dtype)
    d = hit @ w / jnp.sum(w) - grid
    h = jnp.diff(grid)
    dl, dr = d[:-1], d[1:]
    same = dl * dr >= 0
    spread = jnp.abs(dl) + jnp.abs(dr)
    # where the curve crosses the diagonal, spread > 0; elsewhere the divisor is a dummy 1
    crossing = h * (dl**2 + dr**2) / (2 * jnp.where(same, 1, spread))
    return jnp.sum(jnp.where(same, h * jnp.abs(dl + dr) / 2, crossing))


def _real_pair(pred, y):
    """Checked predictions and outcomes in one float dtype."""
    dt = jnp.result_type(y.dtype, pred.dtype)
    return y.astype(dt), pred.astype(dt)


@declare(y_pred=RealArray(), y=RealArray(length_of="y_pred"), sample_weight=Weights(length_of="y", fill=True))
def smape(
    y_pred: Float[Array, " T"],
    y: Float[Array, " T"],
    *,
    sample_weight: Float[Array, " T"] | None = None,
) -> Float[Array, ""]:
    r"""Symmetric mean absolute percentage error (Marx et al. 2024, §6):
    $$\mathrm{SMAPE} = \frac1T \sum_t \frac{|y_t - \hat y_t|}{(|y_t| + |\hat y_t|)/2},$$
    with $\hat y_t$ (``y_pred``, predictions first) the mean of the forecast $p_t$. Normalised, in $[0, 2]$. A round with
    $y_t = \hat y_t = 0$ scores 0 (the 0/0 is taken as a perfect forecast); a round with
    $y_t = 0 \ne \hat y_t$ scores 2, whatever $\hat y_t$ — so series with many zeros (a single
    wind site's calm hours) have a large SMAPE that no forecaster can lower.

    Example:
        >>> import jax.numpy as jnp
        >>> float(smape(jnp.array([3.0, 0.0]), jnp.array([1.0, 0.0])))
        0.5
    """
    y, p = _real_pair(y_pred, y)
    w = sample_weight.astype(y.dtype)
    den = (jnp.abs(y) + jnp.abs(p)) / 2
    num = jnp.abs(y - p)
    term = jnp.where(den > 0, num / jnp.where(den > 0, den, 1), 0)
    return jnp.sum(w * term) / jnp.sum(w)


@declare(quantiles=RealArray(ndim=2), y=RealArray(length_of="quantiles"), levels=RealArray(lo=0, hi=1),
         sample_weight=Weights(length_of="y", fill=True))
def pinball_loss(
    quantiles: Float[Array, "T Q"],
    y: Float[Array, " T"],
    levels: Float[Array, " Q"],
    *,
    sample_weight: Float[Array, " T"] | None = None,
) -> Float[Array, ""]:
    r"""Mean pinball (quantile) loss over rounds and levels:
    $\frac{1}{|Q|}\sum_{\alpha\in Q} \frac{\sum_t w_t\,\rho_\alpha(y_t - \hat q_{t,\alpha})}{\sum_t w_t}$,
    $\rho_\alpha(u) = u(\alpha - 1[u<0])$ (:func:`jcalib.scoring.pinball`). Twice its average
    over all levels in (0, 1) is the CRPS, so with many levels it approximates
    :func:`crps_score` / 2.

    Args:
        quantiles: predicted quantiles $\hat q_{t,\alpha}$, shape ``(T, Q)``.
        y: outcomes, shape ``(T,)``.
        levels: the levels $\alpha$, shape ``(Q,)``.
        sample_weight: optional weights, shape ``(T,)``.

    Example:
        >>> import jax.numpy as jnp
        >>> round(float(pinball_loss(jnp.array([[0.0]]), jnp.array([1.0]), jnp.array([0.9]))), 6)
        0.9
    """
    y, qs = _real_pair(quantiles, y)
    lv = _levels(levels, y.dtype)
    if qs.ndim != 2 or qs.shape[1] != lv.shape[0]:
        raise ValueError(f"quantiles must have shape (T, {lv.shape[0]}), got {tuple(qs.shape)}")
    w = sample_weight.astype(y.dtype)
    loss = pinball(qs, y[:, None], lv[None, :])
    return jnp.mean(w @ loss) / jnp.sum(w)


@declare(dist=Distribution("crps"), y=RealArray(), sample_weight=Weights(length_of="y", fill=True))
def crps_score(dist: Any, y: Float[Array, " T"], *, sample_weight: Float[Array, " T"] | None = None) -> Float[Array, ""]:
    r"""Mean continuous ranked probability score $\frac{\sum_t w_t\,\mathrm{CRPS}(F_t, y_t)}{\sum_t w_t}$,
    $\mathrm{CRPS}(F, y) = \int (F(z) - 1[y \le z])^2\,dz$, each term in closed form by the
    distribution's own ``crps`` (piecewise-constant densities and Gaussians in
    :mod:`jcalib.distributions`, through :func:`jcalib.scoring.crps`). Lower is better; in the
    outcome's units.

    Args:
        dist: a distribution module of batch shape ``(T,)`` or ``()``.
        y: outcomes, shape ``(T,)``.
        sample_weight: optional weights.
    """
    from ..scoring import crps as _crps

    s = _crps(dist, y)
    # a distribution built from bad (traced) parameters gives a non-finite score: refuse it
    s = in_graph(s, ~jnp.all(jnp.isfinite(s)), "dist gives a non-finite CRPS (are its parameters finite?)")
    w = sample_weight.astype(s.dtype)
    return jnp.sum(w * s) / jnp.sum(w)
