"""Figures people would rather look at than read: reliability diagrams and error-vs-T rates for
binary forecasts; for forecasts of real outcomes, the quantile-calibration (reliability) curve
and the PIT histogram, each with a band over runs (they take PIT values $u_t = F_t(y_t)$,
:func:`jcalib.metrics.pit`, of shape ``(T,)`` or ``(S, T)`` for ``S`` runs, and draw the median
and shade the range between the ``band`` quantiles across runs).

Functions take plain arrays, draw on a given matplotlib ``Axes`` (or a new one) and return it.
matplotlib is imported lazily, with the non-interactive Agg backend when no display is set.
"""

from __future__ import annotations

import os
from typing import Callable, Mapping, Sequence

import numpy as np

from .metrics.regression import QCE_LEVELS

__all__ = ["pit_histogram_plot", "quantile_reliability_curve", "rate_plot", "reliability_diagram", "save"]


def _axes(ax):
    if ax is not None:
        return ax
    import matplotlib

    if not os.environ.get("DISPLAY"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(4.5, 4))
    return ax


def reliability_diagram(probs, labels, n_bins: int = 10, *, ax=None, label: str | None = None, sample_weight=None):
    """Observed frequency against mean forecast in ``n_bins`` equal-width bins.

    Marker area is proportional to the bin's mass; the diagonal is perfect calibration.

    Args:
        probs: forecasts of a binary event, shape ``(n,)``, in [0, 1].
        labels: outcomes in {0, 1}, shape ``(n,)``.
        n_bins: number of equal-width bins on [0, 1].
        ax: a matplotlib ``Axes`` to draw on (default: a new figure).
        label: legend label.
        sample_weight: optional non-negative weights (e.g. counts of a grid summary).

    Returns:
        The ``Axes``.
    """
    p = np.asarray(probs, dtype=float).ravel()
    y = np.asarray(labels, dtype=float).ravel()
    w = np.ones_like(p) if sample_weight is None else np.asarray(sample_weight, dtype=float).ravel()
    if p.shape != y.shape or p.shape != w.shape:
        raise ValueError(f"probs, labels and sample_weight must have one shape, got {p.shape}, {y.shape}, {w.shape}")
    bins = np.clip((p * n_bins).astype(int), 0, n_bins - 1)
    mass = np.bincount(bins, w, n_bins)
    mean_p = np.bincount(bins, w * p, n_bins)
    mean_y = np.bincount(bins, w * y, n_bins)
    keep = mass > 0
    ax = _axes(ax)
    ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--")
    sizes = 300 * mass[keep] / max(mass.sum(), 1)
    (line,) = ax.plot(mean_p[keep] / mass[keep], mean_y[keep] / mass[keep], "-", lw=1, label=label)
    ax.scatter(mean_p[keep] / mass[keep], mean_y[keep] / mass[keep], s=sizes, alpha=0.6, color=line.get_color())
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="forecast", ylabel="observed frequency", aspect="equal")
    if label:
        ax.legend(loc="upper left", fontsize="small")
    return ax


def rate_plot(
    T: Sequence[float],
    series: Mapping[str, Sequence[float]],
    *,
    bands: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
    bound: Callable[[np.ndarray], np.ndarray] | None = None,
    bound_label: str = "bound",
    ax=None,
    ylabel: str = "error",
):
    """An error against the horizon T on log–log axes, one line per series.

    Args:
        T: horizons (x axis).
        series: name -> values at each T (e.g. the median over seeds).
        bands: optional name -> (low, high) shaded around the line (e.g. min and max).
        bound: optional function of T drawn as a dashed reference (e.g. ``2√T+1``).
        ax: a matplotlib ``Axes`` (default: a new figure).
        ylabel: y-axis label.

    Returns:
        The ``Axes``.
    """
    T = np.asarray(T, dtype=float)
    ax = _axes(ax)
    for name, values in series.items():
        (line,) = ax.loglog(T, np.asarray(values, dtype=float), "o-", ms=3, label=name)
        if bands and name in bands:
            lo, hi = bands[name]
            ax.fill_between(T, lo, hi, color=line.get_color(), alpha=0.15, lw=0)
    if bound is not None:
        tt = np.geomspace(T.min(), T.max(), 50)
        ax.loglog(tt, bound(tt), "k--", lw=1.2, label=bound_label)
    ax.set(xlabel="T (rounds)", ylabel=ylabel)
    ax.legend(fontsize="x-small", ncol=2)
    ax.grid(True, which="both", alpha=0.2)
    return ax


def save(ax, path: str | os.PathLike) -> str:
    """Save the figure holding ``ax`` to ``path`` (folders created) and close it."""
    import matplotlib.pyplot as plt

    os.makedirs(os.path.dirname(os.fspath(path)) or ".", exist_ok=True)
    fig = ax.figure
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return os.fspath(path)


# ---- forecasts of real outcomes (paper 002's experiments) -----------------------------------



def _runs(pit_values) -> np.ndarray:
    u = np.asarray(pit_values, dtype=float)
    if u.ndim == 1:
        u = u[None, :]
    if u.ndim != 2 or u.shape[1] < 1:
        raise ValueError(f"pit_values must have shape (T,) or (S, T), got {np.shape(pit_values)}")
    if not np.all(np.isfinite(u)) or np.any(u < 0) or np.any(u > 1):
        raise ValueError("pit_values must be finite and lie in [0, 1]")
    return u


def _band(values: np.ndarray, band):
    lo, hi = band
    if not 0 <= lo <= hi <= 1:
        raise ValueError(f"band must be two quantiles 0 <= lo <= hi <= 1, got {band!r}")
    return np.median(values, axis=0), np.quantile(values, lo, axis=0), np.quantile(values, hi, axis=0)


def _median_with_band(ax, x, mid, lo, hi, n_runs: int, label, color):
    """The median line, and the band around it when there is more than one run."""
    (line,) = ax.plot(x, mid, lw=1.5, label=label, color=color)
    if n_runs > 1:
        ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2, lw=0)


def quantile_reliability_curve(pit_values, levels=None, *, ax=None, label=None, band=(0.0, 1.0), color=None):
    """Observed frequency $f_q$ of $u_t \\le q$ against the level $q$; the diagonal is calibration.

    Args:
        pit_values: ``(T,)`` or ``(S, T)`` PIT values.
        levels: the levels $q$ (default 0.01, …, 0.99).
        ax: matplotlib ``Axes`` (default: a new figure).
        label: legend label.
        band: quantiles across runs bounding the shaded band (default min–max).
        color: line colour.

    Returns:
        The ``Axes``.
    """
    u = _runs(pit_values)
    q = np.asarray(QCE_LEVELS if levels is None else levels, dtype=float)
    f = (u[:, None, :] <= q[None, :, None]).mean(axis=2)  # (S, Q)
    mid, lo, hi = _band(f, band)
    ax = _axes(ax)
    ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--")
    _median_with_band(ax, q, mid, lo, hi, u.shape[0], label, color)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("quantile level q")
    ax.set_ylabel("observed frequency of y ≤ q-quantile")
    if label is not None:
        ax.legend(frameon=False, fontsize="small")
    return ax


def pit_histogram_plot(pit_values, n_bins: int = 10, *, ax=None, label=None, band=(0.0, 1.0), color=None):
    """Histogram of PIT values as densities (flat at 1 when calibrated), median over runs with a band.

    Args:
        pit_values: ``(T,)`` or ``(S, T)`` PIT values.
        n_bins: equal bins of [0, 1].
        ax, label, band, color: as in :func:`quantile_reliability_curve`.

    Returns:
        The ``Axes``.
    """
    if isinstance(n_bins, bool) or not isinstance(n_bins, int) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    u = _runs(pit_values)
    idx = np.clip((u * n_bins).astype(int), 0, n_bins - 1)
    dens = np.stack([np.bincount(r, minlength=n_bins) for r in idx]) / u.shape[1] * n_bins
    mid, lo, hi = _band(dens, band)
    x = np.repeat(np.linspace(0, 1, n_bins + 1), 2)[1:-1]
    ax = _axes(ax)
    ax.axhline(1.0, color="0.6", lw=1, ls="--")
    _median_with_band(ax, x, np.repeat(mid, 2), np.repeat(lo, 2), np.repeat(hi, 2), u.shape[0], label, color)
    ax.set_xlim(0, 1)
    ax.set_xlabel("PIT value F(y)")
    ax.set_ylabel("density")
    if label is not None:
        ax.legend(frameon=False, fontsize="small")
    return ax
