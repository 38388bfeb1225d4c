r"""Monthly sunspot numbers, January 1749 – December 1983 (2820 values), read offline.

**A substitute for the paper's data.** Section 6 of Marx et al. (2024) uses the sunspot series
of the SILSO World Data Center (Clette et al. 2014), i.e. the *revised* Version 2 (2015) series.
That file cannot be downloaded at run time here; what ships inside a registry package is the
classic R data set ``sunspots`` (Zurich then Tokyo observatories; the *older* Version 1 scale,
about 0.6× the V2 values, and ending in 1983), in the PyPI package ``pmdarima`` as
``pmdarima/datasets/data/sunspots.txt.gz``. The shape of the series (the 11-year cycle, the
skew, the near-zero minima) is the same, so results can match the paper's in kind, not in
digits. The file is read directly (``pmdarima`` is not imported).
"""

from __future__ import annotations

import gzip

import numpy as np

from .._validation import declare
from .lagged import N_LAGS, LaggedSeries, _package_dir, lag_features

__all__ = ["sunspots"]

#: Upper end of the range used to rescale the outcome: above every monthly value of the
#: Version 1 series 1749–1983 (its maximum is 253.8, in 1778).
SUNSPOTS_HIGH = 300.0


@declare(n_lags=N_LAGS)
def sunspots(n_lags: int = 24) -> LaggedSeries:
    """Monthly mean sunspot numbers 1749–1983 with ``n_lags`` lag features.

    Needs the optional extra ``data`` (``pip install 'jcalib[data]'``, which installs
    ``pmdarima``); no download at run time.

    Args:
        n_lags: past months per row (default 24, Marx et al. 2024, §6).

    Returns:
        A :class:`~jcalib.datasets.lagged.LaggedSeries` with ``series`` of length 2820,
        ``y`` of length ``2820 - n_lags``, range ``[0, 300]``.

    Raises:
        ModuleNotFoundError: when ``pmdarima`` is not installed (names the extra).

    Example:
        >>> d = sunspots()
        >>> d.series.shape, d.x.shape
        ((2820,), (2796, 24))
    """
    path = _package_dir("pmdarima", "data") / "datasets" / "data" / "sunspots.txt.gz"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing from the installed pmdarima; reinstall it: pip install 'jcalib[data]'")
    with gzip.open(path, "rt") as f:
        series = np.array([float(v) for v in f.read().split()], dtype=np.float64)
    if series.shape != (2820,):
        raise ValueError(f"{path} should hold 2820 monthly values, found {series.shape[0]}")
    y, x = lag_features(series, n_lags)
    return LaggedSeries(y=y, x=x, series=series, low=0.0, high=SUNSPOTS_HIGH, name="sunspots", unit="sunspot number")
