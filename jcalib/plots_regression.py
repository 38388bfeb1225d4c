"""Figures for forecasts of real outcomes: the quantile-calibration (reliability) curve and the
PIT histogram, each with a band over seeds (or over any set of runs).

Both take PIT values $u_t = F_t(y_t)$ (:func:`jcalib.metrics.pit`) of shape ``(T,)`` or
``(S, T)`` for ``S`` runs; with several runs they draw the median and shade the range between
the ``band`` quantiles across runs. Like :mod:`jcalib.plots`, they draw on a given matplotlib
``Axes`` (or a new one) and return it.
"""

from __future__ import annotations

import numpy as np

from .metrics.regression import QCE_LEVELS
from .plots import _axes

__all__ = ["quantile_reliability_curve", "pit_histogram_plot"]


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
    (line,) = ax.plot(q, mid, lw=1.5, label=label, color=color)
    if u.shape[0] > 1:
        ax.fill_between(q, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
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
    (line,) = ax.plot(x, np.repeat(mid, 2), lw=1.5, label=label, color=color)
    if u.shape[0] > 1:
        ax.fill_between(x, np.repeat(lo, 2), np.repeat(hi, 2), color=line.get_color(), alpha=0.2, lw=0)
    ax.set_xlim(0, 1)
    ax.set_xlabel("PIT value F(y)")
    ax.set_ylabel("density")
    if label is not None:
        ax.legend(frameon=False, fontsize="small")
    return ax
