"""Figures people would rather look at than read: reliability diagrams (binned with per-bin
intervals, smooth with a bootstrap band; top-label and class-wise for multi-class predictions)
and error-vs-T rates for binary forecasts; for forecasts of real outcomes, the quantile-calibration (reliability) curve
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

from ._validation import (
    Bool,
    Choice,
    Custom,
    Int,
    Key,
    Optional,
    Real,
    check_hyper,
    check_static_int,
    declare,
    offending,
    shown,
)
from .metrics.regression import QCE_LEVELS

__all__ = [
    "multiclass_reliability_diagram",
    "pit_histogram_plot",
    "quantile_reliability_curve",
    "rate_plot",
    "reliability_diagram",
    "save",
]


def _pyplot():
    import matplotlib

    if not os.environ.get("DISPLAY"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _axes(ax):
    if ax is not None:
        return ax
    _, ax = _pyplot().subplots(figsize=(4.5, 4))
    return ax


_KINDS = ("binned", "smooth", "both", "corp")


def _real_array(values, name: str, bound=None) -> np.ndarray:
    """``values`` as a finite float64 NumPy array; a ``ValueError`` naming ``name`` otherwise."""
    try:
        v = np.asarray(values)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of real numbers, got {shown(values)}") from None
    if v.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be an array of real numbers, got dtype {v.dtype}")
    v = v.astype(np.float64)
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} contains NaN or infinite values ({offending(v, ~np.isfinite(v))})")
    return v


_REAL = Custom(_real_array, "a finite array of real numbers (as float64 NumPy)")


def _check_axes(ax, name, bound=None):
    """A matplotlib ``Axes`` (anything with ``plot`` and a ``figure``)."""
    if not (callable(getattr(ax, "plot", None)) and hasattr(ax, "figure")):
        raise ValueError(f"{name} must be a matplotlib Axes, got {type(ax).__name__} {shown(ax)}")
    return ax


_AX = Optional(Custom(_check_axes, "a matplotlib Axes (default: a new figure)"))
_BINS = Int(1, 2**20, what="bins to draw")


def _one_shape(value, name, bound):
    """Binary labels or weights of the shape of 1-D ``probs`` (rows ``(n, C)`` take class
    labels, checked by the metrics)."""
    p = bound["probs"]
    if p.ndim == 1 and np.shape(value) != p.shape:
        raise ValueError(f"probs, labels and sample_weight must have one shape: {name} has shape "
                         f"{np.shape(value)}, probs {p.shape}")
    return value


def _labels_like_probs(labels, name, bound):
    return _one_shape(_real_array(labels, name), name, bound)


def _runs(pit_values, name: str = "pit_values", bound=None) -> np.ndarray:
    """PIT values of one run ``(T,)`` or of ``S`` runs ``(S, T)``, finite in [0, 1], as ``(S, T)``;
    a column ``(S, 1)`` of several runs of one value each is refused as a likely stray axis."""
    u = _real_array(pit_values, name)
    if u.ndim == 1:
        u = u[None, :]
    if u.ndim != 2 or u.shape[1] < 1:
        raise ValueError(f"{name} must have shape (T,) or (S, T), got {np.shape(pit_values)}")
    if u.shape[1] == 1 and u.shape[0] > 1:
        raise ValueError(f"{name} of shape {u.shape} would be {u.shape[0]} runs of one value each; "
                         "pass a 1-D array (T,) for one run, or (S, T) with the runs on the first axis")
    if np.any(u < 0) or np.any(u > 1):
        raise ValueError(f"{name} must be finite and lie in [0, 1] ({offending(u, (u < 0) | (u > 1))})")
    return u


def _band_pair(band, name, bound):
    """Two quantiles ``0 <= lo <= hi <= 1`` across runs, as Python floats."""
    try:
        lo, hi = (float(check_hyper(b, name)) for b in band)
    except TypeError:  # not a pair
        raise ValueError(f"{name} must be two quantiles 0 <= lo <= hi <= 1, got {shown(band)}") from None
    if not 0 <= lo <= hi <= 1:
        raise ValueError(f"{name} must be two quantiles 0 <= lo <= hi <= 1, got {shown(band)}")
    return lo, hi


_PIT_PLOT = dict(pit_values=Custom(_runs, "PIT values (T,) or (S, T) in [0, 1]"),
                 band=Custom(_band_pair, "two quantiles 0 <= lo <= hi <= 1"), ax=_AX)


@declare(kind=Choice(*_KINDS), interval=Choice(None, "wilson", "clopper-pearson"), key=Key(optional=True),
         n_bins=_BINS, n_resamples=Int(1, 2**20, what="bootstrap resamples"),
         level=Real(0.0, 1.0, open_lo=True, open_hi=True, static=True), density=Bool(), probs=_REAL,
         labels=Custom(_labels_like_probs, "outcomes of the shape of 1-D probs"),
         sample_weight=Optional(Custom(_one_shape, "weights of the shape of 1-D probs")), ax=_AX)
def reliability_diagram(
    probs,
    labels,
    *,
    n_bins: int = 10,
    ax=None,
    label: str | None = None,
    sample_weight=None,
    kind: str = "binned",
    interval: str | None = "wilson",
    level: float = 0.95,
    density: bool = True,
    key=None,
    n_resamples: int = 200,
    color=None,
):
    """Reliability diagram: observed frequency against forecast, binned and/or smooth.

    * ``kind="binned"``: one marker per non-empty equal-width bin at (mean forecast, observed
      frequency), its area proportional to the bin's mass, with a vertical error bar for the
      frequency's ``interval`` (``"wilson"``, ``"clopper-pearson"`` or ``None``); markers are
      not joined, so sparse bins do not draw misleading segments.
    * ``kind="smooth"``: the kernel regression at smooth ECE's bandwidth, as relplot draws it,
      with a percentile bootstrap band when a PRNG ``key`` is given
      (:func:`jcalib.stats.smooth_calibration_curve`).
    * ``kind="both"``: the smooth curve over the binned markers.
    * ``kind="corp"``: the CORP diagram (Dimitriadis, Gneiting, Jordan 2021): the PAV fit of the
      outcomes on the forecasts, with a consistency band under the null of calibration when a
      ``key`` is given (:func:`jcalib.stats.corp_curve`, as the R package reliabilitydiag
      draws it) and the Brier score's MCB, DSC and UNC in the corner
      (:func:`jcalib.stats.score_decomposition`). ``n_bins`` and ``interval`` are not used.

    With ``density=True`` the forecast distribution is shaded along the bottom (bin masses, or
    the kernel density for the smooth kinds), scaled to a fifth of the height. Multi-class
    predictions ``(n, C)`` are drawn in top-label form (confidence against "top class is the
    label"); :func:`multiclass_reliability_diagram` adds class-wise panels. The diagonal is
    perfect calibration. The arrays drawn come from :func:`jcalib.stats.calibration_curve`
    and :func:`jcalib.stats.smooth_calibration_curve`.

    Args:
        probs: forecasts of a binary event ``(n,)`` in [0, 1], or ``(n, C)`` predictions.
        labels: outcomes ``(n,)`` (0/1, or class indices).
        n_bins: number of equal-width bins on [0, 1].
        ax: a matplotlib ``Axes`` to draw on (default: a new figure).
        label: legend label.
        sample_weight: optional non-negative weights (e.g. counts of a grid summary).
        kind: ``"binned"``, ``"smooth"``, ``"both"`` or ``"corp"``.
        interval: per-bin interval of the binned markers, or ``None`` for none.
        level: level of the intervals and of the band.
        density: shade the forecast density along the bottom.
        key: PRNG key for the smooth curve's bootstrap band or the CORP consistency band, or
            ``None`` (the default): no band, and nothing is drawn at random.
        n_resamples: bootstrap resamples of the band (outcome draws under the null for CORP).
        color: colour of the markers and curve.

    Returns:
        The ``Axes``.
    """
    from .stats import calibration_curve, corp_curve, score_decomposition, smooth_calibration_curve

    p, y = probs, labels
    ax = _axes(ax)
    ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--")
    drawn = None
    if kind in ("binned", "both"):
        c = calibration_curve(p, y, n_bins=n_bins, sample_weight=sample_weight, interval=interval or "wilson", level=level)
        f, freq, mass = (np.asarray(a, dtype=float) for a in (c.forecast, c.frequency, c.weight))
        keep = mass > 0
        sizes = 300 * mass[keep] / max(mass.sum(), 1e-300)
        drawn = ax.scatter(f[keep], freq[keep], s=sizes, alpha=0.6, color=color, label=label if kind == "binned" else None, zorder=3)
        color = drawn.get_facecolor()[0][:3]
        if interval is not None:
            lo, hi = np.asarray(c.low, dtype=float)[keep], np.asarray(c.high, dtype=float)[keep]
            # float32 round-off can put a frequency of 0 or 1 a hair outside its interval
            yerr = np.maximum([freq[keep] - lo, hi - freq[keep]], 0)
            ax.errorbar(f[keep], freq[keep], yerr=yerr, fmt="none", ecolor=color, elinewidth=1, capsize=0)
        if density and kind == "binned":
            edges = np.linspace(0, 1, n_bins + 1)
            ax.bar(edges[:-1], 0.2 * mass / max(mass.max(), 1e-300), width=1 / n_bins, align="edge", color="0.8", zorder=0)
    if kind in ("smooth", "both"):
        s = smooth_calibration_curve(p, y, sample_weight=sample_weight, key=key, n_resamples=n_resamples, level=level)
        t, mu, d = np.asarray(s.t), np.asarray(s.curve), np.asarray(s.density)
        # where there are (almost) no forecasts the regression is noise over the 1e-4 floor:
        # leave those stretches undrawn
        seen = d >= 1e-3 * d.max()
        (line,) = ax.plot(t, np.where(seen, mu, np.nan), lw=1.8, color=color, label=label)
        if s.low is not None:
            ax.fill_between(t, np.asarray(s.low), np.asarray(s.high), where=seen, color=line.get_color(), alpha=0.2, lw=0)
        if density:
            ax.fill_between(t, 0, 0.2 * d / max(d.max(), 1e-300), color="0.8", lw=0, zorder=0)
    if kind == "corp":
        pc, yc = (p.max(axis=1), (p.argmax(axis=1) == y).astype(float)) if p.ndim == 2 else (p, y)  # top label
        c = corp_curve(pc, yc, sample_weight=sample_weight, key=key, n_resamples=n_resamples, level=level)
        x = np.asarray(c.forecasts, dtype=float)
        if c.band_low is not None:
            ax.fill_between(x, np.asarray(c.band_low), np.asarray(c.band_high), color="0.6", alpha=0.3, lw=0,
                            label=f"{level:.0%} consistency band")
        (line,) = ax.plot(x, np.asarray(c.recalibrated, dtype=float), lw=1.8, color=color, label=label or "CORP (PAV)")
        d = score_decomposition(pc, yc, sample_weight=sample_weight)
        ax.text(0.97, 0.03, f"BS {float(d.score):.3f}\nMCB {float(d.miscalibration):.3f}\n"
                f"DSC {float(d.discrimination):.3f}\nUNC {float(d.uncertainty):.3f}",
                ha="right", va="bottom", transform=ax.transAxes, fontsize="small", family="monospace")
        if density:
            counts, edges = np.histogram(x, bins=50, range=(0, 1))
            ax.bar(edges[:-1], 0.2 * counts / max(counts.max(), 1), width=1 / 50, align="edge", color="0.8", zorder=0)
        label = label or "CORP (PAV)"
    ax.set(xlim=(0, 1), ylim=(0, 1), aspect="equal", ylabel="observed frequency")
    ax.set_xlabel("confidence (top label)" if p.ndim == 2 else "forecast")
    if label:
        ax.legend(loc="upper left", fontsize="small")
    return ax


def _class_rows(probs, name, bound):
    v = _real_array(probs, name)
    if v.ndim != 2 or v.shape[1] < 2:
        raise ValueError(f"{name} must have shape (n, C) with C >= 2, got {v.shape}")
    return v


def _classes(classes, name, bound):
    """Class indices in ``[0, C)`` as a list of ints."""
    C = bound["probs"].shape[1]
    try:
        classes = [check_static_int(c, name) for c in classes]
    except TypeError:  # not a sequence
        raise ValueError(f"{name} must be a sequence of class indices, got {shown(classes)}") from None
    if any(not 0 <= c < C for c in classes):
        raise ValueError(f"{name} must lie in [0, {C}), got {shown(classes)}")
    return classes


def _class_names(names, name, bound):
    """One name per class, as a list of strings."""
    C = bound["probs"].shape[1]
    try:
        names = [str(c) for c in names]
    except TypeError:
        raise ValueError(f"{name} must be a sequence of {C} class names, got {shown(names)}") from None
    if len(names) < C:
        raise ValueError(f"{name} must name all {C} classes, got {len(names)}")
    return names


def _panel_axes(axes, name, bound):
    """At least one ``Axes`` per panel: the top label and each class of ``classes``."""
    k = 1 + len(bound["classes"] if bound["classes"] is not None else range(bound["probs"].shape[1]))
    try:
        axes = list(axes)
    except TypeError:
        raise ValueError(f"{name} must be a sequence of matplotlib Axes, got {shown(axes)}") from None
    if len(axes) < k:
        raise ValueError(f"need {k} axes, got {len(axes)}")
    return [_check_axes(a, f"{name}[{i}]") for i, a in enumerate(axes)]


@declare(probs=Custom(_class_rows, "predictions (n, C), C >= 2"), labels=_REAL, n_bins=_BINS,
         classes=Optional(Custom(_classes, "class indices in [0, C)")),
         class_names=Optional(Custom(_class_names, "a name for each class")),
         axes=Optional(Custom(_panel_axes, "a sequence of 1 + len(classes) Axes")))
def multiclass_reliability_diagram(
    probs,
    labels,
    *,
    n_bins: int = 10,
    classes: Sequence[int] | None = None,
    axes=None,
    class_names: Sequence[str] | None = None,
    **kwargs,
):
    """Top-label and class-wise reliability diagrams of multi-class predictions, one panel each.

    The first panel is the top-label diagram (confidence against "top class is the label"),
    then one class-wise panel per class $c$ in ``classes`` (forecast $p_{ic}$ against
    $1[y_i = c]$).

    Args:
        probs: predictions ``(n, C)``.
        labels: class indices ``(n,)``.
        n_bins: bins per panel.
        classes: the classes that get a panel (default: all).
        axes: a sequence of at least ``1 + len(classes)`` ``Axes`` (default: a new figure).
        class_names: names for the panel titles (default: the class indices).
        **kwargs: passed to :func:`reliability_diagram` (``kind``, ``interval``, ``key``…).

    Returns:
        The list of ``Axes`` drawn on.
    """
    v, y = probs, labels
    classes = list(range(v.shape[1])) if classes is None else classes
    names = [str(c) for c in range(v.shape[1])] if class_names is None else class_names
    if axes is None:
        plt = _pyplot()
        k = 1 + len(classes)
        ncols = min(k, 4)
        nrows = -(-k // ncols)
        fig, grid = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 3.2 * nrows), squeeze=False)
        axes = list(grid.ravel())
        for extra in axes[k:]:
            extra.set_visible(False)
    reliability_diagram(v, y, n_bins=n_bins, ax=axes[0], **kwargs)
    axes[0].set_title("top label", fontsize="small")
    for a, c in zip(axes[1:], classes):
        reliability_diagram(v[:, c], (y == c).astype(np.int32), n_bins=n_bins, ax=a, **kwargs)
        a.set_title(f"class {names[c]}", fontsize="small")
    return axes[: 1 + len(classes)]


def _horizons(T, name, bound):
    T = _real_array(T, name)
    if T.ndim != 1 or T.size == 0 or np.any(T <= 0):
        raise ValueError(f"{name} must be a non-empty 1-D array of positive horizons (log axes), got {shown(T)}")
    return T


def _along_T(values, what, T):
    v = _real_array(values, what)
    if v.shape != T.shape:
        raise ValueError(f"{what} must have one value per T ({T.shape[0]}), got shape {v.shape}")
    return v


def _series(series, name, bound):
    """A non-empty mapping of names to one value per ``T``, as a dict of float64 arrays."""
    if not isinstance(series, Mapping) or not series:
        raise ValueError(f"{name} must be a non-empty mapping of names to values at each T, got {shown(series)}")
    return {k: _along_T(v, f"{name}[{k!r}]", bound["T"]) for k, v in series.items()}


def _bands(bands, name, bound):
    """A mapping of series names to ``(low, high)``, each one value per ``T`` (bands of names
    not in ``series`` are not drawn, nor checked)."""
    if not isinstance(bands, Mapping):
        raise ValueError(f"{name} must be a mapping of names to (low, high), got {shown(bands)}")
    out = {}
    for k, pair in bands.items():
        if k not in bound["series"]:
            continue
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise ValueError(f"{name}[{k!r}] must be a pair (low, high), got {shown(pair)}")
        out[k] = tuple(_along_T(b, f"{name}[{k!r}]", bound["T"]) for b in pair)
    return out


def _function(fn, name, bound):
    if not callable(fn):
        raise ValueError(f"{name} must be a function of T, got {shown(fn)}")
    return fn


@declare(T=Custom(_horizons, "positive horizons (n,)"), series=Custom(_series, "name -> one value per T"),
         bands=Optional(Custom(_bands, "name -> (low, high), one value per T each")),
         bound=Optional(Custom(_function, "a function of T")), ax=_AX)
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
    ax = _axes(ax)
    for name, values in series.items():
        (line,) = ax.loglog(T, values, "o-", ms=3, label=name)
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


def _figure_axes(ax, name, bound):
    """An ``Axes`` whose figure can be saved."""
    ax = _check_axes(ax, name)
    if not callable(getattr(ax.figure, "savefig", None)):
        raise ValueError(f"{name} must be a matplotlib Axes on a figure, got {shown(ax)}")
    return ax


def _path(path, name, bound):
    """A file path: a ``str`` or ``os.PathLike``."""
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"{name} must be a str or os.PathLike file path, got {type(path).__name__} {shown(path)}")
    return path


@declare(ax=Custom(_figure_axes, "a matplotlib Axes on a figure"), path=Custom(_path, "a file path"))
def save(ax, path: str | os.PathLike) -> str:
    """Save the figure holding ``ax`` to ``path`` (folders created) and close it."""
    import matplotlib.pyplot as plt

    os.makedirs(os.path.dirname(os.fspath(path)) or ".", exist_ok=True)
    fig = ax.figure
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return os.fspath(path)


# ---- forecasts of real outcomes (the experiments of Marx et al. 2024) -----------------------


def _band(values: np.ndarray, band):
    lo, hi = band  # checked by the declaration (_band_pair)
    return np.median(values, axis=0), np.quantile(values, lo, axis=0), np.quantile(values, hi, axis=0)


def _median_with_band(ax, x, mid, lo, hi, n_runs: int, label, color):
    """The median line, and the band around it when there is more than one run."""
    (line,) = ax.plot(x, mid, lw=1.5, label=label, color=color)
    if n_runs > 1:
        ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2, lw=0)


def _levels(levels, name, bound):
    q = _real_array(levels, name)
    if q.ndim != 1 or q.size == 0 or np.any(q < 0) or np.any(q > 1):
        raise ValueError(f"{name} must be a non-empty 1-D array of levels in [0, 1], got {shown(levels)}")
    return q


@declare(**_PIT_PLOT, levels=Optional(Custom(_levels, "levels in [0, 1] (n,)")))
def quantile_reliability_curve(pit_values, *, levels=None, ax=None, label=None, band=(0.0, 1.0), color=None):
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
    u = pit_values
    q = np.asarray(QCE_LEVELS, dtype=float) if levels is None else levels
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


@declare(n_bins=_BINS, **_PIT_PLOT)
def pit_histogram_plot(pit_values, *, n_bins: int = 10, ax=None, label=None, band=(0.0, 1.0), color=None):
    """Histogram of PIT values as densities (flat at 1 when calibrated), median over runs with a band.

    Args:
        pit_values: ``(T,)`` or ``(S, T)`` PIT values.
        n_bins: equal bins of [0, 1].
        ax, label, band, color: as in :func:`quantile_reliability_curve`.

    Returns:
        The ``Axes``.
    """
    u = pit_values
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
