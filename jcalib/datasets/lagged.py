r"""A univariate series as a supervised stream: each outcome with the values just before it.

``lag_features(series, n_lags)`` returns, for $t = n_\text{lags}, \dots, n-1$, the outcome
$y_t$ = ``series[t]`` and the features $x_t = (y_{t-1}, y_{t-2}, \dots, y_{t-n_\text{lags}})$
(most recent first). Row $i$ of the result is round $t = i + n_\text{lags}$: the features of a
row only ever hold values strictly before its outcome (no look-ahead).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .._validation import Custom, Int, declare, shown

__all__ = ["LaggedSeries", "lag_features"]


class LaggedSeries(NamedTuple):
    """A series and its lag features (NumPy, float64).

    Attributes:
        y: outcomes $y_t$, shape ``(n - n_lags,)``.
        x: lag features, shape ``(n - n_lags, n_lags)``; ``x[i, k]`` = ``series[i + n_lags - 1 - k]``
            (lag ``k + 1``).
        series: the whole series, shape ``(n,)``.
        low, high: a known range of the outcome (physical or historical bounds), used to
            rescale outcomes to [0, 1] for forecasts on equal bins.
        name: a short name.
        unit: the outcome's unit.
    """

    y: np.ndarray
    x: np.ndarray
    series: np.ndarray
    low: float
    high: float
    name: str
    unit: str


def _series(series, name, bound):
    """A finite 1-D series of real numbers, longer than ``n_lags``, as float64 NumPy."""
    try:
        s = np.asarray(series)
        if s.dtype.kind not in "biuf":
            raise TypeError(s.dtype)
        s = s.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 1-D array of real numbers, got {shown(series)}") from None
    if s.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"{name} contains NaN or infinite values")
    n_lags = bound["n_lags"]
    if s.shape[0] <= n_lags:
        raise ValueError(f"{name} of length {s.shape[0]} is too short for {n_lags} lags (need more than n_lags values)")
    return s


#: The declared ``n_lags`` of the lagged series: a positive int (a static shape).
N_LAGS = Int(1, what="its lag features")


@declare(n_lags=N_LAGS, series=Custom(_series, "a finite 1-D real series longer than n_lags"))
def lag_features(series, n_lags: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """Outcomes and lag features of a 1-D series.

    Args:
        series: a finite 1-D sequence of length ``n > n_lags``.
        n_lags: the number of past values per row (a positive int).

    Returns:
        ``(y, x)``: ``y`` of shape ``(n - n_lags,)`` and ``x`` of shape ``(n - n_lags, n_lags)``
        with ``x[i, k] = series[i + n_lags - 1 - k]``.

    Example:
        >>> y, x = lag_features([1.0, 2.0, 3.0, 4.0], 2)
        >>> y.tolist(), x.tolist()
        ([3.0, 4.0], [[2.0, 1.0], [3.0, 2.0]])
    """
    s, n = series, series.shape[0]
    idx = np.arange(n_lags, n)[:, None] - 1 - np.arange(n_lags)[None, :]
    return s[n_lags:].copy(), s[idx]


def _lagged_data(data, name, bound):
    """A :class:`LaggedSeries` (or any object with its fields ``y``, ``x``, ``series``, ``low``,
    ``high``) whose range is non-empty, ``low < high``."""
    missing = [f for f in ("y", "x", "series", "low", "high") if not hasattr(data, f)]
    if missing:
        raise TypeError(f"{name} must be a LaggedSeries (e.g. sunspots()), got {type(data).__name__} {shown(data)}")
    try:
        ordered = bool(data.high > data.low)
    except (TypeError, ValueError):
        ordered = False
    if not ordered:
        raise ValueError(f"need {name}.low < {name}.high, got {shown(data.low)}, {shown(data.high)}")
    return data


def _package_dir(package: str, extra: str) -> Path:
    """The install folder of ``package`` without importing it (importing pmdarima is slow)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"this data set ships inside the package {package!r}, which is not installed; "
            f"install the optional extra: pip install 'jcalib[{extra}]'"
        )
    return Path(list(spec.submodule_search_locations)[0])
