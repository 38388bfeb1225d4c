"""Figures people would rather look at than read: reliability diagrams and error-vs-T rates.

Functions take plain arrays, draw on a given matplotlib ``Axes`` (or a new one) and return it.
matplotlib is imported lazily, with the non-interactive Agg backend when no display is set.
"""

from __future__ import annotations

import os
from typing import Callable, Mapping, Sequence

import numpy as np

__all__ = ["reliability_diagram", "rate_plot", "save"]


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
